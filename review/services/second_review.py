"""Second review and adjudication. A second reviewer answers blind, with a segmentation (where
each document starts, and its type), to a first answer: a clinician's decision on a packet, or
an auditor's answer that disagreed with an accepted run. The answers agree when the
segmentations are the same (pages and types); agreement settles the ground truth, a
disagreement goes to a third person who sees both and decides."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.rows import save_fields
from documents.models import Document
from engine import quality
from engine.schemas import Severity
from review.corrections import (
    Segmentation,
    segmentation_from_json,
    segmentation_json,
    segmentation_of,
    segmentation_words,
    segmentations_agree,
)
from review.models import AuditEvent, AuditSample, GroundTruth, Review, ReviewPacket, SecondReview
from review.services import ReviewRefused
from review.services.audit_log import audit_record
from review.services.ground_truth import (
    S,
    T,
    ground_truth_hold,
    ground_truth_settle,
    label_state,
    segmentation_fields,
    segmentation_truth,
    transition_check,
)


def second_review_rule(*, outcome: str, packet: ReviewPacket, draw_key: str) -> str:
    """Which configured rule asks for a second review of this decision ("" when none).
    ``draw_key`` names the decision for the random share (the same decision, the same draw)."""
    if settings.SECOND_REVIEW_ON_CORRECTION and outcome == Review.Outcome.CORRECTED:
        return SecondReview.Rule.CORRECTION
    if settings.SECOND_REVIEW_ON_BLOCKER and packet.worst_severity == Severity.BLOCKER.value:
        return SecondReview.Rule.BLOCKER
    if quality.sample_draw(draw_key, salt=settings.AUDIT_SAMPLE_SALT) < settings.SECOND_REVIEW_RATE:
        return SecondReview.Rule.RANDOM
    return ""


def second_review_open(
    *,
    rule: str,
    document: Document,
    first_by: Any,
    first: Segmentation,
    packet: ReviewPacket | None = None,
    review: Review | None = None,
    audit: AuditSample | None = None,
) -> SecondReview:
    """Ask for an independent second answer to ``first`` (call in the first answer's
    transaction). Until it ends, the document's labels are hidden from everyone but the
    first decider and Admins (review.visibility)."""
    return SecondReview.objects.create(
        kind=SecondReview.Kind.AUDIT if audit is not None else SecondReview.Kind.DECISION,
        document=document,
        packet=packet,
        first_review=review,
        audit=audit,
        first_by=first_by,
        rule=rule,
        first_type=_dominant(first),
        first_segments=segmentation_json(first),
    )


def _dominant(segments: Segmentation) -> str:
    """The type with the most pages (the first one on a tie)."""
    pages: dict[str, int] = {}
    for start, end, doc_type in segments:
        pages[doc_type.value] = pages.get(doc_type.value, 0) + end - start + 1
    order = [t.value for _, _, t in segments]
    return max(order, key=lambda t: (pages[t], -order.index(t))) if order else ""


def _run_of(second: SecondReview) -> Any:
    if second.audit_id is not None:
        return second.audit.run  # type: ignore[union-attr]
    return second.packet.run if second.packet_id is not None else None  # type: ignore[union-attr]


def _machine_words(second: SecondReview) -> str:
    truth = second.audit.accepted_truth if second.audit_id else None  # type: ignore[union-attr]
    return segmentation_words(segmentation_of(truth.classification)) if truth else ""


def second_review_submit(
    *, second_id: int, reviewer: Any, segments: Segmentation, note: str = ""
) -> SecondReview:
    """A second reviewer's independent answer. Agreement settles the ground truth (a
    clinician's decision becomes final; an auditor's answer is recorded as the corrected,
    final version); a disagreement waits for adjudication. The first decider may not answer
    twice."""
    found = SecondReview.objects.select_related("audit__run", "document").get(pk=second_id)
    first = segmentation_from_json(found.first_segments)
    agrees = segmentations_agree(first, segments)
    fields = (
        segmentation_fields(run=_run_of(found), document=found.document, segments=first)
        if agrees and found.kind == SecondReview.Kind.AUDIT
        else []
    )
    with transaction.atomic():
        second = (
            SecondReview.objects.select_for_update(of=("self",))
            .select_related("first_review__ground_truth", "audit__accepted_truth", "document")
            .get(pk=second_id)
        )
        if second.status != SecondReview.Status.AWAITING:
            raise ReviewRefused("This decision already has its second review.")
        if second.first_by_id == reviewer.pk:
            raise ReviewRefused("A second review must come from a different reviewer.")
        answered = {
            "second_reviewer": reviewer,
            "second_segments": segmentation_json(segments),
            "second_type": _dominant(segments),
            "second_note": note,
            "second_at": timezone.now(),
        }
        transition = T.SECOND_REVIEW_AGREED if agrees else T.SECOND_REVIEW_DISAGREED
        transition_check(document=second.document, transition=transition)
        if agrees:
            # Settled while the second review is still open: the state machine lets its
            # answer, and nothing else, move the label then.
            final_truth = _settle(
                second, first, fields=fields, by=reviewer, note="", transition=transition
            )
            answered.update(
                status=SecondReview.Status.AGREED,
                final_segments=second.first_segments,
                final_type=second.first_type,
                final_truth=final_truth,
            )
            save_fields(second, **answered)
            if second.audit_id is not None:
                AuditSample.objects.filter(pk=second.audit_id).update(
                    verdict=AuditSample.Verdict.ERROR
                )
        else:
            save_fields(second, status=SecondReview.Status.ADJUDICATION, **answered)
        audit_record(
            user=reviewer,
            action=AuditEvent.Action.SECOND_REVIEWED,
            obj=second,
            detail={
                "kind": second.kind,
                "document": str(second.document_id),
                "first": second.first_segments,
                "second": second.second_segments,
                "agrees": agrees,
            },
        )
    return second


def _settle(
    second: SecondReview,
    final: Segmentation,
    *,
    fields: list[Any],
    by: Any,
    note: str,
    transition: str,
) -> GroundTruth | None:
    """Make ``final`` the document's final ground truth: the standing version when it holds
    ``final`` already (it becomes final), else a corrected version. Inside a transaction,
    while ``second`` is still open."""
    latest = GroundTruth.objects.latest_locked(second.document)
    if latest is not None and segmentations_agree(segmentation_of(latest.classification), final):
        ground_truth_settle(latest, transition=transition)
        return latest
    if second.kind == SecondReview.Kind.AUDIT and transition == T.SECOND_REVIEW_AGREED:
        machine = _machine_words(second)
        reason = f"Audit, confirmed by a second review: {segmentation_words(final)}, not {machine}"
        reviewer = second.first_by
    else:
        first = segmentation_words(segmentation_from_json(second.first_segments))
        reason = f"Adjudicated: {segmentation_words(final)}, not {first}"
        reviewer = by
    truth = segmentation_truth(
        run=_run_of(second),
        document=second.document,
        segments=final,
        fields=fields,
        reviewer=reviewer,
        reason=reason,
        note=note,
        transition=transition,
    )
    if second.audit_id is not None:
        AuditSample.objects.filter(pk=second.audit_id).update(correction=truth)
    return truth


def adjudicate(
    *, second_id: int, user: Any, segments: Segmentation, note: str = ""
) -> SecondReview:
    """A third person settles a disagreement, seeing both answers. The final segmentation
    becomes the final ground truth (the standing version, or a corrected one)."""
    found = SecondReview.objects.select_related("audit__run", "packet__run", "document").get(
        pk=second_id
    )
    current = GroundTruth.objects.filter(document=found.document).order_by("-version").first()
    same = current is not None and segmentations_agree(
        segmentation_of(current.classification), segments
    )
    fields = (
        []
        if same
        else segmentation_fields(run=_run_of(found), document=found.document, segments=segments)
    )
    with transaction.atomic():
        second = (
            SecondReview.objects.select_for_update(of=("self",))
            .select_related("audit__accepted_truth", "packet__run", "document")
            .get(pk=second_id)
        )
        if second.status != SecondReview.Status.ADJUDICATION:
            raise ReviewRefused("This decision is not waiting for adjudication.")
        if user.pk in (second.first_by_id, second.second_reviewer_id):
            raise ReviewRefused("Adjudication must come from someone other than both reviewers.")
        transition_check(document=second.document, transition=T.ADJUDICATED)
        save_fields(
            second,
            adjudicator=user,
            final_segments=segmentation_json(segments),
            final_type=_dominant(segments),
            adjudication_note=note,
            adjudicated_at=timezone.now(),
        )
        save_fields(
            second,
            final_truth=_settle(
                second, segments, fields=fields, by=user, note=note, transition=T.ADJUDICATED
            ),
            status=SecondReview.Status.ADJUDICATED,
        )
        if second.audit_id is not None:
            machine = segmentation_of(second.audit.accepted_truth.classification)  # type: ignore[union-attr]
            AuditSample.objects.filter(pk=second.audit_id).update(
                verdict=AuditSample.Verdict.OVERTURNED
                if segmentations_agree(machine, segments)
                else AuditSample.Verdict.ERROR
            )
        audit_record(
            user=user,
            action=AuditEvent.Action.ADJUDICATED,
            obj=second,
            detail={
                "kind": second.kind,
                "document": str(second.document_id),
                "first": second.first_segments,
                "second": second.second_segments,
                "final": second.final_segments,
                "ground_truth": second.final_truth.pk if second.final_truth else None,
            },
        )
    return second


def label_issue_recheck(issues: list[tuple[str, str, str, float]]) -> int:
    """Blind re-checks of labels the learning loop found likely wrong (reliability.learning,
    cleanlab): each standing clinician decision among ``issues`` (a label in the state
    ``decided``: not under a check, not confirmed by one) gets a second review with the rule
    ``label_issue``, unless its decision had one already. The version is provisional until the
    re-check ends. Returns how many were opened."""
    opened = 0
    for document_id, _given, _suggested, _probability in issues:
        truth = (
            GroundTruth.objects.filter(document_id=document_id, superseded_by__isnull=True)
            .exclude(source__in=[GroundTruth.Source.WITHDRAWN, GroundTruth.Source.AUTO_ACCEPTED])
            .select_related("review__packet", "review__reviewer", "document")
            .first()
        )
        review = getattr(truth, "review", None) if truth is not None else None
        if truth is None or review is None or review.withdrawn_at is not None:
            continue  # settled by an audit or an adjudication: checked twice already
        if label_state(truth.document, standing=truth) != S.DECIDED:
            continue  # under a check, or confirmed by one
        if SecondReview.objects.filter(first_review=review).exists():
            continue
        ground_truth_hold(truth, transition=T.LABEL_ISSUE_RECHECK)
        second_review_open(
            rule=SecondReview.Rule.LABEL_ISSUE,
            document=truth.document,
            first_by=review.reviewer,
            first=segmentation_of(truth.classification),
            packet=review.packet,
            review=review,
        )
        opened += 1
    return opened
