"""Reliability workflows: start a run, execute it, record the outcome, recover lost runs."""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from config.jobs import enqueue_on_commit
from documents.models import Document
from reliability import llm, pipeline
from reliability.models import Attempt, Issue, Run
from reliability.offline import OfflineClassifier
from reliability.schemas import SEVERITY_ORDER, ClassificationOutput, Decision, Severity
from reliability.verifiers.context import DocumentContext
from review.models import GroundTruth, ReviewPacket

logger = logging.getLogger(__name__)

RUN_JOB = "reliability.tasks.execute_run"
QUEUE_UNREACHABLE = "The run could not be queued: the job queue is unreachable."
LOW_OCR_REASON = "document has low OCR confidence: a clinician must confirm"


class RunRefused(Exception):
    pass


def get_preset(name: str | None = None) -> pipeline.Preset:
    name = name or settings.RELIABILITY_PRESET
    if name not in pipeline.PRESETS:
        raise RunRefused(f"Unknown preset {name!r}; choose one of {', '.join(pipeline.PRESETS)}.")
    return pipeline.PRESETS[name]


def build_classifiers(client: llm.GeminiClient | None = None) -> tuple[Any, Any | None, Any]:
    """(primary, production comparison or None, LLM client or None) for the configuration."""
    client = client if client is not None else llm.client_from_settings(settings)
    if client is None:
        return OfflineClassifier(), None, None
    return llm.GeminiClassifier(client), OfflineClassifier(), client


def run_start(*, document: Document, preset: str | None = None, user: Any | None = None) -> Run:
    """Create a pending run and queue it once the transaction commits."""
    if document.status != Document.Status.READY:
        raise RunRefused("Only a ready (ingested) document can be classified.")
    chosen = get_preset(preset or (document.options or {}).get("preset"))
    with transaction.atomic():
        run = Run.objects.create(
            document=document,
            preset=chosen.name,
            config={"preset": chosen.__dict__, "gemini_model": settings.GEMINI_MODEL},
            classifier="gemini" if llm.configured(settings) else "offline",
            created_by=user if user is not None and user.is_authenticated else None,
        )
        enqueue_on_commit(
            RUN_JOB,
            run.pk,
            job_id=f"run-{run.pk}",
            on_queue_error=lambda: run_fail(run_id=run.pk, message=QUEUE_UNREACHABLE),
        )
    logger.info("run created id=%s document=%s preset=%s", run.pk, document.pk, chosen.name)
    return run


