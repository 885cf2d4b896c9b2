"""Enqueue background work: RQ when REDIS_URL is set, inline otherwise.

Jobs are plain functions, named by dotted path, that take ids (never model instances). Call `enqueue_on_commit` from
inside a transaction so a worker never sees a row that is not committed yet.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)


def jobs_run_inline() -> bool:
    return not settings.REDIS_URL


def get_queue(name: str = "default") -> Any:
    from redis import Redis
    from rq import Queue

    timeout = settings.RQ_QUEUES.get(name, {}).get("DEFAULT_TIMEOUT", 900)
    return Queue(name, connection=Redis.from_url(settings.REDIS_URL), default_timeout=timeout)


def enqueue(func: str, *args: Any, job_id: str | None = None) -> None:
    if jobs_run_inline():
        import_string(func)(*args)
        return
    get_queue().enqueue(
        func, *args, job_id=job_id, result_ttl=settings.JOB_RESULT_TTL, failure_ttl=7 * 86400
    )
    logger.info("enqueued %s job_id=%s", func, job_id)


def enqueue_on_commit(func: str, *args: Any, job_id: str | None = None) -> None:
    transaction.on_commit(lambda: enqueue(func, *args, job_id=job_id))
