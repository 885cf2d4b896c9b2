"""Runs as background work (core.jobs): a run is queued while pending, running while a worker
executes it, waiting while the language model is unavailable (until ``retry_at``), and fails
for good when its workers keep being lost."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings

from core.jobs import Work
from reliability.models import LearningAttempt, Run

QUEUE_UNREACHABLE = (
    "The run could not be queued: the job queue is unreachable. It is queued again "
    "automatically when the queue is back."
)
RUN_LOST = "The worker was lost {n} time(s); giving up. Start a new run to try again."


def _given_up(run: Run, now: datetime) -> dict[str, Any]:
    return {
        "error": RUN_LOST.format(n=run.job_tries),
        "finished_at": now,
        "final_decision": "",
        "retry_at": None,
    }


RUN = Work(
    name="run",
    label="run(s)",
    func="reliability.tasks.execute_run",
    model=Run,
    queued=Run.Status.PENDING,
    running=Run.Status.RUNNING,
    failed=Run.Status.FAILED,
    waiting=Run.Status.WAITING,
    due="retry_at",
    # A pending run's retry_at is when it was queued: it is due from then on.
    queued_since="retry_at",
    attempts="job_tries",
    heartbeat="claimed_at",
    max_attempts=lambda: int(settings.RUN_MAX_JOB_TRIES),
    give_up=_given_up,
    unreachable=lambda now: {
        "error": QUEUE_UNREACHABLE,
        "finished_at": now,
        "final_decision": "",
        "retry_at": None,
    },
    unreachable_fails=True,
    on_claim=lambda now: {"started_at": now},
    on_requeue=lambda now: {"error": "", "finished_at": None},
    # A wait resets job_tries (waiting is not a lost try): the job after each wait is a new one.
    generation="waits",
)


# A learning attempt (reliability.learning): queued by the recovery pass when one is due, run
# by one worker; a lost worker's attempt is queued again, up to LEARNING_MAX_JOB_TRIES.
LEARN = Work(
    name="learning",
    label="learning attempt(s)",
    func="reliability.tasks.execute_learning",
    model=LearningAttempt,
    queued=LearningAttempt.Status.PENDING,
    running=LearningAttempt.Status.RUNNING,
    failed=LearningAttempt.Status.FAILED,
    queued_since="queued_at",
    attempts="job_tries",
    heartbeat="claimed_at",
    max_attempts=lambda: int(settings.LEARNING_MAX_JOB_TRIES),
    give_up=lambda row, now: {
        "error": f"The worker was lost {row.job_tries} time(s); the next attempt is scheduled.",
        "finished_at": now,
    },
    unreachable=lambda now: {},
    unreachable_fails=False,
    on_claim=lambda now: {"started_at": now},
    on_requeue=lambda now: {"error": ""},
)
