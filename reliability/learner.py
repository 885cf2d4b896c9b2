"""The learning loop's computations, without the database: train a candidate, compare it with
the active model on held-back clinician labels, certify per-type acceptance thresholds from
out-of-sample scores (engine.risk), index the training documents for novelty
(engine.novelty), and find likely-wrong labels (cleanlab). reliability.learning runs them on
ground truth and records each attempt; benchmarks' bench_learning runs them on a simulated
deployment.

Calibration is cross-fitted: the clinician-labelled documents are dealt into folds (by type,
training.folds); each fold is scored by a model trained on everything else, so every score is
out of sample. Thresholds certified on those scores are then applied to the model trained on
all the data, which saw more examples than any fold's model (the usual practice of
cross-conformal calibration; see docs/learning.md for what that assumes).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from engine import pipeline
from engine.classifiers import trained
from engine.classifiers.offline import load_rules
from engine.document import DocumentContext, SecondOpinion
from engine.exemplars import ExemplarMemory, ExemplarVote, combined_score
from engine.novelty import Novelty, NoveltyIndex
from engine.risk import Calibration, ThresholdTable, acceptance_score, certify_all
from engine.schemas import DOC_TYPES, SEVERITY_ORDER, Decision, Severity
from engine.verifiers import arbiter
from reliability import training

logger = logging.getLogger(__name__)

LABELS = [t.value for t in DOC_TYPES]
NOVELTY_MAX_CHARS = 8_000  # the reference is stored: its rows are kept small


@dataclass(frozen=True)
class Example(training.Record):
    """A labelled document: ``clinician`` when a person gave the label (a review, an audit,
    an adjudication, or a labelled corpus), not when it is an accepted machine answer."""

    source: str = "*"
    clinician: bool = True
    reviewer: str = ""


# Escalation reasons that no number of overruling decisions may switch off on a source: text
# addressed to a model, text a reader cannot see, evidence the page does not carry, pages that
# could not be read, no answer at all; and the learning loop's own checks (the bound itself).
# Every BLOCKER is kept too, whatever its code.
SAFETY_CODES = frozenset(
    {
        "instruction_in_text",
        "hidden_text",
        "fabricated_evidence",
        "unreadable_page",
        "no_answer",
        "no_risk_certificate",
        "below_risk_threshold",
    }
)


@dataclass(frozen=True)
class Settings:
    preset: pipeline.Preset
    alpha: float = 0.005  # TARGET_ACCEPTED_ERROR
    delta: float = 0.1  # RISK_DELTA
    method: str = "ltt"  # RISK_METHOD
    novelty_alpha: float = 0.01  # NOVELTY_ALPHA
    novelty_k: int = 3
    novelty_reference: int = 2_000  # NOVELTY_REFERENCE_MAX
    folds: int = 5  # LEARNING_FOLDS
    # LEARNING_CALIBRATION_MAX: the cross-fit's documents (clinician labels first), so that an
    # attempt's folds fit in a job's time however large the ground truth grows.
    calibration_max: int = 4_000
    gate_confirm_confidence: float = 0.5
    per_source: bool = True
    memory: bool = True  # the exemplar memory (engine.exemplars)
    memory_k: int = 3
    memory_min_similarity: float = 0.35
    # The source's own vote when no look-alikes vote (engine.exemplars): its last
    # ``memory_source_window`` labels (at least ``memory_source_min``) all of one type.
    memory_source_min: int = 3
    memory_source_window: int = 20
    # RISK_SMALL_SAMPLE: below 1/alpha - 1 labels, the zero-error rule at the preset strictest
    # threshold (engine.risk.conformal_threshold; i.i.d. documents).
    small_sample: bool = False


@dataclass
class ChainResult:
    predicted: str
    decision: str
    score: float
    novelty: Novelty | None
    codes: list[str]
    gate_agrees: bool
    severity: int = 2  # the worst issue's: 0 BLOCKER, 1 MAJOR, 2 MINOR or none
    vote: ExemplarVote | None = None
    waived: list[str] = field(default_factory=list)  # codes a learned waiver set aside
    classifier_score: float = 0.0

    @property
    def accepted(self) -> bool:
        return self.decision == Decision.AUTO_ACCEPT.value


class Learner:
    """One deployment's models and checks. The offline classifier's answers are remembered
    by text (``memo``), so documents scored again by another model cost little."""

    def __init__(self, settings: Settings, *, memo: training.MemoOffline | None = None) -> None:
        self.settings = settings
        self.memo = memo or training.MemoOffline()
        rules = load_rules()
        self.vendors = tuple(dict.fromkeys((*rules.genomic_vendors, *rules.routine_lab_vendors)))

    # -- models ------------------------------------------------------------------------------

    def fit(self, records: Sequence[training.Record], *, meta: dict[str, Any] | None = None) -> Any:
        return trained.fit(
            [r.text for r in records],
            [r.label for r in records],
            data_hash=training.data_hash(records),
            meta=meta,
        )

    def novelty_index(self, model: Any, records: Sequence[training.Record]) -> NoveltyIndex:
        """The model's training documents (at most ``novelty_reference``, spread over types
        and sources) in the space of the model's word features."""
        chosen = reference_sample(records, self.settings.novelty_reference)
        return NoveltyIndex.build(
            words_vectorizer(model),
            [r.text[:NOVELTY_MAX_CHARS] for r in chosen],
            [r.key for r in chosen],
            k=self.settings.novelty_k,
            alpha=self.settings.novelty_alpha,
            vendors=self.vendors,
        )

    def memory(self, model: Any, records: Sequence[Example]) -> ExemplarMemory | None:
        """The exemplar memory of the clinician labels in ``records``, in the model's word
        space; None when the memory is off or there is no model."""
        if model is None or not self.settings.memory:
            return None
        memory = ExemplarMemory(
            words_vectorizer(model),
            k=self.settings.memory_k,
            min_similarity=self.settings.memory_min_similarity,
            source_min=self.settings.memory_source_min,
            source_window=self.settings.memory_source_window,
        )
        for r in records:
            if r.clinician:
                memory.add(r.key, r.text, r.label, r.source)
        return memory

    def roles(self, model: Any) -> tuple[Any, Any]:
        if model is None:
            return self.memo, None
        return trained.TrainedClassifier(model, base=self.memo), self.memo

    # -- the chain ---------------------------------------------------------------------------

    def chain(
        self,
        pages: list[str],
        model: Any,
        *,
        novelty: NoveltyIndex | None = None,
        table: ThresholdTable | None = None,
        source: str = "*",
        fixed_threshold: bool = False,
        memory: ExemplarMemory | None = None,
        key: str = "",
        waivers: frozenset[str] = frozenset(),
        trusted: bool = True,
    ) -> ChainResult:
        """The whole chain for one document. With a table, the risk-controlled thresholds
        replace the preset's fixed one; ``fixed_threshold`` keeps the preset's (the chain as
        it was before the loop); neither: no confidence threshold (calibration). ``memory``:
        the exemplar memory, whose vote (leaving out ``key``) joins the acceptance score;
        ``waivers``: escalation codes learned harmless on this source (``waivable``);
        ``trusted``: whether the source's memory may raise a score (engine.exemplars.CellTrust)."""
        primary, gate = self.roles(model)
        text = "\n\n".join(pages)
        seen = novelty.score(text) if novelty is not None else None
        vote = (
            memory.vote(text, source, exclude=(key,), trusted=trusted)
            if memory is not None
            else None
        )
        second = SecondOpinion(gate.name, gate.classify(pages)) if gate is not None else None
        context = DocumentContext(
            pages=pages,
            min_dominant_confidence=pipeline.confidence_threshold(self.settings.preset, primary)
            if fixed_threshold
            else 0.0,
            second=second,
            gate_confirm_confidence=self.settings.gate_confirm_confidence,
            novelty=seen,
            acceptance=table,
            source=source,
            exemplar=vote,
        )
        outcome = pipeline.orchestrate(
            classify=lambda feedback: (primary.classify(pages, feedback), 0),
            context=context,
            preset=self.settings.preset,
            can_reask=False,
        )
        best = outcome.best
        gate_result = best.verification.gate_result
        predicted = best.output.dominant_type_overall.value
        issues = best.verification.issues
        decision = outcome.decision.value
        waived: list[str] = []
        if decision != Decision.AUTO_ACCEPT.value:
            waived = waived_codes(issues, waivers)
            if waived:
                decision = Decision.AUTO_ACCEPT.value
        raw = acceptance_score(best.output)
        return ChainResult(
            predicted=predicted,
            decision=decision,
            score=combined_score(raw, vote, predicted),
            novelty=seen,
            codes=sorted({i.code for i in issues}),
            gate_agrees=gate_result is None or not gate_result.issues,
            severity=min((SEVERITY_ORDER[i.severity] for i in issues), default=2),
            vote=vote,
            waived=waived,
            classifier_score=raw,
        )

    # -- the regression gate -----------------------------------------------------------------

    def figures(self, records: Sequence[training.Record], model: Any) -> dict[str, Any]:
        results = []
        for r in records:
            outcome = self.chain(r.pages, model, fixed_threshold=True)
            results.append((r.label, outcome.predicted, outcome.decision))
        return training.figures(results)

    def gate(
        self, candidate: Any, active: Any, held: Sequence[training.Record]
    ) -> tuple[bool, list[str], dict[str, Any], dict[str, Any]]:
        """Is the candidate not worse than the active model on the held-back clinician
        labels (training.compare)? With nothing held back, it is not activated."""
        new = self.figures(held, candidate)
        old = self.figures(held, active)
        ok, reasons = training.compare(new, old)
        if not held:
            ok, reasons = False, ["no held-back clinician labels to compare on"]
        return ok, reasons, new, old

    # -- calibration (cross-fitted) ----------------------------------------------------------

    def cross_fit(
        self,
        records: Sequence[Example],
        *,
        progress: Callable[[str], None] | None = None,
        waivers: dict[str, frozenset[str]] | None = None,
    ) -> CrossFit:
        """Out-of-sample chain outcomes and class probabilities of every clinician-labelled
        document: each fold scored by a model trained on all the other documents (machine
        labels included, as the deployed model is), with the novelty check of that model."""
        records = _capped(records, self.settings.calibration_max)
        clinician = [r for r in records if r.clinician]
        k = max(2, min(self.settings.folds, len(clinician)))
        result = CrossFit()
        if len({r.label for r in clinician}) < 2 or len(clinician) < k:
            return result
        for index, dealt in enumerate(training.folds(clinician, k)):
            fold = cast(list[Example], dealt)
            out = {r.key for r in fold}
            rest = [r for r in records if r.key not in out]
            try:
                model = self.fit(rest)
            except ValueError:
                continue
            index_ = self.novelty_index(model, rest)
            memory = self.memory(model, rest)
            probabilities = model.probabilities([r.text for r in fold])
            for r, probs in zip(fold, probabilities, strict=True):
                outcome = self.chain(
                    r.pages,
                    model,
                    novelty=index_,
                    source=r.source,
                    memory=memory,
                    waivers=(waivers or {}).get(r.source, frozenset()),
                )
                result.calibration.append(
                    Calibration(
                        doc_type=outcome.predicted,
                        source=r.source,
                        score=outcome.score,
                        accepted=outcome.accepted,
                        correct=outcome.predicted == r.label,
                    )
                )
                result.keys.append(r.key)
                result.labels.append(r.label)
                result.probabilities.append([probs.get(label, 0.0) for label in LABELS])
                result.novel.append(bool(outcome.novelty and outcome.novelty.novel))
            if progress:
                progress(f"calibration fold {index + 1}/{k}: {len(fold)} documents")
        return result

    def held_back_calibration(
        self,
        model: Any,
        index: NoveltyIndex | None,
        records: Sequence[Example],
        *,
        memory: ExemplarMemory | None = None,
        waivers: dict[str, frozenset[str]] | None = None,
    ) -> list[Calibration]:
        """Scores of ``model`` on the held-back clinician labels, which no model Vetted trains
        ever sees (training.split): the calibration of a model that is not the one just
        trained (kept because the candidate was worse, or pinned)."""
        out = []
        for r in records:
            if not (r.clinician and training.held_back(r.key)):
                continue
            result = self.chain(
                r.pages,
                model,
                novelty=index,
                source=r.source,
                memory=memory,
                key=r.key,
                waivers=(waivers or {}).get(r.source, frozenset()),
            )
            out.append(
                Calibration(
                    doc_type=result.predicted,
                    source=r.source,
                    score=result.score,
                    accepted=result.accepted,
                    correct=result.predicted == r.label,
                )
            )
        return out

    def thresholds(self, fit: CrossFit) -> ThresholdTable:
        return self.thresholds_from(fit.calibration)

    def thresholds_from(self, calibration: Sequence[Calibration]) -> ThresholdTable:
        s = self.settings
        return certify_all(
            calibration,
            method=s.method,
            alpha=s.alpha,
            delta=s.delta,
            per_source=s.per_source,
            small_sample=s.small_sample,
        )


