"""The queue jobs go to: django-rq's configured "default" queue (settings.RQ_QUEUES) when
REDIS_URL is set, or the calling process itself (inline) when it is not: in the caller, or,
for work declared ``background_inline``, in one background thread of the process, one job after
another (a process that exits waits up to BACKGROUND_DRAIN_SECONDS for them; what it leaves is
still queued in the database, for the recovery pass).

Jobs are plain functions, named by dotted path, that take one row id (never a model
instance). This module only moves jobs; which rows need one, and when, is decided by
core.jobs.dispatch on the rows themselves (PostgreSQL is the source of truth, not RQ).
"""

from __future__ import annotations

import atexit
import logging
import queue as queues
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings
from django.db import connections
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)

FAILED_JOB_TTL = 7 * 86400  # seconds RQ keeps a failed job for inspection
# A job in one of these states is still going to run, or running: pushing its id again would
# only put a duplicate on the queue. Any other state (finished, failed, stopped, canceled), or
# no job at all (Redis lost it, or its result expired), means no job is coming for the row.
PENDING_STATES = frozenset(
    {"queued", "started", "deferred", "scheduled", "rate_limited", "ready_to_enqueue"}
)


def jobs_run_inline() -> bool:
    return not settings.REDIS_URL


def get_queue(name: str = "default") -> Any:
    """django-rq's configured queue. Jobs are pushed when this is called to (commit mode
    "auto"): core.jobs waits for the commit itself, and must see a refused push to mark the
    row, which django-rq's own on-commit mode would hide."""
    import django_rq

    return django_rq.get_queue(name, commit_mode="auto")


BACKGROUND_DRAIN_SECONDS = 60.0
_background: queues.Queue[tuple[str, Any]] = queues.Queue()
_background_lock = threading.Lock()
_background_thread: threading.Thread | None = None


def _run_background() -> None:
    while True:
        func, argument = _background.get()
        try:
            import_string(func)(argument)
        except Exception:  # the job records its own failures; this is a bug in it
            logger.exception("background job %s(%s) crashed", func, argument)
        finally:
            connections.close_all()  # this thread's own
            _background.task_done()


def _push_background(func: str, calls: Sequence[tuple[Any, str]]) -> None:
    global _background_thread
    with _background_lock:
        if _background_thread is None or not _background_thread.is_alive():
            if _background_thread is None:
                atexit.register(_drain_at_exit)
            _background_thread = threading.Thread(
                target=_run_background, name="inline-background-jobs", daemon=True
            )
            _background_thread.start()
    for argument, _ in calls:
        _background.put((func, argument))


def drain_background(timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for the inline background jobs of this process to
    finish; whether they did (tests, benchmarks, and a process that exits)."""
    deadline = time.monotonic() + timeout
    while _background.unfinished_tasks:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _drain_at_exit() -> None:
    if not drain_background(BACKGROUND_DRAIN_SECONDS):
        logger.warning(
            "exiting with %s background job(s) unfinished: they stay queued for the recovery pass",
            _background.unfinished_tasks,
        )


def push(
    func: str, calls: Sequence[tuple[Any, str]], *, queue: Any = None, background: bool = False
) -> None:
    """Run ``func`` once for each (argument, job id): inline, now, in this process (with
    ``background``, in its background thread, in order); or queued on RQ (``queue``, by
    default the configured one) in one round trip, all or none. Raises RedisError when the
    queue is unreachable."""
    if not calls:
        return
    if jobs_run_inline():
        if background:
            _push_background(func, calls)
            return
        job = import_string(func)
        for argument, _ in calls:
            job(argument)
        return
    from rq import Queue

    (queue or get_queue()).enqueue_many(
        [
            Queue.prepare_data(
                func,
                (argument,),
                job_id=job_id,
                result_ttl=settings.JOB_RESULT_TTL,
                failure_ttl=FAILED_JOB_TTL,
            )
            for argument, job_id in calls
        ]
    )
    logger.info("queued %s job(s) of %s", len(calls), func)


def jobs_missing(job_ids: Iterable[str], *, connection: Any = None) -> set[str]:
    """Those of ``job_ids`` that no RQ job will run: unknown to Redis, or already over
    (finished, failed, stopped). Asked in one round trip (on ``connection``, by default the
    configured queue's). Inline: all of them (nothing ever waits on a queue). Raises
    RedisError when Redis is unreachable."""
    job_ids = list(job_ids)
    if jobs_run_inline() or not job_ids:
        return set(job_ids)
    from rq.job import Job

    connection = connection or get_queue().connection
    with connection.pipeline(transaction=False) as pipe:
        for job_id in job_ids:
            pipe.hget(Job.key_for(job_id), "status")
        states = pipe.execute()
    return {
        job_id
        for job_id, state in zip(job_ids, states, strict=True)
        if state is None or state.decode() not in PENDING_STATES
    }
