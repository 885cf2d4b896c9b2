"""The learning loop: scheduled, recorded, and read by every run (docs/learning.md).

- ``learning_schedule`` (the workers' recovery pass, config.recovery; ``manage.py learn`` in
  inline mode) queues an attempt every LEARNING_INTERVAL_HOURS and after every
  LEARNING_EVERY_LABELS new clinician labels; one attempt is open at a time (a database
  constraint), and it runs as durable background work (core.jobs, ``reliability.jobs.LEARN``).
- ``learning_execute`` trains a candidate on the current ground truth (training.train: the
  regression gate on held-back clinician labels; activated only if not worse, and never over
  an admin's pin), certifies the per-type thresholds for the model left active
  (engine.risk, on cross-fitted scores), stores its novelty reference (engine.novelty), finds
  likely-wrong labels (cleanlab) and hands them on for a blind re-check
  (hooks.label_issues_found).
- ``run_checks`` gives a run the thresholds and the novelty index of the active model;
  ``exemplar_vote`` the exemplar memory's vote (engine.exemplars), rebuilt when ground truth
  changes (``memory_note_change``), so a decision counts within seconds, without a retrain.
- ``model_pin``, ``model_unpin``, ``model_activate``: the admins' pin and rollback.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core import jobs
from core.caching import cache_get, cache_set
from documents.models import Document
from engine import pipeline
from engine.classifiers.trained import TrainedClassifier
from engine.exemplars import CellTrust, ExemplarMemory, ExemplarVote
from engine.novelty import Novelty, NoveltyIndex
from engine.risk import ALL, RiskThreshold, ThresholdTable, documents_to_certify
from reliability import hooks, training
from reliability.jobs import LEARN
from reliability.learner import (
    ChainResult,
    CrossFit,
    Example,
    Learner,
    Settings,
    label_issues,
    learning_value,
)
from reliability.models import (
    LearningAttempt,
    LearningPin,
    SourceCertification,
    TrainedClassifierModel,
)

logger = logging.getLogger(__name__)

OPEN = (LearningAttempt.Status.PENDING, LearningAttempt.Status.RUNNING)


class LearningSuperseded(Exception):
    """Another job holds the attempt now: this one's result is dropped."""


def learner_settings() -> Settings:
    return Settings(
        preset=pipeline.PRESETS[settings.RELIABILITY_PRESET],
        alpha=settings.TARGET_ACCEPTED_ERROR,
        delta=settings.RISK_DELTA,
        method=settings.RISK_METHOD,
        novelty_alpha=settings.NOVELTY_ALPHA,
        novelty_reference=settings.NOVELTY_REFERENCE_MAX,
        folds=settings.LEARNING_FOLDS,
        calibration_max=settings.LEARNING_CALIBRATION_MAX,
        gate_confirm_confidence=settings.GATE_CONFIRM_CONFIDENCE,
        memory_source_min=settings.LEARNING_MEMORY_SOURCE_MIN,
        memory_source_window=settings.LEARNING_MEMORY_SOURCE_WINDOW,
        small_sample=settings.RISK_SMALL_SAMPLE,
    )


def document_source(document: Document) -> str:
    """Where a document comes from, for per-source thresholds and novelty rates: the
    ``source`` processing option given at upload (the API, a bulk upload), else its
    uploader."""
    given = str((document.options or {}).get("source") or "").strip()
    if given:
        return given[:100]
    user = document.uploaded_by
    return f"uploader:{user.get_username()}" if user is not None else "unknown"


def examples() -> list[Example]:
    """Current ground truth with each document's source (hooks.learning_ground_truth)."""
    rows = [row for found in hooks.learning_ground_truth() for row in found]
    documents = {
        str(d.pk): d
        for d in Document.objects.filter(pk__in=[r[0] for r in rows]).select_related("uploaded_by")
    }
    return [
        Example(
            key,
            label,
            pages,
            source=document_source(documents[key]) if key in documents else "unknown",
            clinician=clinician,
        )
        for key, label, pages, clinician in rows
    ]


