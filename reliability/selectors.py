"""Reads of the reliability tables for the pages: the extraction loop's monitoring. Every
figure is an SQL aggregate; no row is loaded into Python."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Avg, Count, F, FloatField, Q
from django.db.models.functions import Cast
from django.utils import timezone

from core.aggregates import percentile
from engine.exemplars import CellTrust
from reliability.models import Extraction

SCORE_BANDS = (
    (0.0, 0.5, "below 0.50"),
    (0.5, 0.7, "0.50-0.70"),
    (0.7, 0.8, "0.70-0.80"),
    (0.8, 0.9, "0.80-0.90"),
    (0.9, 0.95, "0.90-0.95"),
    (0.95, 1.01, "0.95 and above"),
)


@dataclass(frozen=True)
class Alert:
    key: str
    label: str
    value: float | None
    threshold: float
    direction: str  # "max": warn above the threshold; "min": warn below it

    @property
    def crossed(self) -> bool:
        if self.value is None:
            return False
        if self.direction == "max":
            return self.value > self.threshold
        return self.value < self.threshold

    @property
    def rule(self) -> str:
        return f"{'at most' if self.direction == 'max' else 'at least'} {self.threshold:g}"


def loop_monitoring(*, now: datetime | None = None) -> dict[str, Any]:
    """The evaluator-optimizer loop over completed extractions of the monitoring window:
    iterations per extraction, final scores, threshold-met rate, processing time (p50, p95),
    mean improvement per extra iteration, each against its alert threshold."""
    now = now or timezone.now()
    rows = Extraction.objects.filter(status=Extraction.Status.COMPLETED, final_score__isnull=False)
    days = settings.LOOP_MONITORING_DAYS
    if days:
        rows = rows.filter(created_at__gte=now - timedelta(days=days))
    per_iteration = (F("final_score") - F("first_score")) / Cast(
        F("iterations_count") - 1, output_field=FloatField()
    )
    totals = rows.aggregate(
        count=Count("pk"),
        mean_iterations=Avg("iterations_count"),
        mean_score=Avg("final_score"),
        met=Count("pk", filter=Q(met_threshold=True)),
        improved_rows=Count("pk", filter=Q(iterations_count__gt=1, first_score__isnull=False)),
        mean_improvement=Avg(
            per_iteration,
            filter=Q(iterations_count__gt=1, first_score__isnull=False),
            output_field=FloatField(),
        ),
        **{
            f"band_{index}": Count("pk", filter=Q(final_score__gte=low, final_score__lt=high))
            for index, (low, high, _) in enumerate(SCORE_BANDS)
        },
    )
    count = totals["count"] or 0
    counts = rows.values("iterations_count").annotate(n=Count("pk"))
    iterations = [
        {"iterations": r["iterations_count"], "extractions": r["n"]}
        for r in counts.order_by("iterations_count")
    ]
    by_type = [
        {**row, "met_rate": row["met"] / row["extractions"]}
        for row in rows.values("doc_type")
        .annotate(
            extractions=Count("pk"),
            mean_score=Avg("final_score"),
            met=Count("pk", filter=Q(met_threshold=True)),
        )
        .order_by("doc_type")
    ]
    stopped = list(
        rows.values("stopped_reason").annotate(n=Count("pk")).order_by("-n", "stopped_reason")
    )
    met_rate = totals["met"] / count if count else None
    p50 = percentile(rows, "seconds", 0.5) if count else None
    p95 = percentile(rows, "seconds", 0.95) if count else None
    alerts = [
        Alert(
            "mean_iterations",
            "Mean iterations per extraction",
            totals["mean_iterations"],
            settings.LOOP_ALERT_MAX_MEAN_ITERATIONS,
            "max",
        ),
        Alert(
            "mean_score",
            "Mean final score",
            totals["mean_score"],
            settings.LOOP_ALERT_MIN_MEAN_SCORE,
            "min",
        ),
        Alert(
            "threshold_met_rate",
            "Threshold-met rate",
            met_rate,
            settings.LOOP_ALERT_MIN_THRESHOLD_MET_RATE,
            "min",
        ),
        Alert(
            "p95_seconds",
            "Processing time p95 (s)",
            p95,
            settings.LOOP_ALERT_MAX_P95_SECONDS,
            "max",
        ),
        Alert(
            "mean_improvement",
            "Mean improvement per extra iteration",
            totals["mean_improvement"],
            settings.LOOP_ALERT_MIN_IMPROVEMENT,
            "min",
        ),
    ]
    peak = max((r["extractions"] for r in iterations), default=0) or 1
    band_peak = max((totals[f"band_{i}"] for i in range(len(SCORE_BANDS))), default=0) or 1
    return {
        "window_days": days,
        "extractions": count,
        "mean_iterations": totals["mean_iterations"],
        "mean_score": totals["mean_score"],
        "threshold_met_rate": met_rate,
        "p50_seconds": p50,
        "p95_seconds": p95,
        "mean_improvement": totals["mean_improvement"],
        "improved_extractions": totals["improved_rows"],
        "iterations": [{**r, "width": round(300 * r["extractions"] / peak)} for r in iterations],
        "score_bands": [
            {
                "band": name,
                "extractions": totals[f"band_{index}"],
                "width": round(300 * totals[f"band_{index}"] / band_peak),
            }
            for index, (_, _, name) in enumerate(SCORE_BANDS)
        ],
        "by_type": by_type,
        "stopped": stopped,
        "alerts": alerts,
        "alerts_crossed": [a for a in alerts if a.crossed],
    }


# -- the learning loop ----------------------------------------------------------------------------

LEARNING_DAYS = 60  # the time series of the metrics page
NOVELTY_ALERT_MIN_RUNS = 20  # fewer runs in the window than this: a rate is not an alert


def source_certification(*, document_id: Any, doc_type: str | None) -> Any:
    """The record that the clinician label of ``document_id`` (of type ``doc_type``) certified
    its source's exemplar memory (reliability.learning.certifications_record), or None. The
    document's records are read in one query whatever ``doc_type`` is (None: the user may not
    see the decision, review.visibility), so a page takes the same queries under a blind check
    as without one."""
    from reliability.models import SourceCertification

    records = SourceCertification.objects.filter(document_key=str(document_id)).order_by(
        "-created_at"
    )
    return next((r for r in records if doc_type is not None and r.doc_type == doc_type), None)


def learning_sources(runs: Any, window: Any) -> list[dict[str, Any]]:
    """Per source (at most 20, busiest first): escalation in the novelty window ("now") and
    over the whole chart period, and its exemplar memory's record (engine.exemplars.CellTrust):
    clinician labels remembered, unanimous votes confirmed and contradicted, the upper bound
    of the votes' error rate, and the confirmations still needed before it is trusted."""
    from reliability.learning import run_memory

    def rates(queryset: Any) -> dict[str, tuple[int, int]]:
        rows = (
            queryset.values(key=F("learning__source"))
            .annotate(
                runs=Count("pk"),
                escalated=Count("pk", filter=Q(final_decision="ESCALATE_TO_SME")),
            )
            .order_by("-runs")
        )
        return {str(r["key"] or "(none)"): (r["runs"], r["escalated"]) for r in rows}

    period, recent = rates(runs), rates(window)
    memory, trust = run_memory()
    out = []
    for source in list(period)[:20]:
        record = trust.get(source)
        n, e = recent.get(source, (0, 0))
        total, escalated = period[source]
        out.append(
            {
                "source": source,
                "runs_now": n,
                "escalation_now": e / n if n else None,
                "runs": total,
                "escalation": escalated / total if total else None,
                "labels": memory.count(source) if memory is not None else 0,
                "confirmed": record.confirmed if record else 0,
                "contradicted": record.contradicted if record else 0,
                "bound": record.bound(settings.RISK_DELTA) if record else 1.0,
                "needed": (record or CellTrust()).needed(settings.LEARNING_MEMORY_CELL_MIN),
                "trusted": bool(record and record.trusted(settings.LEARNING_MEMORY_CELL_MIN)),
                "certified_by": record.certified_by(settings.LEARNING_MEMORY_CELL_MIN)
                if record
                else None,
            }
        )
    return out


