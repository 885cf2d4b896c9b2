"""One durable-job mechanism for every kind of background work (ingestions, runs, webhook
deliveries): a lease on the work's own row, with heartbeats, maximum attempts, recovery and
dispatch in one place, on django-rq's configured queue (or inline, without Redis).

- ``Work`` (core.jobs.work): an app's declaration of one kind of work on its rows, registered
  with ``register`` in its AppConfig.ready. Core never imports the app.
- ``submit`` (core.jobs.dispatch): send the jobs of rows just queued, after commit.
- ``claim``, ``Claim.heartbeat``, ``Claim.holds`` (core.jobs.lease): what a job does.
- ``recover`` (core.jobs.dispatch): the one pass that requeues work whose worker died,
  resumes work the queue could not take, re-sends jobs Redis lost and sends waiting work when
  it is due. Workers run it every RECOVERY_INTERVAL_SECONDS; cron runs ``manage.py recover``.

The mechanism's states and failure reasons are codes (QUEUE_UNREACHABLE, WORKER_LOST) written
in the row's code field; messages next to them are the domain's, for people.
"""

from core.jobs.dispatch import recover, requeue_lost, send, submit
from core.jobs.lease import Claim, claim, holds, is_stale
from core.jobs.queue import drain_background, get_queue, jobs_missing, jobs_run_inline
from core.jobs.work import QUEUE_UNREACHABLE, WORKER_LOST, Work, register, registered

__all__ = [
    "QUEUE_UNREACHABLE",
    "WORKER_LOST",
    "Claim",
    "Work",
    "claim",
    "drain_background",
    "get_queue",
    "holds",
    "is_stale",
    "jobs_missing",
    "jobs_run_inline",
    "recover",
    "register",
    "registered",
    "requeue_lost",
    "send",
    "submit",
]
