"""Packets and the clinician's decisions: locks, skips, validations and corrections,
undo and reopening, field corrections."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import events
from core.rows import save_fields
from engine import pipeline
from engine.schemas import (
    SEVERITY_ORDER,
    ClassificationOutput,
    Decision,
    Severity,
    sort_issues,
)
from engine.schemas import Issue as EngineIssue
from reliability.models import Run
from review import panel
from review.corrections import (
    Correction,
    corrected_output,
    correction_fields,
    correction_problems,
    correction_reason,
    segmentation_of,
)
from review.models import (
    AuditEvent,
    GroundTruth,
    Review,
    ReviewPacket,
    ReviewSkip,
    RunComparison,
    SecondReview,
)
from review.panel import PanelSeen
from review.queue import queue_changed
from review.selectors import (
    lock_available,
    lock_is_free,
    packet_extractions,
)
from review.services import ReviewRefused
from review.services.audit_log import audit_record
from review.services.audits import audit_draw, audit_sample_create
from review.services.ground_truth import (
    OPEN_CHECK_STATES,
    S,
    T,
    ground_truth_record,
    ground_truth_withdraw,
    label_state,
    transition_check,
)
from review.services.second_review import second_review_open, second_review_rule

logger = logging.getLogger(__name__)

UNDO_MINUTES = 5  # a reviewer may take back their own decision for this long
# Sources of a label a clinician decided: a re-run never replaces them.
CLINICIAN_SOURCES = (GroundTruth.Source.SME_VALIDATED, GroundTruth.Source.SME_CORRECTED)


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
    queue_changed()
    return ReviewPacket.objects.create(
        run=run,
        document=run.document,
        priority=worst,
        dominant_type=best.output.dominant_type_overall.value,
        worst_severity=[s.value for s in Severity][worst] if all_issues else "",
        issue_count=len(issues),
        issue_codes=ReviewPacket.codes_of(issues),
        classification=best.output.model_dump(mode="json"),
        issues=issues,
        grounding=best.verification.grounding,
        comparison=comparison,
        comparison_agrees=comparison.get("agrees_on_type") if comparison["available"] else None,
        history=_history(outcome),
        learning_rank=learning_rank(run),
    )


def learning_rank(run: Run) -> int:
    """The packet's place within its severity with QUEUE_ORDER=learning: 0 for a document
    whose label teaches the model most (its run's learning value 1), 1000 for none."""
    value = (run.learning or {}).get("value")
    if not isinstance(value, int | float):
        return 1000
    return round(1000 * (1.0 - max(0.0, min(1.0, float(value)))))


def run_outcome_record(
    *,
    run: Run,
    outcome: pipeline.Outcome,
    accepted: bool,
    comparison: dict[str, Any],
    extra_issues: list[EngineIssue] | None = None,
) -> dict[str, Any]:
    """A run's outcome, recorded inside the run's transaction: an accepted answer becomes
    ground truth (provisional when it is drawn for a blind audit), an escalated one a review
    packet. A run of a document that a clinician decided already, or whose packet is still
    open, changes neither: it is compared with the standing label and the comparison is
    recorded (a machine label never replaces a clinician's decision; no second packet).
    Returns what the run.decided event carries."""
    document = run.document
    output = outcome.best.output
    standing = GroundTruth.objects.latest_locked(document)
    state = label_state(document, standing=standing)
    clinician = standing is not None and standing.source in CLINICIAN_SOURCES
    open_packet = (
        ReviewPacket.objects.filter(document=document, status__in=ReviewPacket.OPEN_STATUSES)
        .exclude(run=run)
        .first()
    )
    # A label a clinician decided, a check holds or a check confirmed is never replaced by a
    # run: the run is compared with it, and nothing else changes (no version, no packet).
    if clinician or open_packet is not None or state in (*OPEN_CHECK_STATES, S.CONFIRMED):
        transition_check(document=document, transition=T.RUN_COMPARED, standing=standing)
        withdrawn = standing is None or standing.source == GroundTruth.Source.WITHDRAWN
        kept = None if withdrawn else standing
        standing_type = kept.dominant_type if kept else ""
        RunComparison.objects.create(
            run=run,
            document=document,
            standing_truth=kept,
            open_packet=open_packet,
            decision=Decision.AUTO_ACCEPT.value if accepted else Decision.ESCALATE_TO_SME.value,
            machine_type=output.dominant_type_overall.value,
            standing_type=standing_type,
            agrees=output.dominant_type_overall.value == standing_type if standing_type else None,
        )
        kept_event: dict[str, Any] = {"standing_kept": True}
        if state in OPEN_CHECK_STATES:
            # The standing label is provisional under a blind check: run.decided leaves the
            # run's type out, as it does for a run drawn for an audit.
            kept_event["state"] = GroundTruth.State.PROVISIONAL
        return kept_event
    if accepted:
        draw = audit_draw(run=run, output=output)
        truth = ground_truth_record(
            document=document,
            run=run,
            output=output,
            source=GroundTruth.Source.AUTO_ACCEPTED,
            state=GroundTruth.State.PROVISIONAL if draw else GroundTruth.State.FINAL,
        )
        if draw is not None:
            audit_sample_create(draw=draw, run=run, truth=truth)
        return {"ground_truth_id": truth.pk, "state": truth.state}
    transition_check(document=document, transition=T.RUN_ESCALATED, standing=standing)
    packet = packet_create(
        run=run, outcome=outcome, comparison=comparison, extra_issues=extra_issues
    )
    return {"packet_id": packet.pk}


def packet_open(*, packet: ReviewPacket, user: Any) -> bool:
    """Record the view and take (or renew) the lock when it is free. True if the user holds it."""
    now = timezone.now()
    expires = now + timedelta(minutes=settings.REVIEW_LOCK_MINUTES)
    viewed = {"document": str(packet.document_id), "status": packet.status}
    if packet.status == ReviewPacket.Status.COMPLETED:
        audit_record(user=user, action=AuditEvent.Action.VIEWED_PACKET, obj=packet, detail=viewed)
        return False
    # The view and the lock in one commit: one flush of the log per page view, not two.
    with transaction.atomic():
        audit_record(user=user, action=AuditEvent.Action.VIEWED_PACKET, obj=packet, detail=viewed)
        taken = (
            ReviewPacket.objects.filter(pk=packet.pk, status__in=ReviewPacket.OPEN_STATUSES)
            .filter(lock_available(user, now))
            .update(locked_by=user, lock_expires_at=expires, status=ReviewPacket.Status.IN_REVIEW)
        )
    if taken:
        # The row holds exactly these now. Not read again: refresh_from_db would also drop
        # the document and run loaded with the packet, and the page would read them again.
        packet.locked_by, packet.lock_expires_at = user, expires
        packet.status = ReviewPacket.Status.IN_REVIEW
        return True
    # Someone else holds it, or it was decided since it was read: its lock as it is now,
    # with the holder's name (one read; the packet's other fields do not change here).
    packet.refresh_from_db(
        fields=["status", "locked_by", "lock_expires_at"],
        from_queryset=ReviewPacket.objects.select_related("locked_by"),
    )
    return False


def packet_release(*, packet: ReviewPacket, user: Any) -> bool:
    """Give the packet back to the queue if this user holds it. True if it was held."""
    return bool(
        ReviewPacket.objects.filter(
            pk=packet.pk, locked_by=user, status=ReviewPacket.Status.IN_REVIEW
        ).update(locked_by=None, lock_expires_at=None, status=ReviewPacket.Status.PENDING)
    )


def packets_release_all(*, user: Any) -> list[int]:
    """Release every open packet this user holds (a reviewer works on one at a time: moving
    on to the next packet gives the others back). Returns their ids."""
    held = list(
        ReviewPacket.objects.filter(
            locked_by=user, status=ReviewPacket.Status.IN_REVIEW
        ).values_list("pk", flat=True)
    )
    ReviewPacket.objects.filter(
        pk__in=held, locked_by=user, status=ReviewPacket.Status.IN_REVIEW
    ).update(locked_by=None, lock_expires_at=None, status=ReviewPacket.Status.PENDING)
    return held


def packet_skip(*, packet: ReviewPacket, user: Any) -> None:
    """Put the packet aside: release it and move it behind this reviewer's other work."""
    if packet.status == ReviewPacket.Status.COMPLETED:
        raise ReviewRefused("This packet has already been decided.")
    with transaction.atomic():
        packet_release(packet=packet, user=user)
        ReviewSkip.objects.update_or_create(
            packet=packet, reviewer=user, defaults={"skipped_at": timezone.now()}
        )
        audit_record(user=user, action=AuditEvent.Action.SKIPPED, obj=packet)


def _lock_message(packet: ReviewPacket) -> str:
    holder = packet.locked_by
    name = (holder.get_full_name() or holder.username) if holder else "Someone"
    until = timezone.localtime(packet.lock_expires_at) if packet.lock_expires_at else None
    return f"{name} is reviewing this packet" + (f" until {until:%H:%M}." if until else ".")


def correction_check(
    *, packet: ReviewPacket, correction: Correction
) -> tuple[str, dict[str, list[str]]]:
    """The reason a correction gives (what it changes) and its problems, if any."""
    problems = correction_problems(correction, page_count=packet.document.page_count)
    reason = correction_reason(
        ClassificationOutput.model_validate(packet.classification), correction
    )
    if not problems and not reason:
        problems["segments"] = [
            "The correction changes nothing: validate the classification instead (V)."
        ]
    return reason, problems


def correction_fields_for(*, packet: ReviewPacket, correction: Correction) -> list[dict[str, Any]]:
    """The corrected segments' fields; reuses a preview of the same correction."""
    preview = packet.correction_preview or {}
    if preview.get("signature") == correction.signature and "fields" in preview:
        fields: list[dict[str, Any]] = preview["fields"]
        return fields
    return correction_fields(
        document=packet.document,
        run_id=packet.run_id,
        preset=packet.run.preset,
        corrections=packet.field_corrections,
        correction=correction,
    )


def correction_preview(
    *, packet: ReviewPacket, reviewer: Any, correction: Correction
) -> tuple[str, dict[str, list[str]], list[dict[str, Any]]]:
    """Show the lock holder what a correction would record before saving it: the reason,
    any problems, and the fields of the corrected segments (extracted again where the pages
    or type changed). Kept on the packet so saving the same correction reuses them."""
    if packet.status == ReviewPacket.Status.COMPLETED or not lock_is_free(packet, reviewer):
        raise ReviewRefused("Only the reviewer holding the lock can preview a correction.")
    reason, problems = correction_check(packet=packet, correction=correction)
    if problems:
        return reason, problems, []
    fields = correction_fields_for(packet=packet, correction=correction)
    ReviewPacket.objects.filter(pk=packet.pk).update(
        correction_preview={"signature": correction.signature, "fields": fields}
    )
    return reason, problems, fields


PANEL_SHOWS_A_CORRECTION = (
    "Nothing was recorded: the panel shows a correction ({reason}). Save it with Enter, or "
    "press R to put the machine's answer back and validate it."
)


def _holds(packet: ReviewPacket, reviewer: Any) -> bool:
    return bool(
        packet.locked_by_id == reviewer.pk
        and packet.lock_expires_at is not None
        and packet.lock_expires_at > timezone.now()
    )


def _panel_check(
    *, packet: ReviewPacket, reviewer: Any, seen: PanelSeen, correction: Correction | None
) -> None:
    """Refuse a panel's decision that is not its lock holder's act on what it showed."""
    if packet.status == ReviewPacket.Status.COMPLETED:
        raise ReviewRefused("This packet has already been decided.")
    if not _holds(packet, reviewer):
        if not lock_is_free(packet, reviewer):
            raise ReviewRefused(_lock_message(packet))
        raise ReviewRefused(panel.MESSAGES[panel.NOT_HELD], code=panel.NOT_HELD)
    if not panel.panel_token_fits(packet=packet, user=reviewer, token=seen.token):
        raise ReviewRefused(panel.MESSAGES[panel.STALE], code=panel.STALE)
    if seen.segments is None:
        raise ReviewRefused(panel.MESSAGES[panel.MISSING], code=panel.MISSING)
    if correction is None:
        expected = [(a, b, t.value) for a, b, t in segmentation_of(packet.classification)]
        present: list[str] = []
    else:
        expected = [(a, b, t.value) for a, b, t in correction.segments]
        present = [t.value for t in correction.present]
    # A type marked present that a segment already has adds nothing (as correction_build).
    marked = sorted(t for t in seen.present if t not in {t for _, _, t in expected})
    if list(seen.segments) != expected or marked != sorted(present):
        raise ReviewRefused(panel.MESSAGES[panel.DIFFERS], code=panel.DIFFERS)


def review_submit(
    *,
    packet_id: int,
    reviewer: Any,
    correction: Correction | None,
    notes: str,
    shown: Correction | None = None,
    seen: PanelSeen | None = None,
) -> Review:
    """Validate (correction None) or correct a packet. Exactly one standing decision per
    packet: the packet row is locked for the transaction, so racing submissions are
    serialised and the second finds the packet completed.

    A decision records exactly what the panel shows: a validation sent from a panel that
    shows a correction (``shown``, the panel's segments and types as posted) is refused, so
    a stray key never saves the machine's label over a correction the reviewer made.

    A correction must hold together (see review.corrections); the fields of segments whose
    pages or type changed are extracted again first, outside the transaction. The decision is
    provisional while a second review the rules ask for is open (then hidden from everyone
    but its decider and Admins), final otherwise.

    A decision from a panel (``seen``: every one the pages post) is the act of the reviewer
    holding the packet's lock, on the panel state they saw (review.panel): it is refused
    without the lock, from a stale page, or when it differs from what the panel showed.
    Scripted callers (the demo) pass no ``seen``."""
    packet = ReviewPacket.objects.select_related("run", "document").get(pk=packet_id)
    reason, fields = "", None
    if correction is None and shown is not None:
        changes, _ = correction_check(packet=packet, correction=shown)
        if changes:
            raise ReviewRefused(PANEL_SHOWS_A_CORRECTION.format(reason=changes))
    if seen is not None:
        _panel_check(packet=packet, reviewer=reviewer, seen=seen, correction=correction)
    if correction is not None:
        reason, problems = correction_check(packet=packet, correction=correction)
        if problems:
            raise ReviewRefused(" ".join(m for messages in problems.values() for m in messages))
        if packet.status == ReviewPacket.Status.COMPLETED:
            raise ReviewRefused("This packet has already been decided.")
        fields = correction_fields_for(packet=packet, correction=correction)
    with transaction.atomic():
        packet = (
            ReviewPacket.objects.select_for_update()
            .select_related("run", "document")
            .get(pk=packet_id)
        )
        if packet.status == ReviewPacket.Status.COMPLETED:
            raise ReviewRefused("This packet has already been decided.")
        if not lock_is_free(packet, reviewer):
            raise ReviewRefused(_lock_message(packet))
        if seen is not None and not _holds(packet, reviewer):
            raise ReviewRefused(panel.MESSAGES[panel.NOT_HELD], code=panel.NOT_HELD)
        if correction is None:
            output = ClassificationOutput.model_validate(packet.classification)
            outcome, source = Review.Outcome.VALIDATED, GroundTruth.Source.SME_VALIDATED
        else:
            output = corrected_output(correction)
            outcome, source = Review.Outcome.CORRECTED, GroundTruth.Source.SME_CORRECTED
        decisions_before = Review.objects.filter(packet=packet).count()
        rule = second_review_rule(
            outcome=outcome, packet=packet, draw_key=f"packet:{packet.pk}:{decisions_before + 1}"
        )
        if not rule and SecondReview.objects.filter(first_review__packet=packet).exists():
            # An admin reopened a decision that a check confirmed or was checking: the new
            # decision goes through a second review again, never straight to final.
            rule = SecondReview.Rule.REOPENED
        truth = ground_truth_record(
            document=packet.document,
            run=packet.run,
            output=output,
            source=source,
            state=GroundTruth.State.PROVISIONAL if rule else GroundTruth.State.FINAL,
            field_corrections=packet.field_corrections,
            fields=fields,
            reviewer=reviewer,
            reason=reason,
            note=notes,
            transition=T.DECISION,
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
            reason=reason,
            ground_truth=truth,
            claimed_type=packet.dominant_type,
            escalated_at=packet.created_at,
            started_at=packet.lock_expires_at - timedelta(minutes=settings.REVIEW_LOCK_MINUTES)
            if packet.lock_expires_at
            else None,
        )
        save_fields(
            packet,
            status=ReviewPacket.Status.COMPLETED,
            locked_by=None,
            lock_expires_at=None,
            correction_preview={},
            updated_at=timezone.now(),
        )
        decided: dict[str, Any] = {
            "packet_id": packet.pk,
            "review_id": review.pk,
            "run_id": packet.run_id,
            "document_id": str(packet.document_id),
            "ground_truth_id": truth.pk,
            "state": truth.state,
        }
        if not rule:  # a decision under a blind second review keeps its labels to itself
            decided.update(outcome=outcome.value, dominant_type=output.dominant_type_overall.value)
        events.publish(events.Event.PACKET_DECIDED, decided)
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
        if rule:
            second_review_open(
                rule=rule,
                document=packet.document,
                first_by=reviewer,
                first=segmentation_of(output),
                packet=packet,
                review=review,
            )
        queue_changed()
    logger.info("packet %s %s by user %s", packet_id, outcome, reviewer.pk)
    return review


def _withdraw(*, packet_id: int, user: Any, how: str) -> Review:
    """Take back the packet's standing decision: the decision is kept and marked withdrawn,
    and ground truth gets a new version (the version before the decision again, or a
    WITHDRAWN version when there was none). Runs inside the caller's transaction."""
    packet = ReviewPacket.objects.select_for_update().select_related("document").get(pk=packet_id)
    review = (
        Review.objects.select_for_update()
        .select_related("ground_truth")
        .filter(packet=packet, withdrawn_at__isnull=True)
        .first()
    )
    if review is None or packet.status != ReviewPacket.Status.COMPLETED:
        raise ReviewRefused("This packet has no decision to take back.")
    decided = review.ground_truth
    truth = ground_truth_withdraw(decided=decided, user=user, how=how)
    # A withdrawn decision has nothing left for a second reviewer or adjudicator to check.
    SecondReview.objects.filter(first_review=review, status__in=SecondReview.OPEN_STATUSES).update(
        status=SecondReview.Status.CANCELLED
    )
    save_fields(review, withdrawn_at=timezone.now(), withdrawn_by=user, withdrawn_how=how)
    audit_record(
        user=user,
        action=AuditEvent.Action.UNDONE if how == "undone" else AuditEvent.Action.REOPENED,
        obj=packet,
        detail={
            "review": review.pk,
            "withdrawn_version": decided.version,
            "ground_truth": truth.pk,
            "version": truth.version,
        },
    )
    queue_changed()  # the packet is back in the queue
    return review


def review_undo(*, reviewer: Any) -> Review:
    """Take back this reviewer's last decision if it is at most UNDO_MINUTES old. The packet
    opens again, locked to them, so they can decide it again."""
    since = timezone.now() - timedelta(minutes=UNDO_MINUTES)
    with transaction.atomic():
        last = (
            Review.objects.filter(reviewer=reviewer, withdrawn_at__isnull=True)
            .order_by("-finished_at")
            .first()
        )
        if last is None or last.finished_at < since:
            raise ReviewRefused(
                f"Nothing to undo: you have made no decision in the last {UNDO_MINUTES} minutes."
            )
        review = _withdraw(packet_id=last.packet_id, user=reviewer, how="undone")
        ReviewPacket.objects.filter(pk=last.packet_id).update(
            status=ReviewPacket.Status.IN_REVIEW,
            locked_by=reviewer,
            lock_expires_at=timezone.now() + timedelta(minutes=settings.REVIEW_LOCK_MINUTES),
            updated_at=timezone.now(),
        )
    logger.info("packet %s decision undone by user %s", review.packet_id, reviewer.pk)
    return review


def packet_reopen(*, packet: ReviewPacket, user: Any) -> Review:
    """An admin takes back a packet's decision, whoever made it and whenever: the packet goes
    back to the queue."""
    with transaction.atomic():
        review = _withdraw(packet_id=packet.pk, user=user, how="reopened")
        ReviewPacket.objects.filter(pk=packet.pk).update(
            status=ReviewPacket.Status.PENDING,
            locked_by=None,
            lock_expires_at=None,
            updated_at=timezone.now(),
        )
    logger.info("packet %s reopened by user %s", packet.pk, user.pk)
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
    save_fields(packet, field_corrections=corrections, updated_at=timezone.now())
    return corrections
