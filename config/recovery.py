"""Periodic maintenance without a human: the job mechanism's recovery pass (core.jobs.recover:
work whose worker died, work the queue could not take, jobs Redis lost, waiting work now due),
then the learning loop's schedule (an attempt when one is due), then the expired cached LLM
answers, then the retention policy (documents.retention) when it is due. Every RQ worker runs
it every RECOVERY_INTERVAL_SECONDS (config.worker); ``manage.py recover`` runs it once (cron,
in inline mode)."""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

# Retention runs at most this often (its unit is days); a pass that stopped at its batch limit
# leaves it due, so the next recovery pass goes on. Shared through the cache: with Redis, one
# pass for every worker; inline, each ``manage.py recover`` is due.
RETENTION_CHECK_SECONDS = 600
RETENTION_DUE_KEY = "vetted:retention-checked"


def retention_when_due() -> dict[str, Any] | None:
    """One retention pass if RETENTION_DAYS is set and none ran in the last
    RETENTION_CHECK_SECONDS (or the last one left documents to delete); None otherwise."""
    from django.conf import settings
    from django.core.cache import cache

    from documents.retention import retention_apply

    if not settings.RETENTION_DAYS:
        return None
    if not cache.add(RETENTION_DUE_KEY, 1, timeout=RETENTION_CHECK_SECONDS):
        return None
    report = retention_apply()
    if report.more or report.errors:
        cache.delete(RETENTION_DUE_KEY)  # go on at the next recovery pass
    return report.as_dict()


def recover() -> dict[str, Any]:
    """One pass. Each part is independent: one failing (the queue is still down, say) does not
    keep the others from running. Every step is a conditional update, so passes on several
    workers at once do no harm."""
    from core import jobs
    from reliability.learning import learning_schedule
    from reliability.llm_runtime import cache_purge

    result: dict[str, Any] = {"jobs": jobs.recover()}
    try:  # the learning loop's schedule: an attempt when one is due (reliability.learning)
        queued = learning_schedule()
        result["learning"] = queued.pk if queued is not None else None
    except Exception as exc:
        logger.warning("learning schedule failed: %s", exc)
        result["learning"] = {"error": type(exc).__name__}
    try:
        result["cache_purged"] = cache_purge()
    except Exception as exc:
        logger.warning("cache purge failed: %s", exc)
        result["cache_purged"] = {"error": type(exc).__name__}
    try:
        result["retention"] = retention_when_due()
    except Exception as exc:
        logger.exception("retention pass failed")
        result["retention"] = {"error": type(exc).__name__}
    return result
