"""Sending jobs for rows, and the one recovery pass that keeps every kind of work moving.

``submit`` sends the jobs of rows an app has just put in their queued state, once the
transaction commits; when Redis does not answer, the rows are marked QUEUE_UNREACHABLE
instead (the request that made them never fails for it).

``recover`` is the pass every RQ worker runs every RECOVERY_INTERVAL_SECONDS (config.worker)
and ``manage.py recover`` runs from cron in inline mode. For each registered kind of work:

1. stale: running rows whose heartbeat is older than JOB_STALE_SECONDS lost their worker:
   queued again and sent, or failed for good after ``max_attempts``;
2. resumed: rows marked QUEUE_UNREACHABLE are queued again and sent;
3. lost: queued rows older than QUEUE_LOST_SECONDS whose job Redis does not hold (asked in
   one pipelined round trip) are sent again;
4. due: waiting rows whose time has come are sent. This is the scheduler of retries and
   waits: nothing is handed to RQ's scheduler, so nothing starts before its time and there
   is no scheduler process to lose. A job that finds its row not yet due loses nothing: the
   row stays waiting and a later pass sends it again.

A job id Redis still holds (queued or started) is never pushed again, so a busy queue does not
fill with duplicates. Every change is a conditional update, so passes running at the same
time do no harm; a job sent twice does its work once (only one claim succeeds). Call it
outside a transaction: what it sends must be committed first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from redis.exceptions import RedisError

from core.jobs.lease import stale
from core.jobs.queue import get_queue, jobs_missing, jobs_run_inline, push
from core.jobs.work import QUEUE_UNREACHABLE, WORKER_LOST, Work, registered

logger = logging.getLogger(__name__)

STEPS = ("requeued", "failed", "resumed", "lost", "due")


def _argument(pk: Any) -> Any:
    return pk if isinstance(pk, int) else str(pk)


def send(work: Work, rows: Iterable[tuple[Any, ...]], *, mark_unreachable: bool) -> list[Any]:
    """Push the jobs of ``rows`` (the values of ``work.job_fields``), except those Redis
    already holds; inline, run them now. Returns the pks sent. When Redis does not answer,
    nothing is sent and, with ``mark_unreachable``, those rows still queued are marked
    QUEUE_UNREACHABLE."""
    by_job = {work.job_id(values): values[0] for values in rows}
    if not by_job:
        return []
    try:
        queue = None if jobs_run_inline() else get_queue()  # one connection for both
        missing = jobs_missing(by_job, connection=queue and queue.connection)
        calls = [(_argument(pk), job_id) for job_id, pk in by_job.items() if job_id in missing]
        background = work.background_inline
        if callable(background):
            background = bool(calls) and queue is None and background([pk for pk, _ in calls])
        push(work.func, calls, queue=queue, background=bool(background))
    except RedisError as exc:
        logger.warning("could not queue %s %s job(s): %s", len(by_job), work.name, exc)
        if mark_unreachable:
            mark_queue_unreachable(work, list(by_job.values()))
        return []
    return [by_job[job_id] for _, job_id in calls]


def mark_queue_unreachable(work: Work, pks: list[Any]) -> int:
    """Mark those of ``pks`` still queued as QUEUE_UNREACHABLE (resumed by the next pass)."""
    now = timezone.now()
    return work.rows.filter(pk__in=pks, status=work.queued).update(
        status=work.unreachable_status, **{work.code: QUEUE_UNREACHABLE}, **work.unreachable(now)
    )


def submit(work: Work, pks: Iterable[Any]) -> None:
    """Send the jobs of rows ``pks`` (in their queued state) once the surrounding transaction
    commits: RQ jobs, or inline runs without Redis. A row no longer queued by then is left
    alone; if Redis does not answer, the rows are marked QUEUE_UNREACHABLE and the recovery
    pass sends them when it answers again."""
    pks = list(pks)
    if not pks:
        return

    def send_queued() -> None:
        rows = work.rows.filter(pk__in=pks, status=work.queued).values_list(*work.job_fields)
        send(work, list(rows), mark_unreachable=True)

    transaction.on_commit(send_queued)


def _requeue(work: Work, pk: Any, *, now: datetime, **condition: Any) -> bool:
    """Put row ``pk`` back in the queue if it still matches ``condition``."""
    return bool(
        work.rows.filter(pk=pk, **condition).update(
            status=work.queued,
            **{work.code: "", work.queued_since: now},
            **work.on_requeue(now),
        )
    )


def recover_stale(work: Work, now: datetime) -> dict[str, int]:
    requeued: list[tuple[Any, ...]] = []
    failed = 0
    rows = work.rows.filter(stale(work, now)).values_list(*work.job_fields, work.heartbeat)
    for *values, beat in rows:
        pk, attempts = values[0], values[1]
        # Only as it was seen: a job that beat again just now keeps its row.
        unchanged: dict[str, Any] = {"status": work.running, work.attempts: attempts}
        if beat is None:
            unchanged[f"{work.heartbeat}__isnull"] = True
        else:
            unchanged[work.heartbeat] = beat
        if attempts >= work.max_attempts():
            row = work.rows.get(pk=pk)
            failed += work.rows.filter(pk=pk, **unchanged).update(
                status=work.failed, **{work.code: WORKER_LOST}, **work.give_up(row, now)
            )
        elif _requeue(work, pk, now=now, **unchanged):
            requeued.append(tuple(values))
    if requeued or failed:
        logger.warning(
            "%s: %s job(s) lost their worker: %s queued again, %s failed for good",
            work.name,
            len(requeued) + failed,
            len(requeued),
            failed,
        )
    return {"requeued": len(send(work, requeued, mark_unreachable=True)), "failed": failed}


def recover_unreachable(work: Work, now: datetime, pks: Iterable[Any] | None = None) -> int:
    marked = work.rows.filter(status=work.unreachable_status, **{work.code: QUEUE_UNREACHABLE})
    if pks is not None:
        marked = marked.filter(pk__in=list(pks))
    back = [
        values
        for values in marked.values_list(*work.job_fields)
        if _requeue(
            work,
            values[0],
            now=now,
            status=work.unreachable_status,
            **{work.code: QUEUE_UNREACHABLE},
        )
    ]
    return len(send(work, back, mark_unreachable=True))


def recover_lost(work: Work, now: datetime, pks: Iterable[Any] | None = None) -> int:
    queued = work.rows.filter(status=work.queued)
    if pks is None:
        before = now - timedelta(seconds=settings.QUEUE_LOST_SECONDS)
        queued = queued.filter(
            Q(**{f"{work.queued_since}__lt": before}) | Q(**{f"{work.queued_since}__isnull": True})
        )
    else:
        queued = queued.filter(pk__in=list(pks))
    rows = list(queued.values_list(*work.job_fields))
    # Inline, a queued row old enough is one whose request stopped before running it.
    return len(send(work, rows, mark_unreachable=False))


def send_due(work: Work, now: datetime) -> int:
    if work.waiting is None or work.due is None:
        return 0
    rows = work.rows.filter(status=work.waiting, **{f"{work.due}__lte": now})
    return len(send(work, list(rows.values_list(*work.job_fields)), mark_unreachable=False))


def recover(works: Iterable[Work] | None = None) -> dict[str, dict[str, int]]:
    """One recovery pass over ``works`` (every registered kind by default): for each, how many
    rows were queued again after their worker died (requeued), failed for good (failed),
    queued again after the queue was unreachable (resumed), sent again because Redis lost
    their job (lost), and sent because their time had come (due). A step that fails (the
    database or Redis went away) is logged and counted in ``errors``; the others still run."""
    steps: list[tuple[str, Callable[[Work, datetime], dict[str, int] | int]]] = [
        ("requeued", recover_stale),
        ("resumed", recover_unreachable),
        ("lost", recover_lost),
        ("due", send_due),
    ]
    result: dict[str, dict[str, int]] = {}
    for work in registered() if works is None else works:
        counts = dict.fromkeys(STEPS, 0) | {"errors": 0}
        for name, step in steps:
            try:
                found = step(work, timezone.now())
            except Exception as exc:
                logger.warning("recovery of %s failed: %s: %s", work.name, type(exc).__name__, exc)
                counts["errors"] += 1
                continue
            counts.update(found if isinstance(found, dict) else {name: found})
        if any(counts.values()):
            logger.info("recovery pass, %s: %s", work.name, counts)
        result[work.name] = counts
    return result


def requeue_lost(work: Work, pks: Iterable[Any]) -> int:
    """Send again, now, the jobs of those rows of ``pks`` that have none: queued with no job
    Redis holds, or marked QUEUE_UNREACHABLE. For a caller that knows these rows should be
    moving (a bulk upload run again over the same files). Returns how many were sent."""
    pks = list(pks)
    now = timezone.now()
    return recover_unreachable(work, now, pks) + recover_lost(work, now, pks)
