"""Reads for the review pages, exports and the engine's hand-offs: queue, locks, packet
context, metrics, ground truth. No writes here."""

from __future__ import annotations

import re
import statistics
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Avg, Count, Min, Q, QuerySet, Sum
from django.utils import timezone

from documents.models import Document, Page
from engine.schemas import DISPLAY_NAMES, DOC_TYPES, ClassificationOutput, Severity
from reliability import llm_runtime
from reliability.models import Attempt, Extraction, Run
from review.evidence import context_for
from review.models import GroundTruth, Review, ReviewPacket

# -- locks and the queue ----------------------------------------------------------------------


def lock_available(user: Any, now: datetime) -> Q:
    """Packets this user may lock: unlocked, locked by the user, or with an expired lock.
    The same rule as lock_is_free, for querysets."""
    return (
        Q(locked_by__isnull=True)
        | Q(locked_by=user)
        | Q(lock_expires_at__isnull=True)
        | Q(lock_expires_at__lte=now)
    )


def lock_is_free(packet: ReviewPacket, user: Any, *, now: datetime | None = None) -> bool:
    now = now or timezone.now()
    return (
        packet.locked_by_id is None
        or packet.locked_by_id == user.pk
        or packet.lock_expires_at is None
        or packet.lock_expires_at <= now
    )


def next_packet_for(user: Any) -> ReviewPacket | None:
    """The highest-priority open packet this user may take: BLOCKER first, then oldest."""
    now = timezone.now()
    return (
        ReviewPacket.objects.filter(status__in=ReviewPacket.OPEN_STATUSES)
        .filter(lock_available(user, now))
        .order_by("priority", "created_at", "pk")
        .first()
    )


def queue_packets(*, status: str, doc_type: str, severity: str) -> QuerySet[ReviewPacket]:
    """The queue's rows for a filter, BLOCKER first, then oldest."""
    packets = ReviewPacket.objects.select_related("document", "locked_by").only(
        "pk",
        "status",
        "priority",
        "dominant_type",
        "worst_severity",
        "issue_count",
        "created_at",
        "lock_expires_at",
        "document__original_filename",
        "document__page_count",
        "locked_by__username",
        "locked_by__first_name",
        "locked_by__last_name",
    )
    if status == "open":
        packets = packets.filter(status__in=ReviewPacket.OPEN_STATUSES)
    elif status in ReviewPacket.Status.values:
        packets = packets.filter(status=status)
    if doc_type in {t.value for t in DOC_TYPES}:
        packets = packets.filter(dominant_type=doc_type)
    if severity in Severity.__members__:
        packets = packets.filter(worst_severity=severity)
    return packets.order_by("priority", "created_at", "pk")


def queue_counts() -> dict[str, int]:
    today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    return ReviewPacket.objects.aggregate(
        pending=Count("pk", filter=Q(status=ReviewPacket.Status.PENDING)),
        in_review=Count("pk", filter=Q(status=ReviewPacket.Status.IN_REVIEW)),
        blockers=Count("pk", filter=Q(status__in=ReviewPacket.OPEN_STATUSES, priority=0)),
        completed_today=Count(
            "pk", filter=Q(status=ReviewPacket.Status.COMPLETED, updated_at__gte=today)
        ),
    )


# -- one packet -------------------------------------------------------------------------------


def evidence_contexts(packet: ReviewPacket) -> list[dict[str, Any]]:
    wanted = {g["found_page"] or g["page"] for g in packet.grounding}
    pages = {
        p.number: p.paragraphs
        for p in Page.objects.filter(document_id=packet.document_id, number__in=wanted).only(
            "number", "paragraphs"
        )
    }
    contexts = []
    for entry in packet.grounding:
        page = entry["found_page"] or entry["page"]
        paragraphs = pages.get(page, [])
        found_here = entry["found"]
        context = context_for(
            paragraphs,
            entry["start"] if entry["found_page"] else None,
            entry["end"] if entry["found_page"] else None,
            page=page,
        )
        contexts.append(
            {
                **entry,
                "context": context,
                "on_claimed_page": found_here,
                "is_pdf": packet.document.mime_type == Document.MIME_PDF,
            }
        )
    return contexts