def clinician_labels() -> int:
    return sum(hooks.clinician_label_count())


# -- scheduling ----------------------------------------------------------------------------------


def learning_due(*, now: datetime | None = None) -> str:
    """Why an attempt is due now (a LearningAttempt.Trigger), or "" when none is."""
    if not settings.LEARNING:
        return ""
    if LearningAttempt.objects.filter(status__in=OPEN).exists():
        return ""
    now = now or timezone.now()
    labels = clinician_labels()
    last = LearningAttempt.objects.order_by("-created_at", "-pk").first()
    if last is None:
        return LearningAttempt.Trigger.SCHEDULE if labels else ""
    if labels - last.clinician_labels >= settings.LEARNING_EVERY_LABELS:
        return LearningAttempt.Trigger.LABELS
    if last.clinician_labels < certifiable_from() <= labels:
        # The labels just reached the count from which a certificate can exist at all: an
        # attempt now, not at the next LEARNING_EVERY_LABELS (everything waits for it).
        return LearningAttempt.Trigger.LABELS
    if now - last.created_at >= timedelta(hours=settings.LEARNING_INTERVAL_HOURS):
        return LearningAttempt.Trigger.SCHEDULE
    return ""


def certifiable_from() -> int:
    """Clinician labels from which the configured method can certify a threshold at all
    (engine.risk.documents_to_certify)."""
    return documents_to_certify(
        method=settings.RISK_METHOD,
        alpha=settings.TARGET_ACCEPTED_ERROR,
        delta=settings.RISK_DELTA,
        small_sample=settings.RISK_SMALL_SAMPLE,
    )


def learning_schedule(*, trigger: str = "", user: Any = None) -> LearningAttempt | None:
    """Queue an attempt when one is due (or with ``trigger``, now); None when one is open
    already or none is due."""
    trigger = trigger or learning_due()
    if not trigger:
        return None
    try:
        with transaction.atomic():
            attempt = LearningAttempt.objects.create(
                trigger=trigger,
                clinician_labels=clinician_labels(),
                queued_at=timezone.now(),
                created_by=user if user is not None and user.is_authenticated else None,
            )
            jobs.submit(LEARN, [attempt.pk])
    except IntegrityError:
        return None  # another process queued one first
    logger.info("learning attempt %s queued (%s)", attempt.pk, trigger)
    return attempt


# -- one attempt ---------------------------------------------------------------------------------


@dataclass
class Computed:
    outcome: str
    reason: str
    candidate: TrainedClassifierModel | None
    active_before: TrainedClassifierModel | None
    active_after: TrainedClassifierModel | None
    figures: dict[str, Any]
    table: ThresholdTable | None
    risk: dict[str, Any]
    novelty: dict[str, Any]
    reference: bytes | None
    issues: list[tuple[str, str, str, float]]
    ground_truth: int


def learning_execute(*, attempt_id: int) -> LearningAttempt | None:
    """Run a queued attempt (the LEARN job). Idempotent: an attempt taken is left alone."""
    claim = jobs.claim(LEARN, attempt_id)
    if claim is None:
        return None
    started = time.perf_counter()
    with claim.heartbeat():
        computed = _compute()
    with transaction.atomic():
        if not claim.holds():
            raise LearningSuperseded(str(attempt_id))
        LearningAttempt.objects.filter(pk=attempt_id).update(
            status=LearningAttempt.Status.COMPLETED,
            outcome=computed.outcome,
            reason=computed.reason,
            candidate=computed.candidate,
            active_before=computed.active_before,
            active_after=computed.active_after,
            figures=computed.figures,
            thresholds=[e.as_dict() for e in computed.table.rows()] if computed.table else [],
            risk=computed.risk,
            novelty=computed.novelty,
            novelty_reference=computed.reference,
            label_issues=[list(i) for i in computed.issues],
            ground_truth=computed.ground_truth,
            seconds=round(time.perf_counter() - started, 2),
            finished_at=timezone.now(),
            error="",
        )
    opened = 0
    if computed.issues and settings.LABEL_ISSUES and settings.LABEL_ISSUES_PER_ATTEMPT:
        with transaction.atomic():
            opened = sum(
                hooks.label_issues_found(computed.issues[: settings.LABEL_ISSUES_PER_ATTEMPT])
            )
    _forget()
    logger.info(
        "learning attempt %s: %s (%s); %s label re-check(s) opened",
        attempt_id,
        computed.outcome,
        computed.reason,
        opened,
    )
    return LearningAttempt.objects.get(pk=attempt_id)