@dataclass
class CrossFit:
    calibration: list[Calibration] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    probabilities: list[list[float]] = field(default_factory=list)
    novel: list[bool] = field(default_factory=list)


def waivable(code: str, severity: Severity | str, waivers: frozenset[str]) -> bool:
    """Whether an issue is set aside by a learned waiver: its code is waived on the source,
    it is no safety code (``SAFETY_CODES``) and no BLOCKER."""
    return code in waivers and code not in SAFETY_CODES and severity != Severity.BLOCKER


def waived_codes(issues: Sequence[Any], waivers: frozenset[str]) -> list[str]:
    """The codes set aside when the learned ``waivers`` turn an escalation into an
    acceptance: the issues left after the waivable ones (``waivable``) must be ones the
    arbiter accepts with. Empty when nothing is waived or what is left still escalates."""
    if not waivers:
        return []
    kept = [i for i in issues if not waivable(i.code, i.severity, waivers)]
    if len(kept) == len(issues) or arbiter.decide(kept).decision != Decision.AUTO_ACCEPT:
        return []
    return sorted({i.code for i in issues} - {i.code for i in kept})


def _capped(records: Sequence[Example], limit: int) -> list[Example]:
    """At most ``limit`` records: clinician labels first, each group in the order of a hash
    of its key (the same documents every time)."""
    if len(records) <= limit:
        return list(records)

    def order(r: Example) -> tuple[bool, str]:
        return (not r.clinician, hashlib.sha256(r.key.encode()).hexdigest())

    return sorted(records, key=order)[:limit]


