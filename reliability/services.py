"""Reliability workflows: start a run, execute it, record the outcome, put it aside to wait.

The outcome goes downstream through ``hooks.run_decided`` (config.wiring hands it to review:
ground truth or a packet); this module writes only the reliability tables."""

from __future__ import annotations

import hashlib
import logging
import random
import secrets
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import events, jobs
from core.errors import Refused
from core.rows import save_fields
from documents.models import Document
from engine import llm, pipeline
from engine import run as engine_run
from engine.classifiers.gemini import FewShotExample, GeminiClassifier
from engine.classifiers.offline import OfflineClassifier
from engine.classifiers.trained import TrainedClassifier
from engine.document import HiddenText
from engine.fields.templates import Template
from engine.protocols import Classifier, LLMClient
from engine.schemas import (
    SEVERITY_ORDER,
    Decision,
)
from reliability import deid, hooks, learning, llm_runtime, training, waivers
from reliability.fields import classification_templates, fields_extract, fields_save
from reliability.jobs import RUN
from reliability.learner import ChainResult
from reliability.models import ApiToken, Attempt, Extraction, Issue, Revocation, Run

logger = logging.getLogger(__name__)

WAIT_BASE_SECONDS = 15.0  # without a server hint, waits grow 15 s, 30 s, 60 s ... 15 min
WAIT_MAX_SECONDS = 900.0


class RunRefused(Refused):
    pass


def get_preset(name: str | None = None) -> pipeline.Preset:
    name = name or settings.RELIABILITY_PRESET
    if name not in pipeline.PRESETS:
        raise RunRefused(f"Unknown preset {name!r}; choose one of {', '.join(pipeline.PRESETS)}.")
    return pipeline.PRESETS[name]


def gate_classifier() -> Classifier:
    """The independent classifier the gate compares an LLM's answer with: the offline rules,
    whether or not a trained classifier is active. The trained classifier learns from the
    clinicians' corrections, and the same corrections are the examples shown to the LLM
    (training.few_shot_examples): as the gate it would have learned from what the model was
    shown, and one poisoned correction could teach both to agree. The rules learn from no
    document (docs/independence.md)."""
    return OfflineClassifier()


def build_classifiers(
    client: LLMClient | None = None,
    *,
    templates: Sequence[Template] = (),
    examples: Sequence[FewShotExample] = (),
) -> tuple[Classifier, Classifier | None, LLMClient | None]:
    """(primary, independent gate or None, LLM client or None) for the configuration. With
    ``templates``, the Gemini classifier also extracts each segment's fields in its one call;
    ``examples`` are corrected documents shown to it as data, and its gate is the rules
    (gate_classifier). Offline, an active trained classifier is the primary and the rules are
    its gate; without one, the rules alone."""
    client = client if client is not None else llm_runtime.client_for_run()
    if client is None:
        model = training.active_model()
        if model is None:
            return OfflineClassifier(), None, None
        rules = training.MemoOffline()
        return TrainedClassifier(model, base=rules), rules, None
    classifier = GeminiClassifier(client, templates=templates, examples=examples)
    return classifier, gate_classifier(), client


def run_start(
    *,
    document: Document,
    preset: str | None = None,
    user: Any | None = None,
    fresh: bool = False,
) -> Run:
    """Create a pending run and queue it once the transaction commits. ``fresh`` asks the
    language model again instead of answering from the response cache."""
    if document.status != Document.Status.READY:
        raise RunRefused("Only a ready (ingested) document can be classified.")
    chosen = get_preset(preset or (document.options or {}).get("preset"))
    with transaction.atomic():
        run = Run.objects.create(
            document=document,
            preset=chosen.name,
            config={
                "preset": chosen.__dict__,
                **_model_config(),
                "llm_cache": not fresh,
            },
            classifier=llm.provider(settings) if llm.configured(settings) else "offline",
            created_by=user if user is not None and user.is_authenticated else None,
            retry_at=timezone.now(),
        )
        jobs.submit(RUN, [run.pk])
    logger.info("run created id=%s document=%s preset=%s", run.pk, document.pk, chosen.name)
    return run


