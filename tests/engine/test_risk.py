"""Risk-controlled acceptance (engine.risk) on synthetic scores with a known error rate, and the
check the arbiter escalates on (engine.acceptance)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from engine import pipeline
from engine.classifiers.offline import OfflineClassifier
from engine.document import DocumentContext
from engine.novelty import Novelty
from engine.risk import (
    ALL,
    THRESHOLDS,
    Calibration,
    RiskThreshold,
    ThresholdTable,
    certify_all,
    clopper_pearson_upper,
    conformal_threshold,
    documents_to_certify,
    ltt_threshold,
    minimum_documents,
    zero_error_documents,
    zero_error_worst,
)
from engine.schemas import Decision

ALPHA = 0.005
DELTA = 0.1
# Scores as a classifier gives them, most near 1 (density 4 s^3 on [0, 1]); a document with
# score s is wrong with probability C (1 - s)^2.
C = 0.12
GRID = np.linspace(0.0, 1.0, 20_001)


def _integral(values: np.ndarray, lower: float) -> float:
    mask = lower <= GRID
    return float(np.trapezoid(values[mask], GRID[mask]))


def true_conditional_risk(threshold: float) -> float:
    """E[wrong | score >= t], computed from the known distribution."""
    density = 4 * GRID**3
    return _integral(density * C * (1 - GRID) ** 2, threshold) / _integral(density, threshold)


def true_joint_risk(threshold: float) -> float:
    """P(score >= t and wrong)."""
    return _integral(4 * GRID**3 * C * (1 - GRID) ** 2, threshold)


def synthetic(n: int, seed: int) -> list[Calibration]:
    rng = np.random.default_rng(seed)
    scores = rng.uniform(0, 1, n) ** 0.25
    wrong = rng.uniform(0, 1, n) < C * (1 - scores) ** 2
    return [
        Calibration("radiology", "a", float(s), True, not bool(w))
        for s, w in zip(scores, wrong, strict=True)
    ]


def test_learn_then_test_holds_its_bound_over_many_seeds():
    """P(the accepted-error rate at the chosen threshold > alpha) <= delta, over 200 draws of
    calibration data whose error rate is known, and it is not vacuous (it accepts)."""
    seeds = 200
    violations, chosen = 0, []
    for seed in range(seeds):
        result = ltt_threshold(synthetic(8000, seed), alpha=ALPHA, delta=DELTA)
        if result.threshold is None:  # nothing accepted: safe, if useless
            continue
        chosen.append(result.threshold)
        violations += true_conditional_risk(result.threshold) > ALPHA
        assert result.bound <= ALPHA + 1e-12  # the Clopper-Pearson bound certifies it
    # delta plus three standard errors of a 200-draw estimate
    assert violations / seeds <= DELTA + 3 * math.sqrt(DELTA * (1 - DELTA) / seeds)
    assert len(chosen) > 0.9 * seeds  # not vacuous: nearly every draw accepts something
    assert np.median(chosen) <= 0.8  # and far below the strictest threshold


def test_conformal_risk_control_keeps_the_expected_share_accepted_wrongly():
    seeds = 300
    risks = []
    for seed in range(seeds):
        result = conformal_threshold(synthetic(1000, seed), alpha=ALPHA)
        assert result.threshold is not None
        risks.append(true_joint_risk(result.threshold))
    assert np.mean(risks) <= ALPHA


def test_with_too_little_data_nothing_is_accepted():
    perfect = [Calibration("pathology", "a", 0.99, True, True) for _ in range(300)]
    result = ltt_threshold(perfect, alpha=ALPHA, delta=DELTA)
    assert result.threshold is None
    assert "not enough labelled documents" in result.reason
    assert minimum_documents(ALPHA, DELTA) == 460
    # Enough of them, all right: certified, with a bound at most alpha.
    enough = [Calibration("pathology", "a", 0.99, True, True) for _ in range(460)]
    certified = ltt_threshold(enough, alpha=ALPHA, delta=DELTA)
    assert certified.threshold is not None and certified.bound <= ALPHA
    assert clopper_pearson_upper(0, 460, DELTA) <= ALPHA < clopper_pearson_upper(0, 459, DELTA)
    assert conformal_threshold(perfect[:150], alpha=ALPHA).threshold is None


def test_a_type_is_certified_on_its_own_once_it_has_enough_data():
    records = [Calibration("radiology", "a", 0.99, True, True) for _ in range(500)]
    records += [Calibration("pathology", "b", 0.99, True, True) for _ in range(40)]
    table = certify_all(records, method="ltt", alpha=ALPHA, delta=DELTA)
    assert table.lookup("radiology", "a").doc_type == "radiology"  # its own certificate
    assert table.lookup("radiology", "a").source == "a"  # 500 from one source: its own too
    assert table.lookup("pathology", "b").doc_type == ALL  # too few: the pooled one
    assert table.threshold("pathology", "b") is not None
    # A type whose own data shows errors keeps its own answer, even when the pool would accept.
    bad = records + [Calibration("other", "c", 0.99, True, i % 20 != 0) for i in range(600)]
    table = certify_all(bad, method="ltt", alpha=ALPHA, delta=DELTA)
    assert table.threshold("other") is None and table.lookup("other").doc_type == "other"


def _threshold(doc_type: str, threshold: float | None) -> ThresholdTable:
    entry = RiskThreshold(
        doc_type, ALL, "ltt", threshold, ALPHA, DELTA, 600, 600, 600, 0, 0.004, 0.05
    )
    return ThresholdTable({(doc_type, ALL): entry})


def _run(pages: list[str], **context: object) -> pipeline.Outcome:
    classifier = OfflineClassifier()
    ctx = DocumentContext(pages=pages, min_dominant_confidence=0.0, **context)  # type: ignore[arg-type]
    return pipeline.orchestrate(
        classify=lambda feedback: (classifier.classify(pages), 0),
        context=ctx,
        preset=pipeline.PRESETS["clinical"],
        can_reask=False,
    )


# The rules give this one a confidence of about 0.5 (a short report).
RADIOLOGY = [
    "CT CHEST\n\nFINDINGS: small nodule in the right lobe. IMPRESSION: nodule, follow up CT in "
    "6 months."
]


def test_a_confidence_under_its_types_threshold_escalates_with_that_reason():
    baseline = _run(RADIOLOGY)
    assert baseline.best.output.dominant_type_overall.value == "radiology"
    assert baseline.decision == Decision.AUTO_ACCEPT
    outcome = _run(RADIOLOGY, acceptance=_threshold("radiology", 0.9))
    assert outcome.decision == Decision.ESCALATE_TO_SME
    issue = next(i for i in outcome.best.verification.issues if i.agent == "LRN")
    assert (
        issue.code == "below_risk_threshold" and "risk-controlled threshold 0.9 " in issue.message
    )
    assert outcome.best.verification.verdict.rule.startswith("R4")
    # No certificate for the type: escalated, saying why.
    none = _run(RADIOLOGY, acceptance=_threshold("radiology", None))
    assert none.decision == Decision.ESCALATE_TO_SME
    assert "no_risk_certificate" in {i.code for i in none.best.verification.issues}
    # A threshold it meets adds nothing.
    met = _run(RADIOLOGY, acceptance=_threshold("radiology", 0.0))
    assert not [i for i in met.best.verification.issues if i.agent == "LRN"]


def test_a_document_not_seen_before_escalates_with_that_reason():
    novel = Novelty(similarity=0.02, p_value=0.004, novel=True)
    outcome = _run(RADIOLOGY, novelty=novel)
    assert outcome.decision == Decision.ESCALATE_TO_SME
    issue = next(i for i in outcome.best.verification.issues if i.code == "novel_document")
    assert issue.message.startswith("A kind of document not seen before")


# -- the zero-error rule below what conformal risk control can certify (RISK_SMALL_SAMPLE) -----


@given(alpha=st.floats(0.001, 0.2), q=st.floats(0.0, 1.0))
def test_the_zero_error_rule_keeps_the_expected_accepted_error_at_most_alpha(
    alpha: float, q: float
) -> None:
    """With n = zero_error_documents(alpha) i.i.d. documents, a document accepted and wrong at
    the preset threshold with probability q passes the rule with probability (1 - q)^n and is
    then accepted at risk q: q (1 - q)^n <= alpha whatever q, and n is the least such count,
    never more than conformal risk control's 1/alpha - 1."""
    n = zero_error_documents(alpha)
    assert q * (1 - q) ** n <= zero_error_worst(n) + 1e-12 <= alpha + 1e-12
    assert n == 1 or zero_error_worst(n - 1) > alpha
    assert n <= math.ceil(1 / alpha) - 1


