"""Review workflows: packets, locks, decisions, corrections, ground truth and audit.

The review app owns these tables; the reliability app asks these services to write them
(packet_create, ground_truth_record) and never writes them itself."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import Refused
from documents.models import Document
from engine import pipeline, quality
from engine.schemas import (
    DISPLAY_NAMES,
    SEVERITY_ORDER,
    ClassificationOutput,
    DocType,
    Severity,
    sort_issues,
)
from engine.schemas import Issue as EngineIssue
from integrations.models import Event
from integrations.services import event_emit
from reliability.models import Run
from review.corrections import (
    Correction,
    corrected_output,
    correction_build,
    correction_fields,
    correction_problems,
    correction_reason,
)
from review.models import (
    AuditEvent,
    AuditSample,
    GroundTruth,
    Review,
    ReviewPacket,
    ReviewSkip,
    SecondReview,
)
from review.queue import queue_changed
from review.selectors import (
    ground_truth_fields,
    lock_available,
    lock_is_free,
    packet_extractions,
)

logger = logging.getLogger(__name__)

UNDO_MINUTES = 5  # a reviewer may take back their own decision for this long


class ReviewRefused(Refused):
    status = 409


def audit_record(
    *,
    user: Any,
    action: str,
    obj: Any = None,
    object_type: str = "",
    object_id: str = "",
    detail: dict[str, Any] | None = None,
) -> None:
    """Record who did what to which object. The object is named by its model (a lazy
    request user is named "User", not by its wrapper), or given explicitly."""
    if obj is not None:
        object_type = object_type or obj._meta.object_name
        object_id = object_id or str(obj.pk)
    AuditEvent.objects.create(
        user=user if getattr(user, "is_authenticated", False) else None,
        username=getattr(user, "username", "") or "system",
        action=action,
        object_type=object_type,
        object_id=object_id,
        detail=detail or {},
    )


def export_audit(
    *, user: Any, digest: str, filters: dict[str, Any], records: int, complete: bool = True
) -> None:
    """An export is audited as the ground-truth file it produced: named by its SHA-256 (see
    review.exports.export_digest), with the filter that chose it and how many records it
    holds. A streamed download broken off part way is audited too, as ``interrupted``, with
    the digest of the bytes handed over and the records read."""
    detail = {**{k: str(v) for k, v in filters.items()}, "sha256": digest, "records": records}
    if not complete:
        detail["interrupted"] = True
    audit_record(
        user=user,
        action=AuditEvent.Action.EXPORTED,
        object_type="GroundTruth",
        object_id=f"export:{digest[:16]}",
        detail=detail,
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
    )


def ground_truth_record(
    *,
    document: Document,
    run: Run | None,
    output: ClassificationOutput,
    source: str,
    reviewer: Any | None = None,
    field_corrections: dict[str, Any] | None = None,
    fields: list[dict[str, Any]] | None = None,
    reason: str = "",
    note: str = "",
) -> GroundTruth:
    """Append a new version; an earlier version is superseded, never overwritten. ``fields``
    (a correction's re-extracted fields) replace the run's fields when given."""
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
        fields=fields
        if fields is not None
        else ground_truth_fields(run, field_corrections)
        if run
        else [],
        reason=reason,
        note=note,
        reviewer=reviewer,
        run=run,
        model=run.model if run else "",
        prompt_version=run.prompt_version if run else "",
        version=(latest.version + 1) if latest else 1,
        supersedes=latest,
    )
    _ground_truth_changed(truth, supersedes=latest)
    if source == GroundTruth.Source.AUTO_ACCEPTED and run is not None:
        audit_sample_consider(run=run, truth=truth, output=output)
    return truth


def _ground_truth_changed(truth: GroundTruth, *, supersedes: GroundTruth | None) -> None:
    event_emit(
        kind=Event.GROUND_TRUTH_CHANGED,
        data={
            "ground_truth_id": truth.pk,
            "document_id": str(truth.document_id),
            "version": truth.version,
            "source": truth.source,
            "dominant_type": truth.dominant_type,
            "supersedes_id": supersedes.pk if supersedes else None,
        },
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
        ReviewPacket.objects.filter(pk=packet.pk, status__in=ReviewPacket.OPEN_STATUSES)
        .filter(lock_available(user, now))
        .update(locked_by=user, lock_expires_at=expires, status=ReviewPacket.Status.IN_REVIEW)
    )
    packet.refresh_from_db()
    return bool(taken)


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


def review_submit(
    *, packet_id: int, reviewer: Any, correction: Correction | None, notes: str
) -> Review:
    """Validate (correction None) or correct a packet. Exactly one standing decision per
    packet: the packet row is locked for the transaction, so racing submissions are
    serialised and the second finds the packet completed.

    A correction must hold together (see review.corrections); the fields of segments whose
    pages or type changed are extracted again first, outside the transaction."""
    packet = ReviewPacket.objects.select_related("run", "document").get(pk=packet_id)
    reason, fields = "", None
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
            fields=fields,
            reviewer=reviewer,
            reason=reason,
            note=notes,
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
        packet.status = ReviewPacket.Status.COMPLETED
        packet.locked_by = None
        packet.lock_expires_at = None
        packet.correction_preview = {}
        packet.save(
            update_fields=[
                "status",
                "locked_by",
                "lock_expires_at",
                "correction_preview",
                "updated_at",
            ]
        )
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
        second_review_consider(review=review, packet=packet)
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
    latest = (
        GroundTruth.objects.select_for_update()
        .filter(document=packet.document)
        .order_by("-version")
        .first()
    )
    if latest is None or latest.pk != decided.pk:
        raise ReviewRefused(
            "Ground truth for this document has changed since this decision (version "
            f"{latest.version if latest else '?'} is newer); it can no longer be taken back."
        )
    previous = decided.supersedes
    who = user.get_full_name() or user.username
    verb = "undone" if how == "undone" else "reopened"
    if previous is not None and previous.source != GroundTruth.Source.WITHDRAWN:
        truth = GroundTruth.objects.create(
            document=packet.document,
            source=previous.source,
            dominant_type=previous.dominant_type,
            classification=previous.classification,
            fields=previous.fields,
            reason=f"Version {decided.version} {verb} by {who}; version "
            f"{previous.version} stands again.",
            note=previous.note,
            reviewer=previous.reviewer,
            run=previous.run,
            model=previous.model,
            prompt_version=previous.prompt_version,
            version=decided.version + 1,
            supersedes=decided,
        )
    else:
        truth = GroundTruth.objects.create(
            document=packet.document,
            source=GroundTruth.Source.WITHDRAWN,
            dominant_type="",
            classification={},
            fields=[],
            reason=f"Version {decided.version} {verb} by {who}; the packet is open again.",
            reviewer=user,
            run=decided.run,
            version=decided.version + 1,
            supersedes=decided,
        )
    _ground_truth_changed(truth, supersedes=decided)
    # A withdrawn decision has nothing left for a second reviewer or adjudicator to check.
    SecondReview.objects.filter(first_review=review, status__in=SecondReview.OPEN_STATUSES).update(
        status=SecondReview.Status.CANCELLED
    )
    review.withdrawn_at = timezone.now()
    review.withdrawn_by = user
    review.withdrawn_how = how
    review.save(update_fields=["withdrawn_at", "withdrawn_by", "withdrawn_how"])
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
    packet.field_corrections = corrections
    packet.save(update_fields=["field_corrections", "updated_at"])
    return corrections


# -- audit sampling of auto-accepted runs -------------------------------------------------------


def dominant_confidence(output: ClassificationOutput) -> float:
    """How sure the classifier was of its dominant type: its highest confidence for that type
    in any segment (the overall self-evaluation when no segment assesses it)."""
    dominant = output.dominant_type_overall
    found = [
        a.confidence
        for segment in output.segments
        if (a := segment.assessment(dominant)) is not None
    ]
    return max(found) if found else output.self_evaluation.confidence


def audit_sample_consider(
    *, run: Run, truth: GroundTruth, output: ClassificationOutput
) -> AuditSample | None:
    """Decide, when a run is auto-accepted, whether it goes to the blind audit queue: a
    deterministic draw under the share for its type and confidence band, or the first run of
    its type today (at least one audit per type per day). Runs in the caller's transaction."""
    doc_type = output.dominant_type_overall.value
    confidence = dominant_confidence(output)
    band = quality.confidence_band(confidence, settings.AUDIT_CONFIDENCE_BANDS)
    rate = quality.sample_rate(
        settings.AUDIT_SAMPLE_RATES, settings.AUDIT_SAMPLE_RATE, doc_type=doc_type, band=band
    )
    today = timezone.localdate()
    first_of_day = not AuditSample.objects.filter(machine_type=doc_type, sampled_on=today).exists()
    decision = quality.audit_decision(
        key=f"run:{run.pk}",
        salt=settings.AUDIT_SAMPLE_SALT,
        rate=rate,
        first_of_day=first_of_day,
        daily_minimum=settings.AUDIT_DAILY_MINIMUM,
    )
    if not decision.sampled or AuditSample.objects.filter(run=run).exists():
        return None
    sample = AuditSample.objects.create(
        run=run,
        document=truth.document,
        accepted_truth=truth,
        machine_type=doc_type,
        confidence=round(confidence, 4),
        band=band,
        rate=rate,
        reason=decision.reason,
        sampled_on=today,
    )
    audit_record(
        user=None,
        action=AuditEvent.Action.AUDIT_SAMPLED,
        obj=sample,
        detail={"run": run.pk, "reason": decision.reason, "band": band, "rate": rate},
    )
    return sample


def _retype_correction(*, document: Document, doc_type: DocType) -> Any:
    """A whole-document correction to one type: what an audit or an adjudication decides
    (the type, not the segments)."""
    return correction_build(segments=[(1, max(document.page_count, 1), doc_type)])


def _retype_truth(
    *,
    run: Run | None,
    document: Document,
    doc_type: DocType,
    fields: list[Any],
    reviewer: Any,
    reason: str,
    note: str,
) -> GroundTruth:
    """Record a corrected ground-truth version through the correction path. Call inside a
    transaction, with the fields extracted before it (_retype_fields)."""
    correction = _retype_correction(document=document, doc_type=doc_type)
    return ground_truth_record(
        document=document,
        run=run,
        output=corrected_output(correction),
        source=GroundTruth.Source.SME_CORRECTED,
        reviewer=reviewer,
        fields=fields,
        reason=reason,
        note=note,
    )


def _retype_fields(*, run: Run | None, document: Document, doc_type: DocType) -> list[Any]:
    """The fields of the document read as one segment of the new type. Slow with an LLM
    extractor: call outside transactions."""
    if run is None:
        return []
    return correction_fields(
        document=document,
        run_id=run.pk,
        preset=run.preset,
        corrections={},
        correction=_retype_correction(document=document, doc_type=doc_type),
    )


def audit_submit(*, sample_id: int, auditor: Any, doc_type: DocType, note: str = "") -> AuditSample:
    """Record a blind audit's answer. When it disagrees with the accepted type, the ground
    truth is corrected (a new SME_CORRECTED version) if the accepted version still stands."""
    found = AuditSample.objects.select_related("run", "document").get(pk=sample_id)
    if found.status == AuditSample.Status.COMPLETED:
        raise ReviewRefused("This run has already been audited.")
    fields = (
        _retype_fields(run=found.run, document=found.document, doc_type=doc_type)
        if doc_type.value != found.machine_type
        else []
    )
    with transaction.atomic():
        sample = (
            AuditSample.objects.select_for_update(of=("self",))
            .select_related("document", "run", "accepted_truth")
            .get(pk=sample_id)
        )
        if sample.status == AuditSample.Status.COMPLETED:
            raise ReviewRefused("This run has already been audited.")
        agrees = doc_type.value == sample.machine_type
        latest = (
            GroundTruth.objects.select_for_update()
            .filter(document=sample.document)
            .order_by("-version")
            .first()
        )
        correction = None
        if not agrees and latest is not None and latest.pk == sample.accepted_truth_id:
            machine = DISPLAY_NAMES.get(sample.machine_type, sample.machine_type)
            correction = _retype_truth(
                run=sample.run,
                document=sample.document,
                doc_type=doc_type,
                fields=fields,
                reviewer=auditor,
                reason=f"Audit: type changed from {machine} to {DISPLAY_NAMES[doc_type]}",
                note=note,
            )
        sample.status = AuditSample.Status.COMPLETED
        sample.auditor = auditor
        sample.audited_type = doc_type.value
        sample.agrees = agrees
        sample.correction = correction
        sample.note = note
        sample.audited_at = timezone.now()
        sample.save()
        audit_record(
            user=auditor,
            action=AuditEvent.Action.AUDITED,
            obj=sample,
            detail={
                "run": sample.run_id,
                "machine_type": sample.machine_type,
                "audited_type": doc_type.value,
                "agrees": agrees,
                "ground_truth": correction.pk if correction else None,
            },
        )
    logger.info("audit %s by user %s: agrees=%s", sample_id, auditor.pk, agrees)
    return sample


# -- second review and adjudication -------------------------------------------------------------


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
        _retype_fields(run=found.packet.run, document=found.packet.document, doc_type=doc_type)
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
        latest = (
            GroundTruth.objects.select_for_update()
            .filter(document=packet.document)
            .order_by("-version")
            .first()
        )
        final_truth = latest
        if latest is None or latest.dominant_type != doc_type.value:
            first = DISPLAY_NAMES.get(second.first_type, second.first_type)
            final_truth = _retype_truth(
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
