"""Review workflows: locks, decisions, corrections, ground truth, audit and export."""

from __future__ import annotations

import csv
import io
import json
import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from reliability.schemas import (
    DOC_TYPES,
    ClassificationOutput,
    DocType,
    MixtureEntry,
    Presence,
    Segment,
    SelfEvaluation,
    TypeAssessment,
)
from reliability.services import ground_truth_record
from review.models import AuditEvent, GroundTruth, Review, ReviewPacket

logger = logging.getLogger(__name__)

OPEN_STATUSES = (ReviewPacket.Status.PENDING, ReviewPacket.Status.IN_REVIEW)


class ReviewRefused(Exception):
    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def audit_record(*, user: Any, action: str, obj: Any, detail: dict[str, Any] | None = None) -> None:
    AuditEvent.objects.create(
        user=user if getattr(user, "is_authenticated", False) else None,
        username=getattr(user, "username", "") or "system",
        action=action,
        object_type=type(obj).__name__,
        object_id=str(obj.pk),
        detail=detail or {},
    )


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


def packet_open(*, packet: ReviewPacket, user: Any) -> bool:
    """Record the view and take (or renew) the lock when it is free. True if the user holds it."""
    audit_record(
        user=user,
        action=AuditEvent.Action.VIEWED_PACKET,
        obj=packet,
        detail={"document": str(packet.document_id), "status": packet.status},
    )
    if packet.status == ReviewPacket.Status.COMPLETED:
        return False
    now = timezone.now()
    expires = now + timedelta(minutes=settings.REVIEW_LOCK_MINUTES)
    taken = (
        ReviewPacket.objects.filter(pk=packet.pk, status__in=OPEN_STATUSES)
        .filter(lock_available(user, now))
        .update(locked_by=user, lock_expires_at=expires, status=ReviewPacket.Status.IN_REVIEW)
    )
    packet.refresh_from_db()
    return bool(taken)


def packet_release(*, packet: ReviewPacket, user: Any) -> None:
    ReviewPacket.objects.filter(
        pk=packet.pk, locked_by=user, status=ReviewPacket.Status.IN_REVIEW
    ).update(locked_by=None, lock_expires_at=None, status=ReviewPacket.Status.PENDING)


def next_packet_for(user: Any) -> ReviewPacket | None:
    """The highest-priority open packet this user may take: BLOCKER first, then oldest."""
    now = timezone.now()
    return (
        ReviewPacket.objects.filter(status__in=OPEN_STATUSES)
        .filter(lock_available(user, now))
        .order_by("priority", "created_at", "pk")
        .first()
    )


@dataclass(frozen=True)
class Correction:
    dominant_type: DocType
    segments: list[tuple[int, int, DocType]]
    mixture: dict[DocType, float]
    present: list[DocType]  # types the classifier missed, marked present by the reviewer


def corrected_output(correction: Correction) -> ClassificationOutput:
    segments = []
    for start, end, doc_type in correction.segments:
        types = []
        for t in DOC_TYPES:
            if t == doc_type:
                presence, share, confidence = Presence.PRIMARY, 1.0, 1.0
            elif t in correction.present:
                presence, share, confidence = Presence.MENTION_ONLY, 0.0, 1.0
            else:
                presence, share, confidence = Presence.NO_EVIDENCE, 0.0, 1.0
            types.append(
                TypeAssessment(
                    type=t,
                    presence_level=presence,
                    confidence=confidence,
                    segment_share=share,
                    reasoning="Set by a clinician.",
                )
            )
        segments.append(
            Segment(
                start_page=start,
                end_page=end,
                segment_page_count=end - start + 1,
                dominant_type=doc_type,
                types=types,
            )
        )
    primary = {t for _, _, t in correction.segments}
    mixture = [
        MixtureEntry(
            type=t,
            overall_share=round(correction.mixture.get(t, 0.0), 4),
            presence_level=Presence.PRIMARY
            if t in primary
            else Presence.MENTION_ONLY
            if t in correction.present
            else Presence.NO_EVIDENCE,
        )
        for t in DOC_TYPES
    ]
    return ClassificationOutput(
        dominant_type_overall=correction.dominant_type,
        number_of_segments=len(segments),
        segments=segments,
        document_mixture=mixture,
        self_evaluation=SelfEvaluation(confidence=1.0, concerns=[]),
    )


