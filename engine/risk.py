"""Risk-controlled acceptance: the least confidence at which the chain may accept a type so
that the error rate of what it accepts stays at or below a target, with a stated confidence.

Method: Learn then Test (Angelopoulos, Bates, Candès, Jordan and Lei, "Learn then Test:
Calibrating predictive algorithms to achieve risk control", 2021, arXiv:2110.01052) with
fixed-sequence testing. Calibration records are documents a clinician labelled that the model
never trained on (held back, or scored by a model of a cross-fitting fold that left them
out): for each, the chain's decision without a confidence threshold, the document's score
(``acceptance_score``), and whether the machine's type was right. For each threshold of a
fixed sequence, from the strictest down, the null hypothesis "the accepted-error rate at this
threshold is above ``alpha``" is tested with the exact binomial p-value
P(Binomial(n, alpha) <= k) of the k errors among the n documents it would accept; testing
stops at the first threshold that is not rejected (p > ``delta``), and the loosest rejected
one is chosen. Under exchangeability of calibration and future documents, the family-wise
error is at most ``delta``: P(accepted-error rate of the chosen threshold > alpha) <= delta.
The reported ``bound`` is the one-sided Clopper-Pearson upper limit (confidence 1 - delta) of
the error rate at the chosen threshold; the binomial test rejects exactly when it is at most
``alpha``.

With too few documents no threshold can be certified (with no error at all, it takes
log(delta) / log(1 - alpha) accepted documents: 460 for alpha 0.005 and delta 0.1); the
threshold is then ``None``: every document of that type goes to a clinician.

``conformal_threshold`` is the alternative of conformal risk control (Angelopoulos, Bates,
Fisch, Lei and Schuster, "Conformal risk control", ICLR 2024): the expected share of documents
accepted wrongly is at most ``alpha`` (a guarantee in expectation, with no delta).

Pure: no Django.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.schemas import ClassificationOutput

# The fixed sequence of thresholds, strictest first. Fixed in advance (not chosen from the
# data), which the family-wise guarantee of fixed-sequence testing needs. It starts at 0.96:
# a calibrated model gives more than that to too few documents for any test to pass there,
# and the first hypothesis not rejected ends the sequence.
THRESHOLDS: tuple[float, ...] = (
    0.96,
    0.95,
    0.94,
    0.93,
    0.92,
    0.91,
    0.9,
    0.88,
    0.86,
    0.84,
    0.82,
    0.8,
    0.77,
    0.74,
    0.7,
    0.65,
    0.6,
    0.55,
    0.5,
    0.45,
    0.4,
    0.35,
    0.3,
    0.25,
    0.2,
    0.1,
    0.0,
)
ALL = "*"  # the stratum of every type (or every source)
METHODS = ("ltt", "crc")


def acceptance_score(output: ClassificationOutput) -> float:
    """The confidence the threshold is compared with: the least confidence of any segment in
    its own dominant type (every part of an accepted document must be sure), the overall
    self-evaluation when no segment assesses its type."""
    found = [
        a.confidence
        for segment in output.segments
        if (a := segment.assessment(segment.dominant_type)) is not None
    ]
    return min(found) if found else output.self_evaluation.confidence


@dataclass(frozen=True)
class Calibration:
    """One labelled document the scoring model never trained on."""

    doc_type: str  # the type the chain gave (thresholds are looked up by it at run time)
    source: str
    score: float
    accepted: bool  # the chain's decision with no confidence threshold (novelty included)
    correct: bool


@dataclass
class RiskThreshold:
    """The certified threshold of one stratum and the data behind it."""

    doc_type: str
    source: str
    method: str
    threshold: float | None  # None: nothing can be accepted (too little data, or errors)
    alpha: float
    delta: float
    calibration: int  # labelled documents of the stratum
    candidates: int  # of those, accepted by the rest of the chain
    accepted: int  # accepted at the threshold
    errors: int  # wrong among those accepted
    bound: float  # upper confidence bound of the accepted-error rate at the threshold
    p_value: float
    reason: str = ""
    curve: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def clopper_pearson_upper(errors: int, n: int, delta: float) -> float:
    """The one-sided (1 - delta) Clopper-Pearson upper bound of a binomial proportion."""
    if n <= 0:
        return 1.0
    if errors >= n:
        return 1.0
    from scipy.stats import beta

    return float(beta.ppf(1.0 - delta, errors + 1, n - errors))


def binomial_p_value(errors: int, n: int, alpha: float) -> float:
    """P(Binomial(n, alpha) <= errors): small when k errors in n are unlikely if the true
    error rate were alpha (or more)."""
    if n <= 0:
        return 1.0
    from scipy.stats import binom

    return float(binom.cdf(errors, n, alpha))


def minimum_documents(alpha: float, delta: float) -> int:
    """Accepted documents, all right, that it takes to certify ``alpha`` at ``delta``."""
    return math.ceil(math.log(delta) / math.log(1.0 - alpha))


class _Counts:
    """How many documents the chain would accept at a threshold, and how many of them are
    wrong: sorted once, each threshold a binary search."""

    def __init__(self, records: Sequence[Calibration]) -> None:
        taken = sorted((r.score, not r.correct) for r in records if r.accepted)
        self.scores = [score for score, _ in taken]
        self.wrong_from: list[int] = [0] * (len(taken) + 1)  # errors among taken[i:]
        for i in range(len(taken) - 1, -1, -1):
            self.wrong_from[i] = self.wrong_from[i + 1] + int(taken[i][1])

    def __call__(self, threshold: float) -> tuple[int, int]:
        first = bisect.bisect_left(self.scores, threshold)
        return len(self.scores) - first, self.wrong_from[first]


def ltt_threshold(
    records: Sequence[Calibration],
    *,
    alpha: float,
    delta: float,
    doc_type: str = ALL,
    source: str = ALL,
    thresholds: Sequence[float] = THRESHOLDS,
) -> RiskThreshold:
    """Learn then Test over the fixed sequence ``thresholds`` (strictest first)."""
    chosen: float | None = None
    chosen_counts = (0, 0)
    chosen_p = 1.0
    curve = []
    counts = _Counts(records)
    for threshold in thresholds:
        n, k = counts(threshold)
        p = binomial_p_value(k, n, alpha)
        curve.append({"threshold": threshold, "accepted": n, "errors": k, "p_value": round(p, 6)})
        if p > delta:
            break  # fixed sequence: the first hypothesis not rejected ends the testing
        chosen, chosen_counts, chosen_p = threshold, (n, k), p
    candidates = sum(1 for r in records if r.accepted)
    if chosen is None:
        n, k = counts(thresholds[0]) if thresholds else (0, 0)
        need = minimum_documents(alpha, delta)
        reason = (
            f"not enough labelled documents: {candidates} the chain would accept, "
            f"{need} needed with no error to show an error rate at most {alpha:g} "
            f"with confidence {1 - delta:g}"
            if candidates < need
            else f"the errors among the {candidates} documents it would accept do not allow "
            f"an error rate at most {alpha:g} with confidence {1 - delta:g} at any threshold"
        )
        return RiskThreshold(
            doc_type=doc_type,
            source=source,
            method="ltt",
            threshold=None,
            alpha=alpha,
            delta=delta,
            calibration=len(records),
            candidates=candidates,
            accepted=0,
            errors=0,
            bound=clopper_pearson_upper(k, n, delta),
            p_value=binomial_p_value(k, n, alpha),
            reason=reason,
            curve=curve,
        )
    n, k = chosen_counts
    return RiskThreshold(
        doc_type=doc_type,
        source=source,
        method="ltt",
        threshold=chosen,
        alpha=alpha,
        delta=delta,
        calibration=len(records),
        candidates=candidates,
        accepted=n,
        errors=k,
        bound=clopper_pearson_upper(k, n, delta),
        p_value=chosen_p,
        reason=f"{k} error(s) in {n} accepted at {chosen:g}",
        curve=curve,
    )


def zero_error_worst(n: int) -> float:
    """The largest expected loss of the rule "accept at one threshold fixed in advance when
    none of ``n`` i.i.d. calibration documents is accepted and wrong there, else accept
    nothing": max over q of q (1 - q)^n, at q = 1 / (n + 1)."""
    return (1 / (n + 1)) * (n / (n + 1)) ** n


