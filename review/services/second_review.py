"""Second review of clinicians' decisions, and adjudication of disagreements."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from engine import quality
from engine.schemas import (
    DISPLAY_NAMES,
    DocType,
    Severity,
)
from review.models import (
    AuditEvent,
    GroundTruth,
    Review,
    ReviewPacket,
    SecondReview,
)
from review.services import ReviewRefused
from review.services.audit_log import audit_record
from review.services.ground_truth import retype_fields, retype_truth


def second_review_rule(*, review: Review, packet: ReviewPacket) -> str:
    """Which configured rule asks for a second review of this decision ("" when none)."""
    if settings.SECOND_REVIEW_ON_CORRECTION and review.outcome == Review.Outcome.CORRECTED:
        return SecondReview.Rule.CORRECTION
    if settings.SECOND_REVIEW_ON_BLOCKER and packet.worst_severity == Severity.BLOCKER.value:
        return SecondReview.Rule.BLOCKER
    draw = quality.sample_draw(f"review:{review.pk}", salt=settings.AUDIT_SAMPLE_SALT)
    if draw < settings.SECOND_REVIEW_RATE:
        return SecondReview.Rule.RANDOM
    return ""


def second_review_consider(*, review: Review, packet: ReviewPacket) -> SecondReview | None:
    rule = second_review_rule(review=review, packet=packet)
    if not rule:
        return None
    return SecondReview.objects.create(
        packet=packet,
        first_review=review,
        rule=rule,
        first_type=review.ground_truth.dominant_type,
    )


def second_review_submit(
    *, second_id: int, reviewer: Any, doc_type: DocType, note: str = ""
) -> SecondReview:
    """A second reviewer's independent answer. Agreement makes the decision final; a
    disagreement waits for adjudication. The first reviewer may not review twice."""
    with transaction.atomic():
        second = (
            SecondReview.objects.select_for_update(of=("self",))
            .select_related("first_review")
            .get(pk=second_id)
        )
        if second.status != SecondReview.Status.AWAITING:
            raise ReviewRefused("This decision already has its second review.")
        if second.first_review.reviewer_id == reviewer.pk:
            raise ReviewRefused("A second review must come from a different reviewer.")
        agrees = doc_type.value == second.first_type
        second.second_reviewer = reviewer
        second.second_type = doc_type.value
        second.second_note = note
        second.second_at = timezone.now()
        second.status = SecondReview.Status.AGREED if agrees else SecondReview.Status.ADJUDICATION
        second.save()
        audit_record(
            user=reviewer,
            action=AuditEvent.Action.SECOND_REVIEWED,
            obj=second,
            detail={
                "packet": second.packet_id,
                "first_type": second.first_type,
                "second_type": doc_type.value,
                "agrees": agrees,
            },
        )
    return second


def adjudicate(*, second_id: int, user: Any, doc_type: DocType, note: str = "") -> SecondReview:
    """A third person settles a disagreement. If the final type differs from the standing
    ground truth, a corrected version is recorded; either way the ground truth is final."""
    found = SecondReview.objects.select_related("packet__run", "packet__document").get(pk=second_id)
    current = (
        GroundTruth.objects.filter(document=found.packet.document).order_by("-version").first()
    )
    fields = (
        retype_fields(run=found.packet.run, document=found.packet.document, doc_type=doc_type)
        if current is None or current.dominant_type != doc_type.value
        else []
    )
    with transaction.atomic():
        second = (
            SecondReview.objects.select_for_update(of=("self",))
            .select_related("first_review", "packet__run", "packet__document")
            .get(pk=second_id)
        )
        if second.status != SecondReview.Status.ADJUDICATION:
            raise ReviewRefused("This decision is not waiting for adjudication.")
        if user.pk in (second.first_review.reviewer_id, second.second_reviewer_id):
            raise ReviewRefused("Adjudication must come from someone other than both reviewers.")
        packet = second.packet
        latest = GroundTruth.objects.latest_locked(packet.document)
        final_truth = latest
        if latest is None or latest.dominant_type != doc_type.value:
            first = DISPLAY_NAMES.get(second.first_type, second.first_type)
            final_truth = retype_truth(
                run=packet.run,
                document=packet.document,
                doc_type=doc_type,
                fields=fields,
                reviewer=user,
                reason=f"Adjudicated: {DISPLAY_NAMES[doc_type]}, not {first}",
                note=note,
            )
        second.adjudicator = user
        second.final_type = doc_type.value
        second.adjudication_note = note
        second.adjudicated_at = timezone.now()
        second.final_truth = final_truth
        second.status = SecondReview.Status.ADJUDICATED
        second.save()
        audit_record(
            user=user,
            action=AuditEvent.Action.ADJUDICATED,
            obj=second,
            detail={
                "packet": packet.pk,
                "first_type": second.first_type,
                "second_type": second.second_type,
                "final_type": doc_type.value,
                "ground_truth": final_truth.pk if final_truth else None,
            },
        )
    return second