def _model_config() -> dict[str, str]:
    """The configured language model, recorded in a run's config (Gemini runs as before)."""
    if llm.provider(settings) == "gemini":
        return {"gemini_model": settings.GEMINI_MODEL}
    return {"llm_provider": llm.provider(settings), "llm_model": llm.model_name(settings)}


class RunSuperseded(Exception):
    """This execution lost its claim (another worker holds the run now): its outcome is
    dropped, so a run is decided once."""


def _accounting(run: Run, usage: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The run's LLM accounting and duration with this execution's added: a run that waited
    and resumed keeps what it spent before."""
    return {
        "llm_calls": run.llm_calls + usage["calls"],
        "llm_requests": run.llm_requests + usage["requests"],
        "llm_cache_hits": run.llm_cache_hits + usage["cache_hits"],
        "tokens_in": run.tokens_in + usage["tokens_in"],
        "tokens_out": run.tokens_out + usage["tokens_out"],
        "tokens_thinking": run.tokens_thinking + usage["tokens_thinking"],
        "cost_usd": run.cost_usd + Decimal(str(usage["cost_usd"])),
        "llm_seconds": round(run.llm_seconds + usage["seconds"], 3),
        "llm_log": [*run.llm_log, *usage["log"]],
        "duration_seconds": round((run.duration_seconds or 0.0) + seconds, 4),
    }


def run_fail(
    *,
    run_id: int,
    message: str,
    usage: dict[str, Any] | None = None,
    seconds: float | None = None,
    code: str = "",
) -> None:
    """Fail a run for good, keeping what it spent and how long it took."""
    fields: dict[str, Any] = {
        "status": Run.Status.FAILED,
        "error": message,
        "error_code": code,
        "finished_at": timezone.now(),
        "final_decision": "",
        "retry_at": None,
    }
    if usage is not None or seconds is not None:
        run = Run.objects.filter(pk=run_id).first()
        if run is not None:
            fields.update(_accounting(run, usage or EMPTY_USAGE, seconds or 0.0))
    Run.objects.filter(pk=run_id).exclude(status=Run.Status.COMPLETED).update(**fields)


def run_wait(
    *,
    run: Run,
    retry_at: datetime,
    reason: str,
    code: str,
    usage: dict[str, Any] | None = None,
    seconds: float = 0.0,
) -> None:
    """Put a run aside until ``retry_at`` (the language model is unavailable, or the daily
    budget is spent); the recovery pass sends it again then (core.jobs). Past
    LLM_WAIT_MAX_HOURS of waiting it fails."""
    now = timezone.now()
    since = run.waiting_since or now
    if now - since > timedelta(hours=settings.LLM_WAIT_MAX_HOURS):
        run_fail(
            run_id=run.pk,
            message=f"The language model was unavailable for more than "
            f"{settings.LLM_WAIT_MAX_HOURS:g} hours (last: {reason}). Start a new run to try "
            "again.",
            usage=usage,
            seconds=seconds,
            code=Run.ErrorCode.LLM_UNAVAILABLE_TOO_LONG,
        )
        return
    retry_at = max(retry_at, now + timedelta(seconds=1))
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.WAITING,
        retry_at=retry_at,
        wait_reason=reason[:300],
        wait_code=code,
        waits=run.waits + 1,
        waiting_since=since,
        claimed_at=None,
        job_tries=0,  # waiting is not an interrupted try
        **_accounting(run, usage or EMPTY_USAGE, seconds),
    )
    logger.warning("run %s waits until %s: %s", run.pk, retry_at.isoformat(), reason)


def _wait_until(exc: llm.LLMUnavailable, waits: int) -> datetime:
    """When to try again: the server's (or the open circuit's) moment when it gave one, else a
    backoff growing with each wait; spread with jitter so waiting runs do not all return at
    once."""
    delay = max(0.0, exc.retry_at - time.time())
    if not exc.hinted:
        delay = max(delay, min(WAIT_MAX_SECONDS, WAIT_BASE_SECONDS * 2**waits))
    delay += random.uniform(0, 2 + 0.1 * delay)
    return timezone.now() + timedelta(seconds=delay)


def run_resume(*, run: Run) -> bool:
    """Try a waiting run now (a user's "Try now")."""
    with transaction.atomic():
        updated = Run.objects.filter(pk=run.pk, status=Run.Status.WAITING).update(
            status=Run.Status.PENDING, retry_at=timezone.now()
        )
        if updated:
            jobs.submit(RUN, [run.pk])
    return bool(updated)


def attempts_save(run: Run, outcome: pipeline.Outcome) -> None:
    """A run's attempts, each with its issues, as the orchestrator recorded them."""
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


EMPTY_USAGE: dict[str, Any] = {
    "calls": 0,
    "requests": 0,
    "cache_hits": 0,
    "tokens_in": 0,
    "tokens_out": 0,
    "tokens_thinking": 0,
    "cost_usd": 0.0,
    "seconds": 0.0,
    "log": [],
}


def run_execute(*, run_id: int, client: LLMClient | None = None) -> Run | None:
    """Execute a claimed-or-claimable run. Idempotent: a run already taken is left alone.

    Everything slow (classification, verification, field extraction, the second opinion) is
    computed first; the outcome is then written in one short transaction. A transient LLM
    failure puts the run in WAITING (it resumes by itself; answers already given come from the
    cache); a permanent one fails it with the reason; a failed re-ask escalates what it has.
    """
    claim = jobs.claim(RUN, run_id)
    if claim is None:
        logger.info("run %s not claimable (done, failed, waiting or running elsewhere)", run_id)
        return None
    run = Run.objects.select_related("document").get(pk=run_id)
    with claim.heartbeat():
        return _run_execute_claimed(run, claim=claim, client=client)


def hidden_text_of(document: Any) -> list[HiddenText]:
    """What ingestion recorded of the text a reader cannot see on each page (kinds and word
    counts, never the text), for V3 to raise."""
    rows = document.pages.exclude(hidden=[]).order_by("number").values_list("number", "hidden")
    return [
        HiddenText(page=number, kind=str(item.get("kind", "")), words=int(item.get("words", 0)))
        for number, record in rows
        for item in record or []
    ]


def _run_execute_claimed(run: Run, *, claim: jobs.Claim, client: LLMClient | None) -> Run:
    """The run in three steps: gather what it needs, the engine's decision, one save."""
    started = time.perf_counter()
    gathered = run_inputs(run, client=client)
    if gathered is None:  # the daily budget is spent: the run waits
        return Run.objects.get(pk=run.pk)
    inputs, checks = gathered
    try:
        decided = engine_run.decide(inputs)
    except llm.LLMUnavailable as exc:
        run_wait(
            run=run,
            retry_at=_wait_until(exc, run.waits),
            reason=f"waiting for the language model: {exc}",
            code=Run.WaitCode.LLM_UNAVAILABLE,
            usage=_usage(inputs),
            seconds=time.perf_counter() - started,
        )
        return Run.objects.get(pk=run.pk)
    except llm.LLMError as exc:
        run_fail(
            run_id=run.pk,
            message=f"The language model call failed: {exc}",
            usage=_usage(inputs),
            seconds=time.perf_counter() - started,
            code=Run.ErrorCode.LLM_FAILED,
        )
        logger.warning("run %s failed: LLM error %s", run.pk, exc)
        return Run.objects.get(pk=run.pk)
    return _run_save(
        run, claim=claim, inputs=inputs, checks=checks, decided=decided, started=started
    )


def run_inputs(
    run: Run, *, client: LLMClient | None
) -> tuple[engine_run.RunInputs, learning.RunChecks] | None:
    """Load what the run decides on (and the learning checks it was decided with, for its
    learning record). None when it needs the language model and the daily budget is spent:
    the run is put aside to wait (run_wait)."""
    document = run.document
    if client is None:
        fresh = (run.config or {}).get("llm_cache") is False
        client = llm_runtime.client_for_run(**({"cache": None} if fresh else {}))
    elif client.deadline is None:
        client.deadline = time.monotonic() + settings.RUN_DEADLINE_SECONDS
    pages = list(document.pages.order_by("number").values_list("text", flat=True))
    client = deid.llm_client(client, pages=pages)  # LLM_DEIDENTIFY: surrogates leave, not PHI
    examples = (
        training.few_shot_examples(pages, exclude_document=document.pk)
        if client is not None
        else []
    )
    primary, gate, client = build_classifiers(
        client, templates=classification_templates(document), examples=examples
    )
    if client is not None and llm_runtime.budget_exhausted():
        run_wait(
            run=run,
            retry_at=llm_runtime.next_budget_day(),
            reason=f"the daily language-model budget (${settings.LLM_DAILY_BUDGET_USD:g}) is "
            "spent; the run resumes when the next day starts (00:00 UTC)",
            code=Run.WaitCode.BUDGET,
        )
        return None
    preset = get_preset(run.preset)
    # The learning loop's checks (reliability.learning): novelty against the active model's
    # training documents, and the risk-controlled thresholds, which replace the preset's.
    checks = learning.run_checks(primary)
    source = learning.document_source(document)
    inputs = engine_run.RunInputs(
        pages=tuple(pages),
        hidden=tuple(hidden_text_of(document)),
        preset=preset,
        primary=primary,
        gate=gate,
        client=client,
        examples=tuple(examples),
        thresholds=checks.table,
        novelty_index=checks.index,
        source=source,
        waive=partial(waivers.run_waived, source=source, certified=checks.table is not None),
        exemplar=learning.exemplar_vote(pages=pages, source=source)
        if checks.table is not None
        else None,
        gate_confirm_confidence=settings.GATE_CONFIRM_CONFIDENCE,
        low_ocr=document.quality == Document.Quality.LOW_OCR,
        extract_fields=partial(fields_extract, document=document, pages=pages, preset=run.preset)
        if settings.AUTO_EXTRACT
        else None,
    )
    return inputs, checks


def _usage(inputs: engine_run.RunInputs) -> dict[str, Any]:
    return inputs.client.usage() if inputs.client is not None else EMPTY_USAGE


def _run_save(
    run: Run,
    *,
    claim: jobs.Claim,
    inputs: engine_run.RunInputs,
    checks: learning.RunChecks,
    decided: engine_run.RunDecision,
    started: float,
) -> Run:
    """Store a decided run in one transaction (its attempts, fields, accounting and learning
    record) and hand the outcome downstream (hooks.run_decided)."""
    outcome, best, decision, primary = (
        decided.outcome,
        decided.best,
        decided.decision,
        inputs.primary,
    )
    # Usage and duration are taken after extraction, so they count its LLM calls too.
    usage = _usage(inputs)
    with transaction.atomic():
        if not claim.holds():
            raise RunSuperseded(str(run.pk))
        attempts_save(run, outcome)
        fields_save(run=run, rows=decided.fields)
        save_fields(
            run,
            **_accounting(run, usage, time.perf_counter() - started),
            status=Run.Status.COMPLETED,
            final_decision=decision.value,
            attempts_count=len(outcome.attempts),
            best_attempt_number=best.number,
            stopped_reason=decided.stopped_reason[:200],
            classifier=primary.name,
            model=primary.model,
            prompt_version=primary.prompt_version,
            gate=decided.gate,
            few_shot_ids=[e.key for e in inputs.examples],
            learning=learning.run_summary(
                ChainResult(
                    predicted=best.output.dominant_type_overall.value,
                    decision=decision.value,
                    score=decided.score,
                    novelty=decided.novelty,
                    codes=decided.codes,
                    gate_agrees=decided.gate_agrees,
                ),
                checks=checks,
                source=inputs.source,
                novelty=decided.novelty,
                exemplar=inputs.exemplar,
                waived=decided.waived,
            ),
            retry_at=None,
            wait_reason="",
            wait_code="",
            skipped_checks=sorted(set(best.verification.skipped)),
            finished_at=timezone.now(),
        )
        outcome_ids: dict[str, Any] = {}
        for found in hooks.run_decided(
            hooks.RunDecided(
                run=run,
                outcome=outcome,
                accepted=decision == Decision.AUTO_ACCEPT,
                comparison=decided.comparison,
                extra_issues=decided.form_issues,
            )
        ):
            outcome_ids.update(found)
        decided_event: dict[str, Any] = {
            "run_id": run.pk,
            "document_id": str(run.document.pk),
            "decision": decision.value,
            "attempts": len(outcome.attempts),
            **outcome_ids,
        }
        # A provisional answer is under a blind audit: the machine's type stays out of it.
        if outcome_ids.get("state") != "provisional":
            decided_event["dominant_type"] = best.output.dominant_type_overall.value
        events.publish(events.Event.RUN_DECIDED, decided_event)
    logger.info(
        "run %s completed: %s (%s), %s attempt(s), %s call(s)",
        run.pk,
        decision.value,
        decided.stopped_reason,
        len(outcome.attempts),
        usage["calls"],
    )
    return run


# -- API tokens -----------------------------------------------------------------------------------


def api_token_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def api_token_create(*, user: Any, name: str, days: int | None = None) -> tuple[ApiToken, str]:
    """A new token that expires after ``days`` (API_TOKEN_DAYS by default, and never more);
    the key is returned once and only its hash is stored."""
    days = settings.API_TOKEN_DAYS if days is None else days
    if not 1 <= days <= settings.API_TOKEN_DAYS:
        raise ValueError(f"A token lasts 1 to {settings.API_TOKEN_DAYS} days (API_TOKEN_DAYS).")
    key = f"vt_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        user=user,
        name=name,
        key_hash=api_token_hash(key),
        prefix=key[:8],
        expires_at=timezone.now() + timedelta(days=days),
    )
    return token, key