def zero_error_documents(alpha: float) -> int:
    """The fewest calibration documents with which the zero-error rule keeps the expected
    share accepted wrongly at most ``alpha``: 74 for 0.005 (conformal risk control: 199)."""
    n = 1
    while zero_error_worst(n) > alpha:
        n += 1
    return n


def conformal_threshold(
    records: Sequence[Calibration],
    *,
    alpha: float,
    doc_type: str = ALL,
    source: str = ALL,
    thresholds: Sequence[float] = THRESHOLDS,
    small_sample: bool = False,
) -> RiskThreshold:
    """Conformal risk control of the loss "accepted and wrong" (bounded by 1, monotone in
    the threshold): the loosest threshold of the sequence with
    (n R(t) + 1) / (n + 1) <= alpha, which keeps E[accepted and wrong] <= alpha.

    ``small_sample`` (RISK_SMALL_SAMPLE): with fewer documents than conformal risk control
    can ever certify with (1/alpha - 1), the strictest threshold of the sequence, fixed in
    advance, is certified when none of the n documents is accepted and wrong there and n is
    at least ``zero_error_documents(alpha)``. Its expected loss is q (1 - q)^n <= alpha for
    every q when documents are i.i.d. (the assumption Learn then Test's binomial test makes
    too; conformal risk control assumes only exchangeability, whose worst case, one bad
    document among n + 1, is why it needs 1/alpha - 1). Which rule applies depends on n
    alone, so each keeps its own guarantee."""
    n = len(records)
    chosen: float | None = None
    chosen_counts = (0, 0)
    curve = []
    counts = _Counts(records)
    for threshold in thresholds:
        accepted, errors = counts(threshold)
        risk = (errors + 1) / (n + 1)
        curve.append({"threshold": threshold, "accepted": accepted, "errors": errors})
        if risk > alpha:
            break
        chosen, chosen_counts = threshold, (accepted, errors)
    if small_sample and thresholds and (n + 1) * alpha < 1 and n >= zero_error_documents(alpha):
        accepted, errors = counts(thresholds[0])
        if errors == 0:
            return RiskThreshold(
                doc_type=doc_type,
                source=source,
                method="crc",
                threshold=thresholds[0],
                alpha=alpha,
                delta=0.0,
                calibration=n,
                candidates=sum(1 for r in records if r.accepted),
                accepted=accepted,
                errors=0,
                bound=round(zero_error_worst(n), 6),
                p_value=0.0,
                reason=f"no error in {accepted} accepted of {n} at the preset {thresholds[0]:g}",
                curve=curve,
            )
    accepted, errors = chosen_counts
    return RiskThreshold(
        doc_type=doc_type,
        source=source,
        method="crc",
        threshold=chosen,
        alpha=alpha,
        delta=0.0,
        calibration=n,
        candidates=sum(1 for r in records if r.accepted),
        accepted=accepted,
        errors=errors,
        bound=(errors + 1) / (n + 1),
        p_value=0.0,
        reason=(
            f"{errors} error(s) in {accepted} accepted of {n}"
            if chosen is not None
            else f"not enough labelled documents: {n}, {math.ceil(1 / alpha) - 1} needed"
        ),
        curve=curve,
    )