def learning_fail(*, attempt_id: int, message: str, code: str = "crashed") -> None:
    LearningAttempt.objects.filter(pk=attempt_id).exclude(
        status=LearningAttempt.Status.COMPLETED
    ).update(
        status=LearningAttempt.Status.FAILED,
        error=message,
        error_code=code,
        finished_at=timezone.now(),
    )


def _compute() -> Computed:
    """The slow part, outside any transaction."""
    learner = Learner(learner_settings())
    records = examples()
    # The regression gate compares on the held-back slice: clinicians' labels only (an
    # accepted answer is the active model's own). Held-back machine labels are never
    # trained on either, so leaving them out changes nothing else.
    usable = [r for r in records if r.clinician or not training.held_back(r.key)]
    before = TrainedClassifierModel.objects.filter(active=True).defer("blob").first()
    pin = LearningPin.objects.select_related("model").first()
    pinned = pin is not None
    candidate_row: TrainedClassifierModel | None = None
    figures: dict[str, Any] = {}
    fresh = False
    try:
        result = training.train(
            usable,
            source="learning loop (ground truth)",
            preset=learner.settings.preset,
            activate=not pinned,
        )
    except ValueError as exc:
        outcome, reason = LearningAttempt.Outcome.NO_DATA, str(exc)
    else:
        candidate_row = result.row
        figures = dict(result.row.metrics or {})
        figures["report"] = result.report
        if pinned:
            outcome = LearningAttempt.Outcome.PINNED
            reason = f"{pin.model} is pinned by an admin; the candidate was recorded only."  # type: ignore[union-attr]
        elif result.activated:
            outcome, fresh = LearningAttempt.Outcome.ACTIVATED, True
            reason = result.report[-1]
        else:
            outcome, reason = LearningAttempt.Outcome.REFUSED, result.report[-1]
    after = TrainedClassifierModel.objects.filter(active=True).defer("blob").first()
    model = training.active_model() if after is not None else None
    table: ThresholdTable | None = None
    risk: dict[str, Any] = {}
    novelty: dict[str, Any] = {}
    reference: bytes | None = None
    issues: list[tuple[str, str, str, float]] = []
    from reliability.waivers import waivers_in_force  # it reads this module's memory

    # The thresholds are certified on the chain as runs decide: with the waivers in force.
    in_force = waivers_in_force()
    fit = (
        learner.cross_fit(records, waivers=in_force)
        if len({r.label for r in records if r.clinician}) > 1
        else None
    )
    if fit is not None and settings.LABEL_ISSUES:
        try:
            issues = label_issues(fit)
        except Exception as exc:  # a library failure must not lose the attempt
            logger.warning("label issues not computed: %s", exc)
    if model is not None and after is not None:
        train_part = [r for r in usable if not training.held_back(r.key)]
        index = _reference_for(after, learner, model, train_part, fresh=fresh)
        if index is not None:
            reference = index.dump()
            novelty = {"reference": index.size, "alpha": index.alpha, "k": index.k}
        if fresh and fit is not None:
            calibration = fit.calibration  # cross-fitted over every clinician label
            folds = learner.settings.folds
            how = f"cross-fitted over {len(calibration)} clinician labels ({folds} folds)"
        else:
            calibration = learner.held_back_calibration(model, index, records, waivers=in_force)
            how = (
                f"the {len(calibration)} held-back clinician labels (the active model is not "
                "the one just trained)"
            )
        table = learner.thresholds_from(calibration)
        risk = {
            "method": learner.settings.method,
            "alpha": learner.settings.alpha,
            "delta": learner.settings.delta,
            "calibration": how,
            "documents": len(calibration),
            "candidates": sum(1 for c in calibration if c.accepted),
            "errors": sum(1 for c in calibration if c.accepted and not c.correct),
            "novel": sum(1 for c in calibration if not c.accepted),
        }
    return Computed(
        outcome=outcome,
        reason=reason,
        candidate=candidate_row,
        active_before=before,
        active_after=after,
        figures=figures,
        table=table,
        risk=risk,
        novelty=novelty,
        reference=reference,
        issues=issues,
        ground_truth=len(records),
    )