def packet_issues(
    packet: ReviewPacket, output: ClassificationOutput, evidence: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The packet's issues, each with the evidence it is about (at most two snippets)."""
    issues = []
    for issue in packet.issues:
        location = issue.get("location", "")
        related = [e for e in evidence if location and e["location"].startswith(location)]
        segment = re.match(r"segments\[(\d+)\]", location)
        if not related and segment and int(segment.group(1)) < len(output.segments):
            # A segment-level issue: show the evidence behind the type the segment claims.
            claimed = output.segments[int(segment.group(1))].dominant_type.value
            prefix = f"{segment.group(0)}.types.{claimed}."
            related = [e for e in evidence if e["location"].startswith(prefix)]
        issues.append({**issue, "evidence": related[:2]})
    return issues


def packet_attempts(packet: ReviewPacket) -> list[Attempt]:
    return list(
        Attempt.objects.filter(run_id=packet.run_id)
        .only(
            "number",
            "source",
            "decision",
            "decision_rule",
            "fixes_applied",
            "quality_score",
            "duration_seconds",
            "note",
        )
        .order_by("number")
    )


def packet_extractions(packet: ReviewPacket) -> list[dict[str, Any]]:
    rows = []
    for extraction in Extraction.objects.filter(run_id=packet.run_id).order_by("segment_index"):
        fields = []
        for name, data in extraction.fields.items():
            key = f"{extraction.segment_index}:{name}"
            value = data.get("value")
            shown = "; ".join(value) if isinstance(value, list) else (value or "")
            fields.append(
                {
                    "key": key,
                    "name": name,
                    "value": shown,
                    "corrected": packet.field_corrections.get(key),
                    "status": data.get("status"),
                    "confidence": data.get("confidence"),
                    "snippet": data.get("snippet"),
                    "page": data.get("page"),
                }
            )
        rows.append({"extraction": extraction, "fields": fields})
    return rows


def packet_snippets_on_page(packet: ReviewPacket, number: int) -> list[str]:
    """The grounded evidence snippets found on one page, for its highlighted image."""
    return sorted(
        {g["snippet"] for g in packet.grounding if g["found"] and g["found_page"] == number}
    )


# -- ground truth -----------------------------------------------------------------------------


def current_ground_truth(document: Document) -> GroundTruth | None:
    return (
        GroundTruth.objects.filter(document=document, superseded_by__isnull=True)
        .select_related("reviewer")
        .first()
    )


def ground_truth_fields(
    run: Run, corrections: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Per segment: doc type and each field's value/status/confidence/snippet, with any
    reviewer corrections applied (marked as such)."""
    corrections = corrections or {}
    records = []
    for extraction in run.extractions.filter(status=Extraction.Status.COMPLETED):
        fields = {}
        for name, data in extraction.fields.items():
            key = f"{extraction.segment_index}:{name}"
            if key in corrections:
                fields[name] = {
                    **data,
                    "value": corrections[key],
                    "status": "found",
                    "corrected": True,
                }
            else:
                fields[name] = {
                    k: data.get(k) for k in ("value", "status", "confidence", "snippet", "page")
                }
        records.append(
            {
                "segment": extraction.segment_index,
                "doc_type": extraction.doc_type,
                "pages": [extraction.start_page, extraction.end_page],
                "fields": fields,
            }
        )
    return records


def ground_truth_selection(
    *,
    start: date | None = None,
    end: date | None = None,
    source: str = "",
    doc_type: str = "",
    all_versions: bool = False,
) -> QuerySet[GroundTruth]:
    records = GroundTruth.objects.select_related("document", "reviewer", "run")
    if not all_versions:
        records = records.filter(superseded_by__isnull=True)  # the current version only
    if start:
        records = records.filter(created_at__date__gte=start)
    if end:
        records = records.filter(created_at__date__lte=end)
    if source:
        records = records.filter(source=source)
    if doc_type:
        records = records.filter(dominant_type=doc_type)
    return records.order_by("document__sha256", "version")


# -- metrics ----------------------------------------------------------------------------------


def _bars(rows: list[tuple[str, float]], *, width: int = 420, unit: str = "") -> dict[str, Any]:
    peak = max((v for _, v in rows), default=0) or 1
    return {
        "rows": [
            {"label": label, "value": value, "width": round(width * value / peak), "y": i * 26}
            for i, (label, value) in enumerate(rows)
        ],
        "height": 26 * len(rows),
        "width": width,
        "unit": unit,
    }


def review_metrics() -> dict[str, Any]:
    """Decision mix, auto-fix success, attempts, turnaround and reviewer agreement per type."""
    runs = Run.objects.filter(status=Run.Status.COMPLETED)
    decided = runs.aggregate(
        total=Count("pk"),
        accepted=Count("pk", filter=Q(final_decision="AUTO_ACCEPT")),
        escalated=Count("pk", filter=Q(final_decision="ESCALATE_TO_SME")),
        retried=Count("pk", filter=Q(attempts_count__gt=1)),
        retried_accepted=Count("pk", filter=Q(attempts_count__gt=1, final_decision="AUTO_ACCEPT")),
        llm_calls=Avg("llm_calls"),
    )
    attempts = sorted(runs.values_list("attempts_count", flat=True))
    reviews = list(
        Review.objects.select_related("packet").only(
            "outcome", "finished_at", "packet__created_at", "packet__dominant_type"
        )
    )
    turnaround = [(r.finished_at - r.packet.created_at).total_seconds() / 3600 for r in reviews]
    agreement: list[dict[str, Any]] = []
    for t in DOC_TYPES:
        mine = [r for r in reviews if r.packet.dominant_type == t.value]
        if mine:
            agreed = sum(r.outcome == Review.Outcome.VALIDATED for r in mine)
            agreement.append(
                {
                    "type": DISPLAY_NAMES[t],
                    "reviews": len(mine),
                    "agreed": agreed,
                    "rate": agreed / len(mine),
                }
            )
    total = decided["total"] or 0
    return {
        "documents": Document.objects.filter(status=Document.Status.READY).count(),
        "decided": decided,
        "escalation_rate": decided["escalated"] / total if total else 0.0,
        "autofix_success": decided["retried_accepted"] / decided["retried"]
        if decided["retried"]
        else None,
        "median_attempts": statistics.median(attempts) if attempts else None,
        "turnaround_hours": statistics.median(turnaround) if turnaround else None,
        "agreement": agreement,
        "decision_chart": _bars(
            [
                ("Auto-accepted", decided["accepted"]),
                ("Escalated", decided["escalated"]),
                ("Retried", decided["retried"]),
            ]
        ),
        "agreement_chart": _bars(
            [(a["type"], round(100 * a["rate"])) for a in agreement], unit="%"
        ),
        "since": timezone.now() - timedelta(days=30),
        "llm": llm_metrics(),
    }


LLM_TOTALS = {
    "calls": Sum("llm_calls"),
    "requests": Sum("llm_requests"),
    "cache_hits": Sum("llm_cache_hits"),
    "tokens_in": Sum("tokens_in"),
    "tokens_out": Sum("tokens_out"),
    "tokens_thinking": Sum("tokens_thinking"),
    "cost": Sum("cost_usd"),
}


def llm_metrics() -> dict[str, Any]:
    """Language-model use and spend, all from SQL aggregates: totals, per model, today against
    the daily budget, runs waiting (and why) and the shared circuit."""
    llm_runs = Run.objects.exclude(classifier="offline")
    totals = llm_runs.aggregate(runs=Count("pk"), **LLM_TOTALS)
    completed = llm_runs.filter(status=Run.Status.COMPLETED).aggregate(
        runs=Count("pk"),
        calls=Avg("llm_calls"),
        tokens_in=Avg("tokens_in"),
        tokens_out=Avg("tokens_out"),
        tokens_thinking=Avg("tokens_thinking"),
        cost=Avg("cost_usd"),
    )
    by_model = list(
        llm_runs.values("model").annotate(runs=Count("pk"), **LLM_TOTALS).order_by("-runs")
    )
    today = llm_runs.filter(started_at__gte=llm_runtime.day_start()).aggregate(
        runs=Count("pk"), calls=Sum("llm_calls"), cost=Sum("cost_usd")
    )
    waiting = Run.objects.filter(status=Run.Status.WAITING).aggregate(
        runs=Count("pk"),
        for_budget=Count("pk", filter=Q(wait_reason__startswith="the daily")),
        next_try=Min("retry_at"),
    )
    failed = llm_runs.filter(
        status=Run.Status.FAILED, error__startswith="The language model"
    ).count()
    budget = settings.LLM_DAILY_BUDGET_USD
    circuit = llm_runtime.circuit_state()
    return {
        "totals": totals,
        "per_completed_run": completed,
        "by_model": by_model,
        "today": today,
        "budget": budget,
        "budget_spent": bool(budget) and (today["cost"] or 0) >= budget,
        "waiting": waiting,
        "failed": failed,
        "circuit_open_until": datetime.fromtimestamp(
            circuit.paused_until, tz=timezone.get_current_timezone()
        )
        if circuit is not None and circuit.remaining() > 0
        else None,
        "circuit_reason": circuit.reason if circuit is not None else "",
    }