def certify(
    records: Sequence[Calibration],
    *,
    method: str,
    alpha: float,
    delta: float,
    doc_type: str = ALL,
    source: str = ALL,
    small_sample: bool = False,
) -> RiskThreshold:
    if method == "crc":
        return conformal_threshold(
            records, alpha=alpha, doc_type=doc_type, source=source, small_sample=small_sample
        )
    if method == "ltt":
        return ltt_threshold(records, alpha=alpha, delta=delta, doc_type=doc_type, source=source)
    raise ValueError(f"Unknown risk-control method {method!r}; choose one of {METHODS}.")


def documents_to_certify(
    *, method: str, alpha: float, delta: float, small_sample: bool = False
) -> int:
    """The fewest documents the chain would accept, all right, with which ``method`` can
    certify anything: 1/alpha - 1 for conformal risk control (199 at 0.005), since
    (n * 0 + 1) / (n + 1) <= alpha needs n + 1 >= 1/alpha; ``minimum_documents`` for
    Learn then Test (460 at 0.005 and delta 0.1)."""
    if method == "ltt":
        return minimum_documents(alpha, delta)
    return zero_error_documents(alpha) if small_sample else math.ceil(1 / alpha) - 1


def enough(records: Sequence[Calibration], *, method: str, alpha: float, delta: float) -> bool:
    """Whether a stratum has enough documents the chain would accept for a certificate to
    be possible at all (with no error among them)."""
    need = documents_to_certify(method=method, alpha=alpha, delta=delta)
    return sum(1 for r in records if r.accepted) >= need