def _reference_for(
    row: TrainedClassifierModel,
    learner: Learner,
    model: Any,
    train_part: list[Example],
    *,
    fresh: bool,
) -> NoveltyIndex | None:
    """The novelty reference of the active model: its own training documents when it was
    just trained; else the reference stored when it was made active, or (a model trained by
    manage.py train_classifier) the current non-held-back ground truth."""
    if not fresh:
        stored = (
            LearningAttempt.objects.filter(active_after=row, novelty_reference__isnull=False)
            .order_by("-finished_at")
            .values_list("novelty_reference", flat=True)
            .first()
        )
        if stored:
            try:
                return NoveltyIndex.load(bytes(stored), _words(model))
            except (ValueError, KeyError) as exc:
                logger.warning("stored novelty reference not loaded: %s", exc)
    if len(train_part) < 2:
        return None
    return learner.novelty_index(model, train_part)


def _words(model: Any) -> Any:
    from reliability.learner import words_vectorizer

    return words_vectorizer(model)


# -- what a run reads ----------------------------------------------------------------------------

_checks: dict[str, Any] = {}
_checks_lock = threading.Lock()


def _forget() -> None:
    with _checks_lock:
        _checks.clear()


@dataclass
class RunChecks:
    table: ThresholdTable | None
    index: NoveltyIndex | None
    attempt_id: int | None


def run_checks(primary: Any) -> RunChecks:
    """The thresholds and novelty index a run uses. Thresholds apply when the primary is the
    active trained model they were certified for: until the loop has certified any, the
    preset's fixed threshold stands (None); once it has, a model with no certificate of its
    own (rolled back to, say, until the next attempt) accepts nothing (an empty table)."""
    if not (settings.RISK_CONTROL or settings.NOVELTY) or not settings.TRAINED_CLASSIFIER:
        return RunChecks(None, None, None)
    row = TrainedClassifierModel.objects.filter(active=True).defer("blob").first()
    if row is None:
        return RunChecks(None, None, None)
    attempt = (
        LearningAttempt.objects.filter(active_after=row, status=LearningAttempt.Status.COMPLETED)
        .defer("novelty_reference")
        .order_by("-finished_at", "-pk")
        .first()
    )
    key = f"{row.pk}:{attempt.pk if attempt else 0}"
    with _checks_lock:
        if key in _checks:
            found: RunChecks = _checks[key]
            return _for_primary(found, primary, row)
    table: ThresholdTable | None = None
    index: NoveltyIndex | None = None
    if attempt is not None:
        table = table_from(attempt.thresholds)
        blob = (
            LearningAttempt.objects.filter(pk=attempt.pk)
            .values_list("novelty_reference", flat=True)
            .first()
        )
        model = training.active_model()
        if blob and model is not None:
            try:
                index = NoveltyIndex.load(bytes(blob), _words(model))
            except (ValueError, KeyError) as exc:
                logger.warning("novelty reference of attempt %s not loaded: %s", attempt.pk, exc)
    elif LearningAttempt.objects.filter(
        status=LearningAttempt.Status.COMPLETED, active_after__isnull=False
    ).exists():
        table = ThresholdTable({})
    found = RunChecks(table, index, attempt.pk if attempt else None)
    with _checks_lock:
        _checks.clear()
        _checks[key] = found
    return _for_primary(found, primary, row)


