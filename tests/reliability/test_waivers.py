"""Learned waivers on the production run path (reliability.waivers): a code clinicians
overruled on a source, and never upheld, stops escalating there while the source is certified;
a safety code never does."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.faults import clean_output
from engine import pipeline
from engine.document import DocumentContext, HiddenText
from engine.exemplars import CellTrust
from engine.schemas import Decision, DocType, Evidence
from reliability import learning, waivers
from reliability.models import Issue, Run
from reliability.services import attempts_save
from review.corrections import correction_build
from review.services import decisions
from review.services.decisions import packet_create
from tests.conftest import ready_document
from tests.review.conftest import PAGES

pytestmark = pytest.mark.django_db

PAGE = [PAGES[0]]  # a pathology report the checks pass, but for the confidence asked below


def outcome_of(*, hidden: bool = False, fabricated: bool = False) -> pipeline.Outcome:
    """The real chain on a pathology report asked for 0.99 confidence: escalated for
    ``low_confidence`` (MAJOR, learnable), plus ``hidden_text`` (MAJOR, a safety code) or
    ``fabricated_evidence`` (BLOCKER, a safety code) when asked."""
    output = clean_output(PAGE, "pathology")
    assert output is not None
    if fabricated:
        assessment = output.segments[0].assessment("pathology")
        assert assessment is not None
        assessment.top_evidence.append(Evidence(snippet="Melanoma in nine nodes", page=1))
    return pipeline.orchestrate(
        classify=lambda feedback: (output, 0),
        context=DocumentContext(
            pages=PAGE,
            min_dominant_confidence=0.99,
            hidden=[HiddenText(page=1, kind="white_text", words=12)] if hidden else [],
        ),
        preset=pipeline.PRESETS["clinical"],
        can_reask=False,
    )


def escalated(source: str, key: str, **kwargs: Any) -> Any:
    """An escalated run of ``source`` with its attempts and issues recorded, and its packet."""
    outcome = outcome_of(**kwargs)
    assert outcome.decision == Decision.ESCALATE_TO_SME
    run = Run.objects.create(
        document=ready_document(*PAGE, sha=key),
        preset="clinical",
        classifier="offline",
        model="test",
        prompt_version="test",
        status=Run.Status.COMPLETED,
        final_decision=Decision.ESCALATE_TO_SME.value,
        attempts_count=len(outcome.attempts),
        best_attempt_number=outcome.best.number,
        learning={"source": source},
    )
    attempts_save(run, outcome)
    return packet_create(run=run, outcome=outcome, comparison={"available": False})


def decide(packet: Any, reviewer: Any, *, to: DocType | None = None) -> None:
    decisions.packet_open(packet=packet, user=reviewer)
    correction = correction_build(segments=[(1, packet.document.page_count, to)]) if to else None
    decisions.review_submit(packet_id=packet.pk, reviewer=reviewer, correction=correction, notes="")


def test_a_code_overruled_on_a_source_is_waived_there_never_a_safety_code_nor_an_upheld_one(
    settings, reviewer
):
    settings.LEARNING_WAIVER_AFTER = 3
    settings.AUDIT_SAMPLE_RATE = 0.0
    settings.SECOND_REVIEW_ON_CORRECTION = False
    for i in range(2):
        decide(escalated("lab-a", str(1 + i), hidden=True), reviewer)  # validated: overruled
    assert waivers.learned_waivers() == {}  # two overrulings are not enough
    decide(escalated("lab-a", "3", hidden=True), reviewer)
    counts = waivers.overrule_counts()
    assert counts[("lab-a", "low_confidence")] == (3, 0)
    assert counts[("lab-a", "hidden_text")] == (3, 0)
    # Overruled as often, but a safety code: only the confidence check is waived.
    assert waivers.learned_waivers() == {"lab-a": frozenset({"low_confidence"})}
    # Another source: overruled three times and upheld once (a clinician corrected the type).
    for i in range(3):
        decide(escalated("lab-b", str(4 + i)), reviewer)
    decide(escalated("lab-b", "7"), reviewer, to=DocType.CLINICAL_NOTE)
    assert waivers.overrule_counts()[("lab-b", "low_confidence")] == (3, 1)
    assert "lab-b" not in waivers.learned_waivers()


def trusted(monkeypatch: Any, source: str, learned: frozenset[str]) -> None:
    """``source`` has learned ``learned`` and its memory is trusted (certified)."""
    monkeypatch.setattr(waivers, "learned_waivers", lambda: {source: learned})
    record = CellTrust(confirmed=10, since_contradiction=10)
    monkeypatch.setattr(learning, "run_memory", lambda: (None, {source: record}))


def test_a_waived_code_is_accepted_on_a_certified_source_and_a_safety_code_never_is(
    settings, monkeypatch
):
    settings.LEARNING_MEMORY_CELL_MIN = 10
    everything = frozenset({"low_confidence", "hidden_text", "fabricated_evidence"})
    trusted(monkeypatch, "lab-a", everything)
    plain = outcome_of()
    assert waivers.run_waived(outcome=plain, source="lab-a", certified=True) == ["low_confidence"]
    # Not while the thresholds are not the loop's certified ones, nor on another source.
    assert waivers.run_waived(outcome=plain, source="lab-a", certified=False) == []
    assert waivers.run_waived(outcome=plain, source="lab-b", certified=True) == []
    # Safety codes escalate whatever was learned: hidden text (MAJOR), fabricated evidence.
    for kind in ({"hidden": True}, {"fabricated": True}):
        assert waivers.run_waived(outcome=outcome_of(**kind), source="lab-a", certified=True) == []
    # What a learning attempt calibrates with: the waivers of trusted sources.
    assert waivers.waivers_in_force() == {"lab-a": everything}
    # A source whose memory lost its trust (a contradiction) keeps escalating.
    settings.LEARNING_MEMORY_CELL_MIN = 11
    assert waivers.run_waived(outcome=plain, source="lab-a", certified=True) == []
    assert waivers.waivers_in_force() == {}
    # Switched off: nothing is waived.
    settings.LEARNING_MEMORY_CELL_MIN = 10
    settings.LEARNING_WAIVERS = False
    assert waivers.run_waived(outcome=plain, source="lab-a", certified=True) == []


def test_the_run_path_accepts_on_a_learned_waiver_and_keeps_escalating_hidden_text(
    settings, monkeypatch, django_user_model
):
    """Through the run job, with certified thresholds that pass every score and a trusted
    source that learned both codes: a one-line pathology diagnosis, escalated for
    ``report_without_structure`` alone, is accepted and says why; a page with hidden text
    still escalates for ``hidden_text`` (a safety code), learned or not."""
    from documents.models import Page
    from engine.risk import ALL, RiskThreshold, ThresholdTable
    from reliability import services
    from review.models import GroundTruth

    table = ThresholdTable(
        {
            (t.value, ALL): RiskThreshold(
                t.value, ALL, "crc", 0.0, 0.005, 0.1, 200, 200, 200, 0, 0.0, 1.0
            )
            for t in DocType
        }
    )
    monkeypatch.setattr(
        learning, "run_checks", lambda primary: learning.RunChecks(table, None, None)
    )
    lab = django_user_model.objects.create_user(username="lab-a")
    source = "uploader:lab-a"  # a document's source is its uploader (learning.document_source)

    def run_of(document: Any) -> Run:
        run = services.run_start(document=document)
        services.run_execute(run_id=run.pk)  # the job (queued on commit; this test has none)
        run.refresh_from_db()
        return run

    def one_line(sha: str) -> Any:
        return ready_document(
            "Left breast, core biopsy: invasive ductal carcinoma, Nottingham grade 2.",
            sha=sha,
            uploaded_by=lab,
        )

    trusted(monkeypatch, source, frozenset({"hidden_text"}))
    before = run_of(one_line("7"))  # not learned on this source: escalated
    assert before.final_decision == Decision.ESCALATE_TO_SME.value
    assert set(Issue.objects.filter(attempt__run=before).values_list("code", flat=True)) == {
        "report_without_structure"
    }

    trusted(monkeypatch, source, frozenset({"hidden_text", "report_without_structure"}))
    waived = run_of(one_line("8"))
    assert waived.final_decision == Decision.AUTO_ACCEPT.value
    assert waived.learning["waived"] == ["report_without_structure"]
    assert "learned waiver of report_without_structure" in waived.stopped_reason
    truth = GroundTruth.objects.get(document=waived.document)
    assert truth.source == GroundTruth.Source.AUTO_ACCEPTED

    hidden = ready_document(*PAGE, sha="9", uploaded_by=lab)
    Page.objects.filter(document=hidden).update(hidden=[{"kind": "background", "words": 12}])
    run = run_of(hidden)
    assert "hidden_text" in set(
        Issue.objects.filter(attempt__run=run).values_list("code", flat=True)
    )
    assert run.final_decision == Decision.ESCALATE_TO_SME.value
    assert run.learning["waived"] == []