@dataclass
class ThresholdTable:
    """Certificates by (type, source), by type, and over every type together. ``lookup``
    takes the most specific stratum that has one: a type (or a type from one source) is
    certified on its own once it has enough documents for a certificate to be possible, and
    its own answer then stands, even when it is "none" (its errors forbid accepting); until
    then the certificate over every type together applies, whose guarantee is over the mix
    of types it was computed on (the metrics page says which applies)."""

    entries: dict[tuple[str, str], RiskThreshold]

    def lookup(self, doc_type: str, source: str = ALL) -> RiskThreshold | None:
        for key in ((doc_type, source), (doc_type, ALL), (ALL, ALL)):
            if key in self.entries:
                return self.entries[key]
        return None

    def threshold(self, doc_type: str, source: str = ALL) -> float | None:
        entry = self.lookup(doc_type, source)
        return entry.threshold if entry is not None else None

    def rows(self) -> list[RiskThreshold]:
        return [self.entries[k] for k in sorted(self.entries)]


def certify_all(
    records: Iterable[Calibration],
    *,
    method: str,
    alpha: float,
    delta: float,
    per_source: bool = True,
    small_sample: bool = False,
) -> ThresholdTable:
    """Certify over every type together, each type that has enough documents of its own,
    and each (type, source) that has enough (``enough``). ``small_sample``: the stratum of
    every type may be certified by the zero-error rule (``conformal_threshold``) below the
    count conformal risk control needs."""
    records = list(records)
    entries: dict[tuple[str, str], RiskThreshold] = {
        (ALL, ALL): certify(
            records, method=method, alpha=alpha, delta=delta, small_sample=small_sample
        )
    }
    by_type: dict[str, list[Calibration]] = {}
    for r in records:
        by_type.setdefault(r.doc_type, []).append(r)
    for doc_type, group in sorted(by_type.items()):
        if not enough(group, method=method, alpha=alpha, delta=delta):
            continue
        entries[(doc_type, ALL)] = certify(
            group, method=method, alpha=alpha, delta=delta, doc_type=doc_type
        )
        if not per_source:
            continue
        by_source: dict[str, list[Calibration]] = {}
        for r in group:
            by_source.setdefault(r.source, []).append(r)
        for source, cell in sorted(by_source.items()):
            if source != ALL and enough(cell, method=method, alpha=alpha, delta=delta):
                entries[(doc_type, source)] = certify(
                    cell, method=method, alpha=alpha, delta=delta, doc_type=doc_type, source=source
                )
    return ThresholdTable(entries)


__all__ = [
    "ALL",
    "THRESHOLDS",
    "Calibration",
    "RiskThreshold",
    "ThresholdTable",
    "acceptance_score",
    "binomial_p_value",
    "certify",
    "certify_all",
    "clopper_pearson_upper",
    "conformal_threshold",
    "enough",
    "ltt_threshold",
    "minimum_documents",
    "zero_error_documents",
    "zero_error_worst",
]
