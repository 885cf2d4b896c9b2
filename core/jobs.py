"""Enqueue background work: RQ when REDIS_URL is set, inline otherwise.

Jobs are plain functions, named by dotted path, that take ids (never model instances).
Call `enqueue_on_commit` from inside a transaction so a worker never sees a row that is not
committed yet.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)


def jobs_run_inline() -> bool:
    return not settings.REDIS_URL


def get_queue(name: str = "default") -> Any:
    from redis import Redis
    from rq import Queue

    return Queue(
        name,
        connection=Redis.from_url(settings.REDIS_URL),
        default_timeout=settings.JOB_TIMEOUT_SECONDS,
    )


FAILED_JOB_TTL = 7 * 86400  # seconds RQ keeps a failed job for inspection


def _job_options() -> dict[str, Any]:
    """What every job is queued with, whichever way it is queued."""
    return {"result_ttl": settings.JOB_RESULT_TTL, "failure_ttl": FAILED_JOB_TTL}


def enqueue(func: str, *args: Any, job_id: str | None = None) -> None:
    if jobs_run_inline():
        import_string(func)(*args)
        return
    get_queue().enqueue(func, *args, job_id=job_id, **_job_options())
    logger.info("enqueued %s job_id=%s", func, job_id)


def job_exists(job_id: str) -> bool:
    """Whether Redis still knows this job (queued, started or finished). Inline: never."""
    if jobs_run_inline():
        return False
    from redis import Redis
    from rq.job import Job

    return bool(Job.exists(job_id, connection=Redis.from_url(settings.REDIS_URL)))


def jobs_missing(job_ids: Sequence[str]) -> set[str]:
    """Those of ``job_ids`` Redis does not know, asked in one round trip. Inline: all."""
    if jobs_run_inline() or not job_ids:
        return set(job_ids)
    from redis import Redis
    from rq.job import Job

    redis = Redis.from_url(settings.REDIS_URL)
    with redis.pipeline(transaction=False) as pipe:
        for job_id in job_ids:
            pipe.exists(Job.key_for(job_id))
        found = pipe.execute()
    return {job_id for job_id, exists in zip(job_ids, found, strict=True) if not exists}


def enqueue_at(func: str, *args: Any, when: datetime, job_id: str | None = None) -> bool:
    """Run a job at ``when`` (RQ's scheduler: workers started with ``--with-scheduler``).

    Inline mode has no scheduler: nothing is queued and False is returned; the caller leaves
    the row in a state that ``recover_runs`` (cron) or a user picks up later.
    """
    if jobs_run_inline():
        return False
    get_queue().enqueue_at(when, func, *args, job_id=job_id, **_job_options())
    logger.info("scheduled %s job_id=%s at %s", func, job_id, when.isoformat())
    return True


def enqueue_on_commit(
    func: str,
    *args: Any,
    job_id: str | None = None,
    on_queue_error: Callable[[], None] | None = None,
) -> None:
    """Enqueue once the surrounding transaction commits.

    If the queue cannot be reached, ``on_queue_error`` records that on the row (so nothing
    is left waiting for a job that does not exist) instead of failing the request.
    """

    def send() -> None:
        if jobs_run_inline():
            enqueue(func, *args, job_id=job_id)
            return
        try:
            enqueue(func, *args, job_id=job_id)
        except RedisError:
            logger.exception("could not enqueue %s job_id=%s", func, job_id)
            if on_queue_error is None:
                raise
            on_queue_error()

    transaction.on_commit(send)


def enqueue_many_on_commit(
    func: str,
    calls: Sequence[tuple[tuple[Any, ...], str]],
    *,
    on_queue_error: Callable[[], None] | None = None,
) -> None:
    """``enqueue_on_commit`` of several calls of ``func``, each (args, job_id), sent to Redis
    in one transaction (all queued or none) once the surrounding transaction commits."""

    def send() -> None:
        if jobs_run_inline():
            for args, job_id in calls:
                enqueue(func, *args, job_id=job_id)
            return
        from rq import Queue

        try:
            get_queue().enqueue_many(
                [
                    Queue.prepare_data(func, args, job_id=job_id, **_job_options())
                    for args, job_id in calls
                ]
            )
        except RedisError:
            logger.exception("could not enqueue %s jobs of %s", len(calls), func)
            if on_queue_error is None:
                raise
            on_queue_error()
            return
        logger.info("enqueued %s jobs of %s", len(calls), func)

    if calls:
        transaction.on_commit(send)