def run_claim(*, run_id: int) -> bool:
    """Atomically take a pending run, or a running one whose worker's lease expired."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.RUN_LEASE_SECONDS)
    return (
        Run.objects.filter(pk=run_id)
        .filter(Q(status=Run.Status.PENDING) | Q(status=Run.Status.RUNNING, claimed_at__lt=stale))
        .update(
            status=Run.Status.RUNNING, claimed_at=now, job_tries=F("job_tries") + 1, started_at=now
        )
        == 1
    )


def run_fail(*, run_id: int, message: str) -> None:
    Run.objects.filter(pk=run_id).exclude(status=Run.Status.COMPLETED).update(
        status=Run.Status.FAILED, error=message, finished_at=timezone.now(), final_decision=""
    )


def comparison_for(
    primary: ClassificationOutput, second: ClassificationOutput | None, *, name: str
) -> dict[str, Any]:
    if second is None:
        return {
            "available": False,
            "reason": "The offline classifier is the primary: there is no second opinion.",
        }
    boundaries = [(s.start_page, s.end_page) for s in primary.segments]
    other_boundaries = [(s.start_page, s.end_page) for s in second.segments]
    return {
        "available": True,
        "classifier": name,
        "dominant_type": second.dominant_type_overall.value,
        "agrees_on_type": second.dominant_type_overall == primary.dominant_type_overall,
        "agrees_on_segments": boundaries == other_boundaries,
        "classification": second.model_dump(mode="json"),
    }


def _issue_rows(attempt: Attempt, record: pipeline.AttemptRecord) -> list[Issue]:
    return [
        Issue(
            attempt=attempt,
            issue_id=i.id,
            agent=i.agent,
            severity=i.severity.value,
            severity_rank=SEVERITY_ORDER[i.severity],
            code=i.code,
            message=i.message,
            location=i.location,
            suggested_fix=i.suggested_fix,
            auto_fixable=i.auto_fixable,
            llm_fixable=i.llm_fixable,
        )
        for i in record.verification.issues
    ]


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


def run_execute(*, run_id: int, client: llm.GeminiClient | None = None) -> Run | None:
    """Execute a claimed-or-claimable run. Idempotent: a run already taken is left alone."""
    if not run_claim(run_id=run_id):
        logger.info("run %s not claimable (done, failed or running elsewhere)", run_id)
        return None
    run = Run.objects.select_related("document").get(pk=run_id)
    if run.job_tries > settings.RUN_MAX_JOB_TRIES:
        run_fail(run_id=run_id, message=f"Gave up after {run.job_tries - 1} interrupted tries.")
        return None
    started = time.perf_counter()
    primary, second, client = build_classifiers(client)
    preset = get_preset(run.preset)
    document = run.document
    pages = list(document.pages.order_by("number").values_list("text", flat=True))
    context = DocumentContext(
        pages=pages, llm=client, min_dominant_confidence=preset.min_dominant_confidence
    )

    def classify(feedback: str | None) -> tuple[ClassificationOutput, int]:
        before = len(client.calls) if client is not None else 0
        output = primary.classify(pages, feedback)
        return output, (len(client.calls) - before) if client is not None else 0

    try:
        outcome = pipeline.orchestrate(
            classify=classify, context=context, preset=preset, can_reask=client is not None
        )
    except llm.LLMError as exc:
        usage = client.usage() if client is not None else {}
        Run.objects.filter(pk=run_id).update(
            llm_calls=usage.get("calls", 0),
            tokens_in=usage.get("tokens_in", 0),
            tokens_out=usage.get("tokens_out", 0),
            llm_log=usage.get("log", []),
        )
        run_fail(run_id=run_id, message=f"The language model call failed: {exc}")
        logger.warning("run %s failed: LLM error %s", run_id, exc)
        return Run.objects.get(pk=run_id)

    decision = outcome.decision
    stopped = outcome.stopped_reason
    if decision == Decision.AUTO_ACCEPT and document.quality == Document.Quality.LOW_OCR:
        decision, stopped = Decision.ESCALATE_TO_SME, LOW_OCR_REASON
    best = outcome.best
    with transaction.atomic():
        for record in outcome.attempts:
            attempt = Attempt.objects.create(
                run=run,
                number=record.number,
                source=record.source,
                classification=record.output.model_dump(mode="json"),
                fingerprint=record.fingerprint,
                fixes_applied=record.fixes,
                decision=record.decision.value,
                decision_rule=record.verification.verdict.rule,
                decision_trace=record.verification.verdict.trace,
                feedback=record.feedback,
                grounding=record.verification.grounding,
                quality_score=record.verification.quality_score,
                llm_calls=record.llm_calls,
                duration_seconds=round(record.seconds, 4),
                verification_seconds=round(record.verification.seconds, 4),
                note=record.note,
            )
            Issue.objects.bulk_create(_issue_rows(attempt, record))
        if settings.AUTO_EXTRACT:
            from reliability.extraction_service import extraction_run

            extraction_run(run=run, output=best.output, client=client)
        # Usage and duration are taken after extraction, so they count its LLM calls too.
        usage = (
            client.usage()
            if client is not None
            else {"calls": 0, "tokens_in": 0, "tokens_out": 0, "seconds": 0.0, "log": []}
        )
        run.status = Run.Status.COMPLETED
        run.final_decision = decision.value
        run.attempts_count = len(outcome.attempts)
        run.best_attempt_number = best.number
        run.stopped_reason = stopped
        run.classifier = primary.name
        run.model = primary.model
        run.prompt_version = primary.prompt_version
        run.llm_calls = usage["calls"]
        run.tokens_in = usage["tokens_in"]
        run.tokens_out = usage["tokens_out"]
        run.llm_seconds = usage["seconds"]
        run.llm_log = usage["log"]
        run.skipped_checks = sorted(set(best.verification.skipped))
        run.finished_at = timezone.now()
        run.duration_seconds = round(time.perf_counter() - started, 4)
        run.save()
        if decision == Decision.AUTO_ACCEPT:
            ground_truth_record(
                document=document,
                run=run,
                output=best.output,
                source=GroundTruth.Source.AUTO_ACCEPTED,
            )
        else:
            # The second opinion is only shown to a reviewer: compute it for packets alone.
            comparison = comparison_for(
                best.output,
                second.classify(pages) if second else None,
                name=getattr(second, "name", ""),
            )
            packet_create(run=run, outcome=outcome, comparison=comparison)
    logger.info(
        "run %s completed: %s (%s), %s attempt(s)",
        run_id,
        decision.value,
        stopped,
        len(outcome.attempts),
    )
    return run


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
    from reliability.extraction_service import fields_for_ground_truth

    latest = (
        GroundTruth.objects.select_for_update()
        .filter(document=document)
        .order_by("-version")
        .first()
    )
    return GroundTruth.objects.create(
        document=document,
        source=source,
        dominant_type=output.dominant_type_overall.value,
        classification=output.model_dump(mode="json"),
        fields=fields_for_ground_truth(run, field_corrections) if run else [],
        reviewer=reviewer,
        run=run,
        model=run.model if run else "",
        prompt_version=run.prompt_version if run else "",
        version=(latest.version + 1) if latest else 1,
        supersedes=latest,
    )


def packet_create(
    *, run: Run, outcome: pipeline.Outcome, comparison: dict[str, Any]
) -> ReviewPacket:
    best = outcome.best
    issues = [i.model_dump(mode="json") for i in best.verification.issues]
    worst = min((SEVERITY_ORDER[i.severity] for i in best.verification.issues), default=2)
    return ReviewPacket.objects.create(
        run=run,
        document=run.document,
        priority=worst,
        dominant_type=best.output.dominant_type_overall.value,
        worst_severity=[s.value for s in Severity][worst] if best.verification.issues else "",
        issue_count=len(issues),
        classification=best.output.model_dump(mode="json"),
        issues=issues,
        grounding=best.verification.grounding,
        comparison=comparison,
        comparison_agrees=comparison.get("agrees_on_type") if comparison["available"] else None,
        history=_history(outcome),
    )


def recover_stale_runs() -> dict[str, int]:
    """Runs left "running" by a worker that died: queue them again, or fail them for good."""
    stale = timezone.now() - timedelta(seconds=settings.RUN_LEASE_SECONDS)
    requeued = failed = 0
    for run in Run.objects.filter(status=Run.Status.RUNNING, claimed_at__lt=stale):
        if run.job_tries >= settings.RUN_MAX_JOB_TRIES:
            run_fail(
                run_id=run.pk,
                message=f"The worker was lost {run.job_tries} time(s); "
                "giving up. Start a new run to try again.",
            )
            failed += 1
            continue
        with transaction.atomic():
            updated = Run.objects.filter(
                pk=run.pk, status=Run.Status.RUNNING, claimed_at=run.claimed_at
            ).update(status=Run.Status.PENDING, claimed_at=None)
            if updated:
                enqueue_on_commit(RUN_JOB, run.pk, job_id=f"run-{run.pk}-retry{run.job_tries}")
                requeued += 1
    if requeued or failed:
        logger.warning("recovered stale runs: %s requeued, %s failed", requeued, failed)
    return {"requeued": requeued, "failed": failed}
