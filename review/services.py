"""Review workflows: packets, locks, decisions, corrections, ground truth and audit.

The review app owns these tables; the reliability app asks these services to write them
(packet_create, ground_truth_record) and never writes them itself."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from config.errors import Refused
from documents.models import Document
from engine import pipeline
from engine.schemas import (
    DOC_TYPES,
    SEVERITY_ORDER,
    ClassificationOutput,
    DocType,
    MixtureEntry,
    Presence,
    Segment,
    SelfEvaluation,
    Severity,
    TypeAssessment,
    sort_issues,
)
from engine.schemas import Issue as EngineIssue
from integrations.models import Event
from integrations.services import event_emit
from reliability.models import Run
from review.models import AuditEvent, GroundTruth, Review, ReviewPacket
from review.selectors import (
    ground_truth_fields,
    lock_available,
    lock_is_free,
    packet_extractions,
)

logger = logging.getLogger(__name__)


class ReviewRefused(Refused):
    status = 409


def audit_record(*, user: Any, action: str, obj: Any, detail: dict[str, Any] | None = None) -> None:
    AuditEvent.objects.create(
        user=user if getattr(user, "is_authenticated", False) else None,
        username=getattr(user, "username", "") or "system",
        action=action,
        object_type=type(obj).__name__,
        object_id=str(obj.pk),
        detail=detail or {},
    )


def _history(outcome: pipeline.Outcome) -> list[dict[str, Any]]:
    return [
        {
            "number": a.number,
            "source": a.source,
            "decision": a.decision.value,
            "rule": a.verification.verdict.rule,
            "fixes": a.fixes,
            "note": a.note,
            "fingerprint": a.fingerprint,
            "issues": len(a.verification.issues),
            "quality_score": a.verification.quality_score,
            "seconds": round(a.seconds, 4),
            "best": a is outcome.best,
        }
        for a in outcome.attempts
    ]


def packet_create(
    *,
    run: Run,
    outcome: pipeline.Outcome,
    comparison: dict[str, Any],
    extra_issues: list[EngineIssue] | None = None,
) -> ReviewPacket:
    """The review packet of an escalated run: its best attempt, issues and history.
    ``extra_issues`` are raised after classification (a form for the wrong tax year)."""
    best = outcome.best
    all_issues = sort_issues(list(best.verification.issues) + list(extra_issues or []))
    issues = [i.model_dump(mode="json") for i in all_issues]
    worst = min((SEVERITY_ORDER[i.severity] for i in all_issues), default=2)
    return ReviewPacket.objects.create(
        run=run,
        document=run.document,
        priority=worst,
        dominant_type=best.output.dominant_type_overall.value,
        worst_severity=[s.value for s in Severity][worst] if all_issues else "",
        issue_count=len(issues),
        classification=best.output.model_dump(mode="json"),
        issues=issues,
        grounding=best.verification.grounding,
        comparison=comparison,
        comparison_agrees=comparison.get("agrees_on_type") if comparison["available"] else None,
        history=_history(outcome),
    )


def ground_truth_record(
    *,
    document: Document,
    run: Run | None,
    output: ClassificationOutput,
    source: str,
    reviewer: Any | None = None,
    field_corrections: dict[str, Any] | None = None,
) -> GroundTruth:
    """Append a new version; an earlier version is superseded, never overwritten."""
    latest = (
        GroundTruth.objects.select_for_update()
        .filter(document=document)
        .order_by("-version")
        .first()
    )
    truth = GroundTruth.objects.create(
        document=document,
        source=source,
        dominant_type=output.dominant_type_overall.value,
        classification=output.model_dump(mode="json"),
        fields=ground_truth_fields(run, field_corrections) if run else [],
        reviewer=reviewer,
        run=run,
        model=run.model if run else "",
        prompt_version=run.prompt_version if run else "",
        version=(latest.version + 1) if latest else 1,
        supersedes=latest,
    )
    event_emit(
        kind=Event.GROUND_TRUTH_CHANGED,
        data={
            "ground_truth_id": truth.pk,
            "document_id": str(document.pk),
            "version": truth.version,
            "source": truth.source,
            "dominant_type": truth.dominant_type,
            "supersedes_id": latest.pk if latest else None,
        },
    )
    return truth


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
        ReviewPacket.objects.filter(pk=packet.pk, status__in=ReviewPacket.OPEN_STATUSES)
        .filter(lock_available(user, now))
        .update(locked_by=user, lock_expires_at=expires, status=ReviewPacket.Status.IN_REVIEW)
    )
    packet.refresh_from_db()
    return bool(taken)


def packet_release(*, packet: ReviewPacket, user: Any) -> None:
    ReviewPacket.objects.filter(
        pk=packet.pk, locked_by=user, status=ReviewPacket.Status.IN_REVIEW
    ).update(locked_by=None, lock_expires_at=None, status=ReviewPacket.Status.PENDING)


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
        event_emit(
            kind=Event.PACKET_DECIDED,
            data={
                "packet_id": packet.pk,
                "review_id": review.pk,
                "run_id": packet.run_id,
                "document_id": str(packet.document_id),
                "outcome": outcome.value,
                "dominant_type": output.dominant_type_overall.value,
                "ground_truth_id": truth.pk,
            },
        )
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


def field_corrections_save(
    *, packet: ReviewPacket, reviewer: Any, submitted: dict[str, str]
) -> dict[str, str]:
    """Keep the reviewer's edits of extracted fields (``segment:field`` -> value) until the
    decision carries them into ground truth. Only the lock holder of an open packet may."""
    if packet.status == ReviewPacket.Status.COMPLETED or not lock_is_free(packet, reviewer):
        raise ReviewRefused(
            "Only the reviewer holding the lock can correct fields before deciding."
        )
    corrections = dict(packet.field_corrections)
    for row in packet_extractions(packet):
        for f in row["fields"]:
            value = submitted.get(f["key"])
            if value is None:
                continue
            if value.strip() != (f["value"] or ""):
                corrections[f["key"]] = value.strip()
            else:
                corrections.pop(f["key"], None)
    packet.field_corrections = corrections
    packet.save(update_fields=["field_corrections", "updated_at"])
    return corrections
