from __future__ import annotations

from benchmarks.faults import clean_output
from engine import pipeline
from engine.document import DocumentContext
from reliability.models import Run
from review.models import ReviewPacket
from review.services import packet_create
from tests.conftest import ready_document

PAGES = [
    "SURGICAL PATHOLOGY REPORT\n\nHistory: breast mass.\n\nFINAL DIAGNOSIS\n\n"
    "Left breast, core biopsy: invasive ductal carcinoma, Nottingham grade 2.\n\n"
    "Comment: margins cannot be assessed on a core.\n\nER positive (95%).\n\nHER2 negative.",
    "TEST REQUISITION\n\nGROSS DESCRIPTION\n\nThree cores of tan tissue, 1.2 to 1.6 cm, "
    "submitted entirely in one cassette.",
]


def make_packet(
    *,
    sha: str = "d",
    fabricate: bool = True,
    label: str = "pathology",
    pages: list[str] | None = None,
) -> ReviewPacket:
    """An escalated packet from the real verification chain: a requisition keyword on a
    pathology PRIMARY segment (BLOCKER) and, optionally, a fabricated snippet (BLOCKER)."""
    pages = pages or PAGES
    document = ready_document(*pages, sha=sha)
    output = clean_output(pages, label)
    assert output is not None
    if fabricate:
        from engine.schemas import Evidence

        assessment = output.segments[0].assessment(label)
        assert assessment is not None
        assessment.top_evidence.append(
            Evidence(snippet="Metastatic melanoma in four of nine lymph nodes", page=2)
        )
    context = DocumentContext(pages=pages, min_dominant_confidence=0.6)
    outcome = pipeline.orchestrate(
        classify=lambda f: (output, 0),
        context=context,
        preset=pipeline.PRESETS["clinical"],
        can_reask=False,
    )
    run = Run.objects.create(
        document=document,
        preset="clinical",
        classifier="offline",
        model="test",
        prompt_version="test",
        status=Run.Status.COMPLETED,
        final_decision="ESCALATE_TO_SME",
        attempts_count=len(outcome.attempts),
    )
    return packet_create(
        run=run,
        outcome=outcome,
        comparison={"available": False, "reason": "The offline classifier is the primary."},
    )