def words_vectorizer(model: Any) -> Any:
    """The word part of the model's features (the character part would make the stored
    reference several times larger for little difference in who is near whom)."""
    union = model.vectorizer
    for name, part in getattr(union, "transformer_list", []):
        if name == "words":
            return part
    return union


def reference_sample(records: Sequence[training.Record], limit: int) -> list[training.Record]:
    """At most ``limit`` records, taken round-robin over (type, source) groups in key order,
    so a small source is kept whole while a large one is thinned."""
    if len(records) <= limit:
        return list(records)
    groups: dict[tuple[str, str], list[training.Record]] = {}
    for r in sorted(records, key=lambda r: hashlib.sha256(r.key.encode()).hexdigest()):
        groups.setdefault((r.label, getattr(r, "source", "*")), []).append(r)
    chosen: list[training.Record] = []
    queues = [list(g) for _, g in sorted(groups.items())]
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    return chosen


def label_issues(fit: CrossFit) -> list[tuple[str, str, str, float]]:
    """Likely-wrong labels among the cross-fitted documents, by cleanlab's
    ``find_label_issues`` (confident learning, Northcutt, Jiang and Chuang, JAIR 2021) on the
    out-of-sample probabilities: (key, given label, the label the model suggests, the
    model's probability of the given label), most suspicious first."""
    if len(fit.keys) < 10:
        return []
    present = sorted(set(fit.labels), key=LABELS.index)
    if len(present) < 2:
        return []
    columns = [LABELS.index(label) for label in present]
    probs = np.asarray(fit.probabilities, dtype=float)[:, columns]
    probs = np.clip(probs, 1e-6, None)
    probs = probs / probs.sum(axis=1, keepdims=True)
    labels = np.asarray([present.index(label) for label in fit.labels])
    from cleanlab.filter import find_label_issues

    ranked = find_label_issues(
        labels=labels,
        pred_probs=probs,
        return_indices_ranked_by="self_confidence",
    )
    return [
        (
            fit.keys[i],
            fit.labels[i],
            present[int(np.argmax(probs[i]))],
            round(float(probs[i, labels[i]]), 4),
        )
        for i in ranked
    ]


def learning_value(result: ChainResult) -> float:
    """How much a clinician's label for this document teaches the model, in [0, 1]: the
    model's uncertainty (one less its confidence), the independent gate's disagreement and
    the document's novelty, averaged with weights (uncertainty sampling and query by
    disagreement; Settles, "Active learning literature survey", 2009)."""
    uncertainty = 1.0 - max(0.0, min(1.0, result.score))
    disagreement = 0.0 if result.gate_agrees else 1.0
    novelty = 1.0 - result.novelty.p_value if result.novelty is not None else 0.0
    return round(0.5 * uncertainty + 0.25 * disagreement + 0.25 * novelty, 4)
