"""Reliability workflows: start a run, execute it, record the outcome, recover lost runs.

The outcome goes downstream through review's services (ground truth, packets); this module
writes only the reliability tables."""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from config.errors import Refused
from config.jobs import enqueue_on_commit
from documents.models import Document
from engine import llm, pipeline
from engine.classifiers.gemini import GeminiClassifier
from engine.classifiers.offline import OfflineClassifier
from engine.comparison import compare
from engine.document import DocumentContext
from engine.protocols import Classifier, LLMClient
from engine.schemas import (
    SEVERITY_ORDER,
    ClassificationOutput,
    Decision,
    Severity,
    make_issue,
    number_issues,
)
from engine.schemas import Issue as EngineIssue
from integrations.models import Event
from integrations.services import event_emit
from reliability.fields import fields_extract, fields_save, form_issues
from reliability.models import ApiToken, Attempt, Issue, Run
from review import services as review_services
from review.models import GroundTruth

logger = logging.getLogger(__name__)

RUN_JOB = "reliability.tasks.execute_run"
QUEUE_UNREACHABLE = "The run could not be queued: the job queue is unreachable."
LOW_OCR_REASON = "document has low OCR confidence: a clinician must confirm"
FORM_ISSUE_REASON = "the form has an ERROR issue (such as a wrong tax year): a person must confirm"


class RunRefused(Refused):
    pass


def get_preset(name: str | None = None) -> pipeline.Preset:
    name = name or settings.RELIABILITY_PRESET
    if name not in pipeline.PRESETS:
        raise RunRefused(f"Unknown preset {name!r}; choose one of {', '.join(pipeline.PRESETS)}.")
    return pipeline.PRESETS[name]


def build_classifiers(
    client: LLMClient | None = None,
) -> tuple[Classifier, Classifier | None, LLMClient | None]:
    """(primary, production comparison or None, LLM client or None) for the configuration."""
    client = client if client is not None else llm.client_from_settings(settings)
    if client is None:
        return OfflineClassifier(), None, None
    return GeminiClassifier(client), OfflineClassifier(), client


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


def _form_issues(extractions: list[Any]) -> list[EngineIssue]:
    """A form's ERROR issues (a wrong tax year) as blockers for the review packet."""
    return number_issues(
        [
            make_issue(
                "EX",
                Severity.BLOCKER,
                issue.get("code", "form_issue"),
                issue["message"],
                f"segments[{segment}]",
                "Check that the right form (and year) was uploaded.",
            )
            for segment, issue in form_issues(extractions)
        ]
    )


EMPTY_USAGE: dict[str, Any] = {
    "calls": 0,
    "tokens_in": 0,
    "tokens_out": 0,
    "seconds": 0.0,
    "log": [],
}


def run_execute(*, run_id: int, client: LLMClient | None = None) -> Run | None:
    """Execute a claimed-or-claimable run. Idempotent: a run already taken is left alone.

    Everything slow (classification, verification, field extraction, the second opinion) is
    computed first; the outcome is then written in one short transaction.
    """
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
        usage = client.usage() if client is not None else EMPTY_USAGE
        Run.objects.filter(pk=run_id).update(
            llm_calls=usage["calls"],
            tokens_in=usage["tokens_in"],
            tokens_out=usage["tokens_out"],
            llm_log=usage["log"],
        )
        run_fail(run_id=run_id, message=f"The language model call failed: {exc}")
        logger.warning("run %s failed: LLM error %s", run_id, exc)
        return Run.objects.get(pk=run_id)

    decision = outcome.decision
    stopped = outcome.stopped_reason
    if decision == Decision.AUTO_ACCEPT and document.quality == Document.Quality.LOW_OCR:
        decision, stopped = Decision.ESCALATE_TO_SME, LOW_OCR_REASON
    best = outcome.best
    extractions = (
        fields_extract(
            document=document, pages=pages, output=best.output, preset=run.preset, client=client
        )
        if settings.AUTO_EXTRACT
        else []
    )
    extra_issues = _form_issues(extractions)
    if extra_issues and decision == Decision.AUTO_ACCEPT:
        decision, stopped = Decision.ESCALATE_TO_SME, FORM_ISSUE_REASON
    comparison: dict[str, Any] = {}
    if decision != Decision.AUTO_ACCEPT:
        # The second opinion is only shown to a reviewer: compute it for packets alone.
        comparison = compare(
            best.output,
            second.classify(pages) if second else None,
            name=second.name if second else "",
        )
    # Usage and duration are taken after extraction, so they count its LLM calls too.
    usage = client.usage() if client is not None else EMPTY_USAGE

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
        fields_save(run=run, rows=extractions)
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
        outcome_ids: dict[str, Any] = {}
        if decision == Decision.AUTO_ACCEPT:
            truth = review_services.ground_truth_record(
                document=document,
                run=run,
                output=best.output,
                source=GroundTruth.Source.AUTO_ACCEPTED,
            )
            outcome_ids["ground_truth_id"] = truth.pk
        else:
            packet = review_services.packet_create(
                run=run, outcome=outcome, comparison=comparison, extra_issues=extra_issues
            )
            outcome_ids["packet_id"] = packet.pk
        event_emit(
            kind=Event.RUN_DECIDED,
            data={
                "run_id": run.pk,
                "document_id": str(document.pk),
                "decision": decision.value,
                "dominant_type": best.output.dominant_type_overall.value,
                "attempts": len(outcome.attempts),
                **outcome_ids,
            },
        )
    logger.info(
        "run %s completed: %s (%s), %s attempt(s)",
        run_id,
        decision.value,
        stopped,
        len(outcome.attempts),
    )
    return run


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


# -- API tokens -----------------------------------------------------------------------------------


def api_token_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def api_token_create(*, user: Any, name: str) -> tuple[ApiToken, str]:
    """A new token; the key is returned once and only its hash is stored."""
    key = f"vt_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        user=user, name=name, key_hash=api_token_hash(key), prefix=key[:8]
    )
    return token, key


def api_token_authenticate(*, key: str) -> ApiToken | None:
    """The live token for this key (unrevoked, of an active user), marked as used; or None."""
    token = (
        ApiToken.objects.select_related("user")
        .filter(key_hash=api_token_hash(key), revoked=False)
        .first()
    )
    if token is None or not token.user.is_active:
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token
