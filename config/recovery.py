"""Recovery without a human: one pass that resumes whatever a dead worker, a lost Redis or an
unreachable queue left behind. Every RQ worker runs it every RECOVERY_INTERVAL_SECONDS (see
config.worker); ``manage.py recover_runs`` runs it once (cron, inline mode)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)


def recover(*, overdue_grace_seconds: float | None = None) -> dict[str, Any]:
    """``overdue_grace_seconds``: how late a waiting run's scheduled resumption may be before
    this pass resumes it (None: the default grace, which leaves RQ's scheduler its turn).

    Each step is independent: one failing (say, the queue is still down) does not keep the
    others from running. Every step is a conditional update, so passes on several workers at
    once do no harm."""
    from documents.services import documents_recover
    from reliability.llm_runtime import cache_purge
    from reliability.services import recover_stale_runs, resume_overdue_runs, runs_recover_unqueued

    steps: dict[str, Callable[[], Any]] = {
        "documents": documents_recover,
        "stale_runs": recover_stale_runs,
        "unqueued_runs": runs_recover_unqueued,
        "overdue_runs": lambda: (
            resume_overdue_runs()
            if overdue_grace_seconds is None
            else resume_overdue_runs(grace_seconds=overdue_grace_seconds)
        ),
        "cache_purged": cache_purge,
    }
    result: dict[str, Any] = {}
    for name, step in steps.items():
        try:
            result[name] = step()
        except Exception as exc:
            logger.warning("recovery step %s failed: %s", name, exc)
            result[name] = {"error": type(exc).__name__}
    return result