def test_the_zero_error_rule_certifies_the_preset_threshold_from_74_documents_at_0_005():
    def cal(n: int, wrong: int = 0) -> list[Calibration]:
        return [Calibration("radiology", "a", 0.99, True, i >= wrong) for i in range(n)]

    assert zero_error_documents(0.005) == 74
    entry = conformal_threshold(cal(74), alpha=0.005, small_sample=True)
    assert entry.threshold == THRESHOLDS[0] and entry.errors == 0
    assert entry.bound <= 0.005 and "preset" in entry.reason
    # One document fewer, one error, or the rule off: nothing is certified.
    assert conformal_threshold(cal(73), alpha=0.005, small_sample=True).threshold is None
    assert conformal_threshold(cal(80, wrong=1), alpha=0.005, small_sample=True).threshold is None
    assert conformal_threshold(cal(80), alpha=0.005).threshold is None
    # From 1/alpha - 1 documents conformal risk control decides, as without the rule.
    plain = conformal_threshold(cal(300), alpha=0.005)
    assert conformal_threshold(cal(300), alpha=0.005, small_sample=True) == plain
    table = certify_all(cal(80), method="crc", alpha=0.005, delta=0.1, small_sample=True)
    assert table.threshold("radiology") == THRESHOLDS[0]
    assert documents_to_certify(method="crc", alpha=0.005, delta=0.1, small_sample=True) == 74
    assert documents_to_certify(method="crc", alpha=0.005, delta=0.1) == 199