def review_submit(
    *, packet_id: int, reviewer: Any, correction: Correction | None, notes: str
) -> Review:
    """Validate (correction None) or correct a packet. Exactly one decision per packet: the
    packet row is locked for the transaction, so racing submissions are serialised and the
    second finds the packet completed."""
    with transaction.atomic():
        packet = (
            ReviewPacket.objects.select_for_update()
            .select_related("run", "document")
            .get(pk=packet_id)
        )
        if packet.status == ReviewPacket.Status.COMPLETED:
            raise ReviewRefused("This packet has already been decided.")
        if not lock_is_free(packet, reviewer):
            raise ReviewRefused(
                f"{packet.locked_by.get_full_name() or packet.locked_by.username} is "  # type: ignore[union-attr]
                f"reviewing this packet until {timezone.localtime(packet.lock_expires_at):%H:%M}."
            )
        if correction is None:
            output = ClassificationOutput.model_validate(packet.classification)
            outcome, source = Review.Outcome.VALIDATED, GroundTruth.Source.SME_VALIDATED
        else:
            output = corrected_output(correction)
            outcome, source = Review.Outcome.CORRECTED, GroundTruth.Source.SME_CORRECTED
        truth = ground_truth_record(
            document=packet.document,
            run=packet.run,
            output=output,
            source=source,
            field_corrections=packet.field_corrections,
            reviewer=reviewer,
        )
        review = Review.objects.create(
            packet=packet,
            reviewer=reviewer,
            outcome=outcome,
            corrected_dominant_type=correction.dominant_type.value if correction else "",
            corrected_segments=[[a, b, t.value] for a, b, t in correction.segments]
            if correction
            else [],
            corrected_mixture={t.value: v for t, v in correction.mixture.items()}
            if correction
            else {},
            notes=notes,
            ground_truth=truth,
            started_at=packet.lock_expires_at - timedelta(minutes=settings.REVIEW_LOCK_MINUTES)
            if packet.lock_expires_at
            else None,
        )
        packet.status = ReviewPacket.Status.COMPLETED
        packet.locked_by = None
        packet.lock_expires_at = None
        packet.save(update_fields=["status", "locked_by", "lock_expires_at", "updated_at"])
        audit_record(
            user=reviewer,
            action=AuditEvent.Action.DECIDED,
            obj=packet,
            detail={
                "outcome": outcome,
                "ground_truth": truth.pk,
                "dominant_type": output.dominant_type_overall.value,
            },
        )
    logger.info("packet %s %s by user %s", packet_id, outcome, reviewer.pk)
    return review


# -- export -------------------------------------------------------------------------------------

EXPORT_FIELDS = [
    "document_id",
    "document_sha256",
    "filename",
    "version",
    "source",
    "dominant_type",
    "run_id",
    "model",
    "prompt_version",
    "reviewer",
    "decided_at",
    "classification",
    "fields",
]


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


def _record(truth: GroundTruth) -> dict[str, Any]:
    return {
        "document_id": str(truth.document_id),
        "document_sha256": truth.document.sha256,
        "filename": truth.document.original_filename,
        "version": truth.version,
        "source": truth.source,
        "dominant_type": truth.dominant_type,
        "run_id": truth.run_id,
        "model": truth.model,
        "prompt_version": truth.prompt_version,
        "reviewer": truth.reviewer.username if truth.reviewer else None,
        "decided_at": truth.created_at.astimezone(UTC).isoformat(),
        "classification": truth.classification,
        "fields": truth.fields,
    }


def export_ground_truth(records: QuerySet[GroundTruth], *, fmt: str) -> bytes:
    """JSONL or CSV, byte-identical for the same records (stable order, sorted keys)."""
    rows = [_record(t) for t in records]
    if fmt == "jsonl":
        return "".join(
            json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows
        ).encode()
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(EXPORT_FIELDS)
        for r in rows:
            r = dict(
                r,
                classification=json.dumps(r["classification"], sort_keys=True),
                fields=json.dumps(r["fields"], sort_keys=True),
            )
            writer.writerow(["" if r[f] is None else r[f] for f in EXPORT_FIELDS])
        return buffer.getvalue().encode()
    raise ValueError(f"unknown export format {fmt!r}")
