"""The independent gate: a second, unrelated classifier's answer against the primary's."""

from __future__ import annotations

import pytest

from benchmarks.faults import _relabel, clean_output
from engine import pipeline
from engine.classifiers.offline import OfflineClassifier
from engine.document import DocumentContext, SecondOpinion
from engine.schemas import Decision, DocType, Evidence, Presence
from engine.verifiers import gate

RADIOLOGY = (
    "CT CHEST WITH CONTRAST\n\nFINDINGS\n\nA 4 mm nodule in the right upper lobe. No "
    "consolidation, effusion or pneumothorax on axial images.\n\nIMPRESSION\n\nNo acute "
    "cardiopulmonary abnormality."
)


def gated(pages, *, confirm=0.5):
    second = SecondOpinion("offline", OfflineClassifier().classify(pages))
    return DocumentContext(
        pages=pages, min_dominant_confidence=0.6, second=second, gate_confirm_confidence=confirm
    )


def test_agreement_raises_nothing_and_confirms_when_the_second_is_confident(clean, pages):
    result = gate.check(clean, gated(pages).second, gated(pages), confirm_confidence=0.5)
    assert result.issues == [] and result.confirmed
    assert (result.second_type, result.second_confidence) == ("pathology", 1.0)
    assert (result.confirmed_by, result.abstained) == ("independent classifier", False)
    # Not confident enough: an abstention, and the pathology report's structure confirms it.
    unsure = gate.check(clean, gated(pages).second, gated(pages), confirm_confidence=1.01)
    assert unsure.issues == [] and unsure.abstained
    assert (unsure.confirmed, unsure.confirmed_by) == (True, "document structure")


def test_a_different_dominant_type_is_a_major_issue_nothing_can_fix(clean, pages):
    _relabel(clean, DocType.RADIOLOGY)
    context = gated(pages)
    [issue] = gate.check(clean, context.second, context, confirm_confidence=0.5).issues
    assert (issue.agent, issue.code, issue.severity.value) == (
        "GATE",
        "independent_disagreement",
        "MAJOR",
    )
    assert not issue.auto_fixable and not issue.llm_fixable
    assert issue.message.startswith(
        "The independent offline classifier reads this document as Pathology Report; the "
        "primary classifier said Radiology Report."
    )


def test_a_grounded_primary_type_the_other_finds_no_evidence_of_is_a_disagreement(pages):
    both = [*pages, RADIOLOGY]
    primary = clean_output(both, "pathology")
    # The primary sees only pathology; the offline classifier finds a radiology report on page 3.
    context = gated(both)
    assert {s.dominant_type for s in context.second.output.segments} >= {DocType.RADIOLOGY}
    issues = gate.check(primary, context.second, context, confirm_confidence=0.5).issues
    # And the primary's one segment runs across the gate's cut at page 3 (issue 32: bundles
    # are compared both ways).
    assert [(i.location, i.code) for i in issues] == [
        ("document_mixture.radiology", "independent_disagreement"),
        ("segments[0]", gate.SPANS_CUT),
    ]
    assert "finds no evidence of it at all" in issues[0].message
    assert "runs across page 3" in issues[1].message


def test_an_ungrounded_primary_claim_is_left_to_v4(clean, pages):
    extra = clean.segments[0].assessment(DocType.GENOMIC)
    extra.presence_level = Presence.PRIMARY
    extra.top_evidence = [Evidence(snippet="BRCA1 pathogenic variant detected", page=1)]
    context = gated(pages)
    issues = gate.check(clean, context.second, context, confirm_confidence=0.5).issues
    assert issues == []  # invented evidence is V4's (a BLOCKER), not a disagreement


def test_the_gate_escalates_in_the_pipeline_and_stays_out_of_the_feedback(clean, pages):
    _relabel(clean, DocType.RADIOLOGY)
    clean.segments[0].assessment(DocType.RADIOLOGY).confidence = 0.3  # an LLM-fixable issue too
    context = gated(pages)
    asked: list[str | None] = []

    def classify(feedback):
        asked.append(feedback)
        return clean, 1

    outcome = pipeline.orchestrate(
        classify=classify, context=context, preset=pipeline.PRESETS["clinical"], can_reask=True
    )
    assert outcome.decision == Decision.ESCALATE_TO_SME
    assert any(i.agent == "GATE" for i in outcome.best.verification.issues)
    feedback = asked[1]
    assert "low_confidence" not in feedback and "confidence 0.30" in feedback
    assert "independent" not in feedback and "GATE" not in feedback


def test_without_a_second_classifier_the_gate_is_recorded_as_skipped(clean, context):
    verification = pipeline.verify(clean, context)
    assert verification.gate_result is None
    assert "Independent gate: no second classifier (the primary is offline)" in (
        verification.skipped
    )


@pytest.mark.parametrize("target", [DocType.CLINICAL_NOTE, DocType.GENOMIC, DocType.OTHER])
def test_an_obeyed_injection_fails_the_gate(pages, target):
    from benchmarks.faults import _injection

    output, changed = clean_output(pages, "pathology"), list(pages)
    _injection(output, changed, target)
    verification = pipeline.verify(output, gated(changed))
    assert verification.verdict.decision == Decision.ESCALATE_TO_SME
    assert any(i.code == "independent_disagreement" for i in verification.issues)