def _for_primary(found: RunChecks, primary: Any, row: TrainedClassifierModel) -> RunChecks:
    table = found.table if settings.RISK_CONTROL else None
    if not (isinstance(primary, TrainedClassifier) and primary.trained.version == row.version):
        table = None  # certified for the trained chain: another primary keeps its preset
    return RunChecks(table, found.index if settings.NOVELTY else None, found.attempt_id)


# -- the exemplar memory -------------------------------------------------------------------------

MEMORY_MARKER = "learning:memory-marker"
_memory: dict[str, Any] = {}
_memory_lock = threading.Lock()


def memory_note_change(kind: str, data: dict[str, Any]) -> None:
    """Receiver of core.events.published (config.wiring): a new ground-truth version moves a
    marker every process shares (the cache), once its transaction commits, so each process's
    memory is rebuilt at its next run; a clinician's decision rebuilds it at once."""
    if kind == "packet.decided":
        # A clinician's decision: the sources' records are computed again once it commits
        # (after the marker below moved: its ground-truth version was published first), not
        # at the next run, so a decision that certifies a source is recorded as it is made
        # (certifications_record). Auto-accepted answers never enter the memory and skip it.
        # A failure here costs the line on a packet page, never the decision: robust.
        transaction.on_commit(run_memory, robust=True)
        return
    if kind != "ground_truth.changed":
        return
    marker = f"{time.time():.6f}:{data.get('ground_truth_id')}"
    transaction.on_commit(lambda: cache_set(MEMORY_MARKER, marker, timeout=None))


def run_memory() -> tuple[ExemplarMemory | None, dict[str, CellTrust]]:
    """The clinician labels as an exemplar memory in the active model's word space, and each
    source's trust record, rebuilt when the model, the marker or the count of clinician
    labels moved. None without a trained model or with LEARNING_MEMORY off."""
    if not settings.LEARNING_MEMORY or not settings.TRAINED_CLASSIFIER:
        return None, {}
    row = TrainedClassifierModel.objects.filter(active=True).values_list("version", flat=True)
    version = row.first()
    if version is None:
        return None, {}
    key = f"{version}:{cache_get(MEMORY_MARKER, '')}:{clinician_labels()}"
    with _memory_lock:
        if key in _memory:
            found: tuple[ExemplarMemory | None, dict[str, CellTrust]] = _memory[key]
            return found
    model = training.active_model()
    memory = Learner(learner_settings()).memory(model, examples()) if model is not None else None
    trust = {source: memory.trust(source) for source in memory.sources()} if memory else {}
    if memory is not None:
        certifications_record(memory=memory, trust=trust, version=str(version))
    with _memory_lock:
        _memory.clear()
        _memory[key] = (memory, trust)
    return memory, trust


def certifications_record(
    *, memory: ExemplarMemory, trust: dict[str, CellTrust], version: str = ""
) -> list[SourceCertification]:
    """Record, for every source whose memory is trusted, the clinician label that made it so
    (CellTrust.certified_by), once (a row per source and label; a source certified again
    after a contradiction gets a row for the label that did it then). Returns the new rows."""
    cell_min = settings.LEARNING_MEMORY_CELL_MIN
    rows = []
    for source, record in trust.items():
        key = record.certified_by(cell_min)
        if key is None:
            continue
        rows.append(
            SourceCertification(
                source=source[:100],
                document_key=key,
                doc_type=memory.label_of(key) or "",
                confirmed=record.confirmed,
                contradicted=record.contradicted,
                bound=record.bound(settings.RISK_DELTA),
                cell_min=cell_min,
                model_version=version[:64],
            )
        )
    if not rows:
        return []
    known = set(
        SourceCertification.objects.filter(
            source__in=[r.source for r in rows], document_key__in=[r.document_key for r in rows]
        ).values_list("source", "document_key")
    )
    new = [r for r in rows if (r.source, r.document_key) not in known]
    SourceCertification.objects.bulk_create(new, ignore_conflicts=True)
    return new


