"""The language model as runs and the /evaluate/ endpoint use it: the configured client with
the throttle shared by every worker, the response cache in the database, the price table and a
deadline (the run's, or the web request's); and the daily budget (what runs and evaluations
spent today, when the next day starts)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Sum
from django.utils import timezone

from engine import llm
from engine.llm.throttle import CircuitState, LocalThrottle, RedisThrottle, Throttle
from reliability import deid
from reliability.models import Evaluation, LLMResponse, Run


class DatabaseResponseCache:
    """engine.llm.ResponseCache on the LLMResponse table, entries valid LLM_CACHE_DAYS days."""

    def __init__(self, *, days: int) -> None:
        self.days = days

    def get(self, key: str) -> str | None:
        try:
            since = timezone.now() - timedelta(days=self.days)
            return (
                LLMResponse.objects.filter(key=key, created_at__gte=since)
                .values_list("response", flat=True)
                .first()
            )
        finally:
            _release_thread_connection()

    def put(self, key: str, *, value: str, operation: str, model: str, prompt_version: str) -> None:
        entry = LLMResponse(
            key=key,
            operation=operation[:32],
            model=model[:64],
            prompt_version=prompt_version[:64],
            response=value,
            created_at=timezone.now(),
        )
        try:
            # One statement, safe when another worker stores the same key at the same time;
            # an expired entry is replaced.
            LLMResponse.objects.bulk_create(
                [entry],
                update_conflicts=True,
                unique_fields=["key"],
                update_fields=["response", "prompt_version", "created_at"],
            )
        finally:
            _release_thread_connection()


def _release_thread_connection() -> None:
    """Calls made at once run on pool threads, each with its own database connection: close
    it after use so none is left open when the thread ends. The main thread keeps its own."""
    if threading.current_thread() is not threading.main_thread() and not connection.in_atomic_block:
        connection.close()


_local_throttle: LocalThrottle | None = None
_local_lock = threading.Lock()


@lru_cache(maxsize=4)
def _redis(url: str) -> Any:
    from redis import Redis

    return Redis.from_url(url, socket_timeout=5)


def shared_throttle() -> Throttle:
    """Through Redis when REDIS_URL is set (every worker on every machine), else per process."""
    global _local_throttle
    if settings.REDIS_URL:
        return RedisThrottle(
            _redis(settings.REDIS_URL), requests_per_minute=settings.LLM_REQUESTS_PER_MINUTE
        )
    with _local_lock:
        if _local_throttle is None:
            _local_throttle = LocalThrottle(requests_per_minute=settings.LLM_REQUESTS_PER_MINUTE)
        return _local_throttle


def circuit_state() -> CircuitState | None:
    """The shared circuit (None when it cannot be read: Redis down)."""
    try:
        return shared_throttle().state()
    except Exception:  # the metrics page must render even when Redis does not answer
        return None


def client_for_run(**overrides: Any) -> llm.LLMClientBase | None:
    """The configured provider's client for one execution of a run, or None without one."""
    options: dict[str, Any] = {
        "throttle": shared_throttle(),
        "cache": DatabaseResponseCache(days=settings.LLM_CACHE_DAYS)
        if settings.LLM_CACHE_DAYS
        else None,
        "deadline": time.monotonic() + settings.RUN_DEADLINE_SECONDS,
    }
    options.update(overrides)
    # LLM_DEIDENTIFY: every caller's prompts carry surrogates (a run adds its document's pages).
    return deid.llm_client(llm.client_from_settings(settings, **options))


def client_for_evaluation() -> llm.LLMClientBase | None:
    """The configured client for one /evaluate/ request: the runs' throttle, cache and budget,
    and a deadline below the web worker's timeout (EVALUATE_DEADLINE_SECONDS), past which a
    document not yet answered gets an error instead of holding the request."""
    return client_for_run(deadline=time.monotonic() + settings.EVALUATE_DEADLINE_SECONDS)


def day_start(now: datetime | None = None) -> datetime:
    now = now or timezone.now()
    return now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def spent_today() -> Decimal:
    """Dollars spent since 00:00 UTC by runs executed (a run that resumes today counts today)
    and by evaluations."""
    since = day_start()
    runs = Run.objects.filter(started_at__gte=since).aggregate(total=Sum("cost_usd"))
    asked = Evaluation.objects.filter(created_at__gte=since).aggregate(total=Sum("cost_usd"))
    return (runs["total"] or Decimal(0)) + (asked["total"] or Decimal(0))


def budget_exhausted() -> bool:
    cap = settings.LLM_DAILY_BUDGET_USD
    return cap > 0 and spent_today() >= Decimal(str(cap))


def next_budget_day() -> datetime:
    return day_start() + timedelta(days=1)


def cache_purge() -> int:
    """Delete cache entries older than LLM_CACHE_DAYS."""
    since = timezone.now() - timedelta(days=settings.LLM_CACHE_DAYS)
    deleted, _ = LLMResponse.objects.filter(created_at__lt=since).delete()
    return deleted
