"""Periodic maintenance without a human: the job mechanism's recovery pass (core.jobs.recover:
work whose worker died, work the queue could not take, jobs Redis lost, waiting work now due),
then the learning loop's schedule (an attempt when one is due), then the expired cached LLM
answers. Every RQ worker runs it every RECOVERY_INTERVAL_SECONDS
(config.worker); ``manage.py recover`` runs it once (cron, in inline mode)."""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)


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
    return result