def exemplar_vote(*, pages: list[str], source: str) -> ExemplarVote | None:
    """The memory's vote for a run's document: its look-alikes from the same source that
    clinicians labelled; trusted (able to raise the score) once the source's record allows
    (LEARNING_MEMORY_CELL_MIN confirmed votes since the last contradiction)."""
    memory, trust = run_memory()
    if memory is None:
        return None
    record = trust.get(source, CellTrust())
    return memory.vote(
        "\n\n".join(pages), source, trusted=record.trusted(settings.LEARNING_MEMORY_CELL_MIN)
    )


def table_from(rows: list[dict[str, Any]]) -> ThresholdTable:
    entries = {}
    for row in rows:
        entry = RiskThreshold(**{k: v for k, v in row.items()})
        entries[(entry.doc_type, entry.source)] = entry
    return ThresholdTable(entries)


def run_summary(
    result: ChainResult,
    *,
    checks: RunChecks,
    source: str,
    novelty: Novelty | None,
    exemplar: ExemplarVote | None = None,
    waived: list[str] | None = None,
) -> dict[str, Any]:
    """What Run.learning keeps: novelty, the score and the threshold, the learning value."""
    entry = checks.table.lookup(result.predicted, source) if checks.table is not None else None
    return {
        "source": source,
        "score": round(result.score, 4),
        "threshold": entry.threshold if entry is not None else None,
        "threshold_scope": (
            f"{entry.doc_type}/{entry.source}" if entry is not None else ""
        ).replace(f"/{ALL}", ""),
        "risk_control": checks.table is not None,
        "novelty": novelty.as_dict() if novelty is not None else None,
        "novel": bool(novelty is not None and novelty.novel),
        "gate_agrees": result.gate_agrees,
        "value": learning_value(result),
        "attempt": checks.attempt_id,
        "exemplar": {**exemplar.as_dict(), "trusted": exemplar.trusted}
        if exemplar is not None
        else None,
        "waived": list(waived or []),  # codes a learned waiver set aside (reliability.waivers)
    }


# -- pin and rollback ----------------------------------------------------------------------------


def model_activate(*, row: TrainedClassifierModel, user: Any, pin: bool) -> None:
    """Make ``row`` the active model (a rollback, or a newer one), pinned or not. Its
    thresholds are certified again by an attempt queued now (until it ends, a model with no
    certificate accepts nothing)."""
    with transaction.atomic():
        TrainedClassifierModel.objects.filter(active=True).exclude(pk=row.pk).update(active=False)
        TrainedClassifierModel.objects.filter(pk=row.pk).update(
            active=True, activated_at=timezone.now()
        )
        if pin:
            LearningPin.objects.update_or_create(
                pk=1, defaults={"model": row, "pinned_by": user, "note": "pinned by an admin"}
            )
        else:
            LearningPin.objects.filter(pk=1).exclude(model=row).delete()
    _forget()
    learning_schedule(trigger=LearningAttempt.Trigger.MANUAL, user=user)


def model_unpin(*, user: Any) -> bool:
    deleted, _ = LearningPin.objects.filter(pk=1).delete()
    return bool(deleted)


__all__ = [
    "CrossFit",
    "RunChecks",
    "document_source",
    "learning_due",
    "learning_execute",
    "learning_schedule",
    "model_activate",
    "model_unpin",
    "run_checks",
    "run_summary",
]
