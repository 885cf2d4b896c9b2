"""A kind of durable background work, described by its own domain rows.

An app declares each kind of work it hands to background jobs (an ingestion, a run, a webhook
delivery) as one ``Work``: which table holds it, which status values mean "queued", "running"
and (optionally) "waiting until a due time", which fields count attempts and carry the
heartbeat, and how the domain fails a row for good or marks it "could not be queued". The app
registers it with ``register`` (in its AppConfig.ready); core then claims, beats, recovers and
dispatches every kind the same way (core.jobs.lease, core.jobs.dispatch), without importing
the app.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import models

# Codes (error_code values) the job mechanism writes on the rows it fails or cannot queue:
# programs branch on these, never on the message next to them.
QUEUE_UNREACHABLE = "queue_unreachable"  # not queued: Redis did not answer (resumed by itself)
WORKER_LOST = "worker_lost"  # its workers died max_attempts times: failed for good

Fields = dict[str, Any]


def _no_fields(_now: datetime) -> Fields:
    return {}


@dataclass(frozen=True)
class Work:
    """One kind of leased work. Status values are the domain's own; field names are columns
    of ``model``. ``func`` is the dotted path of the RQ job, which takes the row's id.

    - ``queued``: waiting for a worker; ``queued_since`` is set when a row enters it (the
      recovery pass asks Redis about a queued row's job only once it is that old).
    - ``running``: held by the job that claimed it, which renews ``heartbeat`` while it works.
    - ``waiting`` and ``due`` (optional): put aside until ``due`` (a run waiting for the
      language model, a webhook delivery's next try); the dispatcher sends it then.
    - ``failed``: failed for good. ``attempts`` counts claims; a row whose workers were lost
      ``max_attempts()`` times is failed with ``code`` WORKER_LOST and the fields of
      ``give_up(row, now)`` (the domain's message).
    - A queued row whose job could not be sent gets ``code`` QUEUE_UNREACHABLE and the fields
      of ``unreachable(now)``; it is shown as failed (``unreachable_fails``) or stays queued,
      and is queued again as soon as Redis answers.
    - ``on_claim(now)``, ``on_requeue(now)``: more fields the domain sets on a claim, and when
      the mechanism puts a row back in the queue.
    - ``generation`` (optional): a field that changes whenever the domain resets ``attempts``
      (a run's ``waits``: waiting is not a lost try), so that each job id is new.
    - ``label``: what a row is, for people ("document(s)").
    - ``background_inline``: without Redis, run the job in the process's background thread
      (core.jobs.queue) rather than in the caller: for work that the request which queued it
      should not wait for (drawing page images ahead of the review pages). A callable decides
      per batch from the pks being sent (reading a long PDF, which may need OCR of every page).
    """

    name: str
    func: str
    model: type[models.Model]
    queued: str
    running: str
    attempts: str
    heartbeat: str
    queued_since: str
    failed: str
    max_attempts: Callable[[], int]
    give_up: Callable[[Any, datetime], Fields]
    unreachable: Callable[[datetime], Fields]
    unreachable_fails: bool
    label: str
    code: str = "error_code"
    waiting: str | None = None
    due: str | None = None
    on_claim: Callable[[datetime], Fields] = _no_fields
    on_requeue: Callable[[datetime], Fields] = _no_fields
    generation: str | None = None
    background_inline: bool | Callable[[list[Any]], bool] = False

    def __post_init__(self) -> None:
        if (self.waiting is None) != (self.due is None):
            raise ValueError(f"work {self.name!r}: 'waiting' and 'due' go together")

    @property
    def rows(self) -> models.QuerySet[Any]:
        return self.model._default_manager.all()

    @property
    def unreachable_status(self) -> str:
        """The status a row has while it is marked QUEUE_UNREACHABLE."""
        return self.failed if self.unreachable_fails else self.queued

    @property
    def job_fields(self) -> tuple[str, ...]:
        """The fields a row's job id is made of: its pk first."""
        return ("pk", self.attempts, *([self.generation] if self.generation else []))

    def job_id(self, values: tuple[Any, ...]) -> str:
        """The RQ job id of the job that makes the next claim of the row whose ``job_fields``
        have these ``values``: deterministic, so that the recovery pass can ask Redis whether
        that job is still coming, and new after every claim."""
        return "-".join([self.name, *(str(value) for value in values)])


_registry: dict[str, Work] = {}


def register(work: Work) -> None:
    """Add ``work`` to the kinds the recovery pass covers (again: replaced, not doubled)."""
    _registry[work.name] = work


def registered() -> Iterator[Work]:
    return iter(list(_registry.values()))