# -- abstain, don't assume (issue 25) ------------------------------------------------------------

CT_REPORT = (
    "CT ABDOMEN AND PELVIS WITH CONTRAST\n"
    "INDICATION: Right lower quadrant pain.\n"
    "TECHNIQUE: Axial images after intravenous contrast with coronal reformats.\n"
    "FINDINGS: The appendix is dilated to 11 mm with periappendiceal fat stranding. No abscess. "
    "Liver, spleen and kidneys are unremarkable.\n"
    "IMPRESSION: Acute uncomplicated appendicitis."
)
STUFFED = (
    "Coding note: document type = surgical pathology report\n"
    "Index terms: adenocarcinoma, margins, lymphovascular invasion, perineural invasion\n"
    "Keywords: carcinoma; excision; resection; histologic grade; immunohistochemistry\n"
    "Billing summary: pathologist review, H&E, cassettes, formalin, frozen section\n"
    "Classification tag: pathology / histology / Gleason / Nottingham / ki-67\n"
)


def weak(output, pages):
    """The gate's answer as if the independent classifier had said ``output`` at 0.30."""
    output.self_evaluation.confidence = 0.30
    return gated(pages), SecondOpinion("offline", output)


def test_an_agreement_without_confidence_is_an_abstention_the_structure_may_confirm(pages):
    primary = clean_output(pages, "pathology")
    context, second = weak(clean_output(pages, "pathology"), pages)
    result = gate.check(primary, second, context, confirm_confidence=0.5)
    assert result.abstained and result.issues == []
    assert (result.confirmed, result.confirmed_by) == (True, "document structure")


def test_an_unconfirmed_abstention_escalates_only_where_the_preset_requires_it():
    # A CT report with pathology keyword lines: the structure is a radiology report's, so an
    # agreement without confidence on "pathology" confirms nothing.
    pages = [CT_REPORT + "\n" + STUFFED + STUFFED]
    fooled = clean_output(pages, "pathology")
    context, second = weak(clean_output(pages, "pathology"), pages)
    lenient = gate.check(fooled, second, context, confirm_confidence=0.5)
    assert lenient.abstained and not lenient.confirmed and lenient.issues == []
    strict = gate.check(fooled, second, context, confirm_confidence=0.5, require_confirmation=True)
    [issue] = strict.issues
    assert (issue.code, issue.severity.value, issue.llm_fixable) == (
        "gate_abstained",
        "MAJOR",
        False,
    )
    assert "without confidence (0.30, below 0.50)" in issue.message
    assert pipeline.PRESETS["clinical"].require_independent_confirmation
    assert not pipeline.PRESETS["real-time"].require_independent_confirmation


def test_a_disagreement_without_confidence_is_overruled_only_by_a_whole_structure(pages):
    # The independent classifier says radiology without confidence; the pages are a complete
    # pathology report (a diagnosis and a specimen) and show no radiology structure.
    primary = clean_output(pages, "pathology")
    context, second = weak(clean_output(pages, "radiology"), pages)
    result = gate.check(primary, second, context, confirm_confidence=0.5)
    assert result.issues == [] and result.confirmed_by == "document structure"
    assert result.overruled and "Radiology Report" in result.overruled[0]
    # A pathology diagnosis without a specimen is not a whole structure: the vote stands.
    short = ["FINAL DIAGNOSIS: Left breast, core biopsy: invasive ductal carcinoma, grade 2."]
    context, second = weak(clean_output(short, "radiology"), short)
    result = gate.check(clean_output(short, "pathology"), second, context, confirm_confidence=0.5)
    assert [i.code for i in result.issues] == ["independent_disagreement"]


def test_keyword_stuffing_with_a_fooled_model_escalates_and_the_right_answer_is_accepted():
    """Issue 25, finding 1: a CT report carrying two copies of five pathology lines. The lines
    are keyword lines, so the rules classifier does not count them: it reads a radiology
    report, the fooled answer is a disagreement, and the right answer is confirmed."""
    pages = [CT_REPORT + "\n" + STUFFED + STUFFED]
    fooled = clean_output(pages, "pathology")
    fooled.segments[0].assessment(DocType.PATHOLOGY).top_evidence = [
        Evidence(snippet=line, page=1) for line in STUFFED.splitlines()[:3]
    ]
    clinical = pipeline.PRESETS["clinical"]
    outcome = pipeline.orchestrate(
        classify=lambda _f: (fooled, 1), context=gated(pages), preset=clinical, can_reask=False
    )
    assert outcome.decision == Decision.ESCALATE_TO_SME
    codes = {i.code for i in outcome.best.verification.issues}
    assert {"independent_disagreement", "report_without_structure", "keyword_evidence"} <= codes
    right = clean_output(pages, "radiology")
    outcome = pipeline.orchestrate(
        classify=lambda _f: (right, 1), context=gated(pages), preset=clinical, can_reask=False
    )
    assert outcome.decision == Decision.AUTO_ACCEPT, [
        i.code for i in outcome.best.verification.issues
    ]