def api_token_authenticate(*, key: str) -> ApiToken:
    """The live token for this key, marked as used. Refused (401, with a code) when it is
    unknown or revoked (``token_invalid``), expired (``token_expired``) or its user is
    deactivated (``user_inactive``). Whether the user holds a role is the caller's check."""
    token = (
        ApiToken.objects.select_related("user")
        .filter(key_hash=api_token_hash(key), revoked=False)
        .first()
    )
    if token is None:
        raise Refused(
            "The API token is not valid (unknown or revoked).", status=401, code="token_invalid"
        )
    now = timezone.now()
    if token.expired(now):
        raise Refused(
            f"The API token {token.prefix}\u2026 expired on "
            f"{token.expires_at:%Y-%m-%d %H:%M} UTC: ask an administrator for a new one.",
            status=401,
            code="token_expired",
        )
    if not token.user.is_active:
        raise Refused("The API token's user is deactivated.", status=401, code="user_inactive")
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def api_tokens_revoke(*, user: Any, by: str = Revocation.IDENTITY_PROVIDER) -> int:
    """Revoke every live token of ``user`` (its account was deactivated; ``by``, a Revocation
    code, says who ended it): how many."""
    return ApiToken.objects.filter(user=user, revoked=False).update(revoked=True, revoked_by=by)


# -- retention (documents.retention, wired by config.wiring) -------------------------------------

RUN_OPEN = "run_open"  # retention hold code: a run of the document is still under way


def retention_holds(document_ids: Sequence[Any]) -> dict[Any, str]:
    """The documents of ``document_ids`` with a run still pending, running or waiting for the
    language model: kept past the retention age until it ends."""
    open_runs = Run.objects.filter(
        document_id__in=list(document_ids),
        status__in=[Run.Status.PENDING, Run.Status.RUNNING, Run.Status.WAITING],
    )
    return dict.fromkeys(open_runs.values_list("document_id", flat=True).distinct(), RUN_OPEN)


def document_runs_erase(*, document: Document) -> dict[str, int]:
    """Delete every run of ``document`` with its attempts, issues and extracted fields (they
    quote the pages: evidence snippets, field values, the model's reasoning). Call inside the
    transaction that deletes the document, after review erased what refers to the runs.
    Returns what was deleted, by model."""
    extractions, _ = Extraction.objects.filter(document=document).delete()
    _, deleted = Run.objects.filter(document=document).delete()
    counts = {label.rsplit(".", 1)[1].lower(): n for label, n in deleted.items()}
    counts["extraction"] = counts.get("extraction", 0) + extractions
    return counts
