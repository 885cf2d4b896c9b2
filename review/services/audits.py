"""Blind audits of auto-accepted runs: the sampling draw and the auditor's answer (a
disagreement goes to a second review before it changes anything)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.rows import save_fields
from engine import quality
from engine.schemas import (
    ClassificationOutput,
    DocType,
)
from reliability.models import Run
from review.corrections import (
    Segmentation,
    segmentation_json,
    segmentation_of,
    segmentations_agree,
)
from review.models import AuditEvent, AuditSample, GroundTruth, SecondReview
from review.services import ReviewRefused
from review.services.audit_log import audit_record
from review.services.ground_truth import (
    T,
    ground_truth_hold,
    ground_truth_settle,
    transition_check,
)
from review.services.second_review import second_review_open

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


@dataclass(frozen=True)
class AuditDraw:
    """An accepted run drawn for a blind audit, before its sample is written."""

    doc_type: str
    confidence: float
    band: str
    rate: float
    reason: str
    sampled_on: date


def audit_draw(*, run: Run, output: ClassificationOutput) -> AuditDraw | None:
    """Whether an auto-accepted run goes to the blind audit queue: a deterministic draw under
    the share for its type and confidence band, or the first run of its type today (at least
    one audit per type per day). Decided before the run's ground truth is written, so that
    version is provisional (and its labels stay out of webhooks) from the start."""
    if AuditSample.objects.filter(run=run).exists():
        return None
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
    if not decision.sampled:
        return None
    return AuditDraw(doc_type, round(confidence, 4), band, rate, decision.reason, today)


def audit_sample_create(*, draw: AuditDraw, run: Run, truth: GroundTruth) -> AuditSample:
    """The audit sample of a drawn run, whose accepted (provisional) version is ``truth``.
    Runs in the caller's transaction."""
    sample = AuditSample.objects.create(
        run=run,
        document=truth.document,
        accepted_truth=truth,
        machine_type=draw.doc_type,
        confidence=draw.confidence,
        band=draw.band,
        rate=draw.rate,
        reason=draw.reason,
        sampled_on=draw.sampled_on,
    )
    audit_record(
        user=None,
        action=AuditEvent.Action.AUDIT_SAMPLED,
        obj=sample,
        detail={"run": run.pk, "reason": draw.reason, "band": draw.band, "rate": draw.rate},
    )
    return sample


def audit_sample_consider(
    *, run: Run, truth: GroundTruth, output: ClassificationOutput
) -> AuditSample | None:
    """``audit_draw`` for an accepted version already written: when drawn, the version is
    held provisional until the audit ends."""
    draw = audit_draw(run=run, output=output)
    if draw is None:
        return None
    ground_truth_hold(truth, transition=T.AUDIT_DRAWN)
    return audit_sample_create(draw=draw, run=run, truth=truth)


def machine_segmentation(sample: AuditSample) -> Segmentation:
    """The accepted answer the audit checks: its documents' pages and types."""
    if sample.accepted_truth is not None:
        return segmentation_of(sample.accepted_truth.classification)
    return [(1, max(sample.document.page_count, 1), DocType(sample.machine_type))]


def audit_submit(
    *, sample_id: int, auditor: Any, segments: Segmentation, note: str = ""
) -> AuditSample:
    """Record a blind audit's answer, a segmentation (each document's pages and type). When it
    agrees with the accepted answer, that answer is final. When it disagrees, the disagreement
    is a correction like any other: it goes to an independent second review (and adjudication
    if need be) before anything changes; until then the accepted label stays current,
    provisional, and Admins see the disagreement."""
    with transaction.atomic():
        sample = (
            AuditSample.objects.select_for_update(of=("self",))
            .select_related("document", "run", "accepted_truth")
            .get(pk=sample_id)
        )
        if sample.status == AuditSample.Status.COMPLETED:
            raise ReviewRefused("This run has already been audited.")
        agrees = segmentations_agree(machine_segmentation(sample), segments)
        latest = GroundTruth.objects.latest_locked(sample.document)
        standing = latest is not None and latest.pk == sample.accepted_truth_id
        if standing:
            # The answer moves the label while the audit is still open (the state machine
            # allows an audit's answer only then): agreement settles it, a disagreement keeps
            # it provisional under a second review.
            transition = T.AUDIT_AGREED if agrees else T.AUDIT_DISAGREED
            transition_check(document=sample.document, transition=transition, standing=latest)
            if agrees:
                ground_truth_settle(latest, transition=transition)  # type: ignore[arg-type]
        save_fields(
            sample,
            status=AuditSample.Status.COMPLETED,
            auditor=auditor,
            audited_segments=segmentation_json(segments),
            audited_type=max(segments, key=lambda s: (s[1] - s[0], -s[0]))[2].value,
            agrees=agrees,
            verdict=AuditSample.Verdict.AGREES if agrees else AuditSample.Verdict.DISPUTED,
            note=note,
            audited_at=timezone.now(),
        )
        second = None
        if not agrees and standing:
            second = second_review_open(
                rule=SecondReview.Rule.AUDIT,
                document=sample.document,
                first_by=auditor,
                first=segments,
                audit=sample,
            )
        audit_record(
            user=auditor,
            action=AuditEvent.Action.AUDITED,
            obj=sample,
            detail={
                "run": sample.run_id,
                "machine": segmentation_json(machine_segmentation(sample)),
                "audited": sample.audited_segments,
                "agrees": agrees,
                "second_review": second.pk if second else None,
            },
        )
    logger.info("audit %s by user %s: agrees=%s", sample_id, auditor.pk, agrees)
    return sample
