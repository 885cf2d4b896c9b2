from __future__ import annotations

import re
from typing import Any

import pytest

from benchmarks.faults import clean_output
from engine import pipeline
from engine.document import DocumentContext
from reliability.models import Run
from review.models import ReviewPacket
from review.services.decisions import packet_create
from tests.conftest import ready_document, text_pdf_once

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
    return escalate(document, pages, output)


def escalate(document, pages, output, *, extract: bool = False) -> ReviewPacket:
    """Verify ``output`` with the real chain and hand it to review as an escalated run's
    packet (optionally with the run's fields extracted)."""
    from reliability.fields import fields_record

    outcome = pipeline.orchestrate(
        classify=lambda f: (output, 0),
        context=DocumentContext(pages=pages, min_dominant_confidence=0.6),
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
    if extract:
        fields_record(run=run, output=outcome.best.output)
    return packet_create(
        run=run,
        outcome=outcome,
        comparison={"available": False, "reason": "The offline classifier is the primary."},
    )


def pdf_packet(
    pages: list[list[str]],
    *,
    label: str,
    name: str = "bundle.pdf",
    extract: bool = True,
    data: bytes | None = None,
) -> ReviewPacket:
    """A packet for a real PDF (``pages`` written as text, or ``data``), ingested as an upload
    is (word boxes, OCR where there is no text layer), classified as one ``label`` segment over
    every page (so a bundle's second document is missed), with the run's fields extracted."""
    import hashlib

    from django.core.files.base import ContentFile

    from documents.models import Document
    from documents.services import document_ingest

    data = data or text_pdf_once(pages)
    document = Document(
        original_filename=name,
        sha256=hashlib.sha256(data).hexdigest(),
        mime_type=Document.MIME_PDF,
        size_bytes=len(data),
        page_count=len(pages) or 1,
        status=Document.Status.INGESTING,
    )
    document.file.save("upload", ContentFile(data), save=False)
    document.save()
    document_ingest(document=document)
    texts = list(document.pages.order_by("number").values_list("text", flat=True))
    output = clean_output(texts, label)
    assert output is not None
    return escalate(document, texts, output, extract=extract)


PATHOLOGY_REPORT = [
    [
        "SURGICAL PATHOLOGY REPORT",
        "Specimen: Left breast, core needle biopsy.",
        "FINAL DIAGNOSIS",
        "Invasive ductal carcinoma, Nottingham grade 2.",
    ],
    ["MICROSCOPIC DESCRIPTION", "Nests of malignant epithelial cells in a desmoplastic stroma."],
    ["IMMUNOHISTOCHEMISTRY", "Estrogen receptor: positive, 90%.", "HER2 (IHC): 1+, negative."],
]
GENOMIC_REPORT = [
    [
        "COMPREHENSIVE GENOMIC PROFILING REPORT",
        "Microsatellite status: MSS (microsatellite stable).",
        "Tumor mutational burden: 4 mutations/Mb.",
    ],
    ["GENOMIC ALTERATIONS", "PIK3CA H1047R, variant allele frequency 27%: pathogenic."],
    ["VARIANTS OF UNKNOWN SIGNIFICANCE", "ATM S1691R, VAF 48%."],
    ["METHODS", "Hybrid capture sequencing to a median depth of 650x."],
]
RADIOLOGY_REPORT = [
    [
        "CT CHEST WITH CONTRAST",
        "FINDINGS",
        "Lungs: A 4 mm solid nodule in the right upper lobe. No consolidation or effusion.",
        "IMPRESSION",
        "No evidence of thoracic metastatic disease.",
    ]
]


@pytest.fixture
def page_panel(monkeypatch: Any) -> None:
    """A test client's posts to a packet's validate or correct carry what the packet page's
    form carries (review.panel): the token of a page painted for this user now, and, for a
    validation posted without rows, the panel's rows showing the machine's answer. Tests of
    the refusals post without this fixture."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from review.corrections import segmentation_of
    from review.panel import panel_token

    original = Client.post

    def post(self: Any, path: str, data: Any = None, *args: Any, **kwargs: Any) -> Any:
        found = re.fullmatch(r"/review/packets/(\d+)/(validate|correct)/", path)
        user_id = self.session.get("_auth_user_id")
        if found and user_id and (data is None or isinstance(data, dict)):
            packet = ReviewPacket.objects.filter(pk=found[1]).first()
            data = dict(data or {})
            if packet is not None and "panel_token" not in data:
                user = get_user_model().objects.get(pk=user_id)
                data["panel_token"] = panel_token(packet=packet, user=user)
                if found[2] == "validate" and "start" not in data:
                    machine = segmentation_of(packet.classification)
                    data["start"] = [str(a) for a, _, _ in machine]
                    data["type"] = [t.value for _, _, t in machine]
        return original(self, path, data, *args, **kwargs)

    monkeypatch.setattr(Client, "post", post)