def learning_overview(*, now: datetime | None = None) -> dict[str, Any]:
    """The learning loop for the metrics page: per day, runs, escalations and novel documents;
    model activations; the thresholds in force and the data behind them; the novelty rate of
    the last NOVELTY_WINDOW_DAYS overall, per source and per uploader; the last attempts."""
    from django.db.models.functions import TruncDate

    from reliability.models import LearningAttempt, LearningPin, Run, TrainedClassifierModel

    now = now or timezone.now()
    since = now - timedelta(days=LEARNING_DAYS)
    runs = Run.objects.filter(status=Run.Status.COMPLETED, finished_at__gte=since)
    daily = list(
        runs.annotate(day=TruncDate("finished_at"))
        .values("day")
        .annotate(
            runs=Count("pk"),
            escalated=Count("pk", filter=Q(final_decision="ESCALATE_TO_SME")),
            novel=Count("pk", filter=Q(learning__novel=True)),
        )
        .order_by("day")
    )
    activations = list(
        TrainedClassifierModel.objects.filter(activated_at__gte=since)
        .order_by("activated_at")
        .values("pk", "version", "activated_at", "active")
    )
    active = TrainedClassifierModel.objects.filter(active=True).defer("blob").first()
    attempt = (
        LearningAttempt.objects.filter(active_after=active, status=LearningAttempt.Status.COMPLETED)
        .defer("novelty_reference")
        .order_by("-finished_at", "-pk")
        .first()
        if active is not None
        else None
    )
    window = runs.filter(finished_at__gte=now - timedelta(days=settings.NOVELTY_WINDOW_DAYS))
    novelty_total = window.aggregate(
        runs=Count("pk"), novel=Count("pk", filter=Q(learning__novel=True))
    )

    def grouped(field: str) -> list[dict[str, Any]]:
        rows = (
            window.values(key=F(field))
            .annotate(runs=Count("pk"), novel=Count("pk", filter=Q(learning__novel=True)))
            .order_by("-runs")[:20]
        )
        return [
            {
                "key": row["key"] or "(none)",
                "runs": row["runs"],
                "novel": row["novel"],
                "rate": row["novel"] / row["runs"] if row["runs"] else 0.0,
                "alert": row["runs"] >= NOVELTY_ALERT_MIN_RUNS
                and row["novel"] / row["runs"] > settings.NOVELTY_ALERT_RATE,
            }
            for row in rows
        ]

    rate = novelty_total["novel"] / novelty_total["runs"] if novelty_total["runs"] else 0.0
    by_source = grouped("learning__source")
    by_uploader = grouped("document__uploaded_by__username")
    pin = LearningPin.objects.select_related("model", "pinned_by").first()
    from reliability.training import model_check

    return {
        "sources": learning_sources(runs, window),
        "daily": daily,
        "activations": activations,
        "active": active,
        # A model that fails its signature is not used: the page says so (not a log line).
        "active_check": model_check(active) if active is not None else None,
        "pin": pin,
        "attempt": attempt,
        "thresholds": attempt.thresholds if attempt is not None else [],
        "risk": attempt.risk if attempt is not None else {},
        "risk_control": settings.RISK_CONTROL,
        "risk_method": settings.RISK_METHOD,
        "target": settings.TARGET_ACCEPTED_ERROR,
        "delta": settings.RISK_DELTA,
        "novelty_window_days": settings.NOVELTY_WINDOW_DAYS,
        "novelty_runs": novelty_total["runs"],
        "novelty_novel": novelty_total["novel"],
        "novelty_rate": rate,
        "novelty_alert_rate": settings.NOVELTY_ALERT_RATE,
        "novelty_alert": novelty_total["runs"] >= NOVELTY_ALERT_MIN_RUNS
        and rate > settings.NOVELTY_ALERT_RATE,
        "novelty_by_source": by_source,
        "novelty_by_uploader": by_uploader,
        "novelty_alerts": [r["key"] for r in by_source + by_uploader if r["alert"]],
        "attempts": list(
            LearningAttempt.objects.defer("novelty_reference", "figures", "thresholds")
            .select_related("candidate", "active_after")
            .order_by("-created_at", "-pk")[:10]
        ),
    }
