"""Blind audits of auto-accepted runs: the sampling draw and the auditor's answer."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from engine import quality
from engine.schemas import (
    DISPLAY_NAMES,
    ClassificationOutput,
    DocType,
)
from reliability.models import Run
from review.models import (
    AuditEvent,
    AuditSample,
    GroundTruth,
)
from review.services import ReviewRefused
from review.services.audit_log import audit_record
from review.services.ground_truth import retype_fields, retype_truth

logger = logging.getLogger(__name__)


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


def audit_submit(*, sample_id: int, auditor: Any, doc_type: DocType, note: str = "") -> AuditSample:
    """Record a blind audit's answer. When it disagrees with the accepted type, the ground
    truth is corrected (a new SME_CORRECTED version) if the accepted version still stands."""
    found = AuditSample.objects.select_related("run", "document").get(pk=sample_id)
    if found.status == AuditSample.Status.COMPLETED:
        raise ReviewRefused("This run has already been audited.")
    fields = (
        retype_fields(run=found.run, document=found.document, doc_type=doc_type)
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
        latest = GroundTruth.objects.latest_locked(sample.document)
        correction = None
        if not agrees and latest is not None and latest.pk == sample.accepted_truth_id:
            machine = DISPLAY_NAMES.get(sample.machine_type, sample.machine_type)
            correction = retype_truth(
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
