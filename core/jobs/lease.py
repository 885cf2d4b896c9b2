"""The lease a job holds on its row: claimed atomically, renewed by a heartbeat while the job
works, checked once more when the job commits its result.

    claim = jobs.claim(WORK, row_id)
    if claim is None:
        return "skipped"            # done, waiting, or held by a live job elsewhere
    with claim.heartbeat():
        ...                         # the slow part, outside any transaction
    with transaction.atomic():
        if not claim.holds():       # its heartbeat went stale and another job took over
            raise Superseded
        ...                         # write the result
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from core.jobs.heartbeat import Heartbeat
from core.jobs.work import Work

# A waiting row is claimed this long before it is due: the dispatcher sends it when its time
# has come on its own clock, and the worker claiming it may run on another machine's.
CLAIM_SLACK_SECONDS = 5


def stale_before(now: datetime | None = None) -> datetime:
    """A running row whose heartbeat is older than this lost its worker."""
    return (now or timezone.now()) - timedelta(seconds=settings.JOB_STALE_SECONDS)


def is_stale(heartbeat: datetime | None, *, now: datetime | None = None) -> bool:
    """Whether a running row with this heartbeat lost its worker."""
    return heartbeat is None or heartbeat < stale_before(now)


def stale(work: Work, now: datetime) -> Q:
    """Running rows whose worker stopped beating (or never beat)."""
    return Q(**{"status": work.running}) & (
        Q(**{f"{work.heartbeat}__lt": stale_before(now)}) | Q(**{f"{work.heartbeat}__isnull": True})
    )


@dataclass(frozen=True)
class Claim:
    """Claim number ``attempts`` of row ``pk``: held while the row is running with that count."""

    work: Work
    pk: Any
    attempts: int

    def rows(self) -> QuerySet[Any]:
        """The row, while this claim holds it (for conditional updates of the outcome)."""
        return self.work.rows.filter(
            pk=self.pk, status=self.work.running, **{self.work.attempts: self.attempts}
        )

    def heartbeat(self) -> Heartbeat:
        """Renews the row's heartbeat every JOB_HEARTBEAT_SECONDS while the block runs."""
        return Heartbeat(
            self.rows(), field=self.work.heartbeat, interval=settings.JOB_HEARTBEAT_SECONDS
        )

    def holds(self) -> bool:
        """Inside the transaction that writes the job's result: whether the row is still this
        job's (locked until commit, so nobody can take it over in between). A job whose
        claim was taken over must drop its result: the row is decided once."""
        return self.rows().select_for_update().exists()


def claim(work: Work, pk: Any) -> Claim | None:
    """Atomically take row ``pk`` for this job: a queued row; a waiting row whose time has
    come (a few seconds early is fine); or a running row whose heartbeat went stale, when it
    has attempts left. Counts the attempt and starts the heartbeat. None when the row is not
    claimable (done, failed, not yet due, or held by a live job): the job then does nothing."""
    now = timezone.now()
    condition = Q(status=work.queued) | (
        stale(work, now) & Q(**{f"{work.attempts}__lt": work.max_attempts()})
    )
    if work.waiting is not None:
        due = now + timedelta(seconds=CLAIM_SLACK_SECONDS)
        condition |= Q(status=work.waiting, **{f"{work.due}__lte": due})
    with transaction.atomic():
        taken = (
            work.rows.filter(pk=pk)
            .filter(condition)
            .update(
                status=work.running,
                **{
                    work.heartbeat: now,
                    work.attempts: F(work.attempts) + 1,
                    work.code: "",
                    **work.on_claim(now),
                },
            )
        )
        if not taken:
            return None
        attempts = work.rows.filter(pk=pk).values_list(work.attempts, flat=True).get()
    return Claim(work, pk, attempts)


def holds(work: Work, pk: Any, attempts: int) -> bool:
    """``Claim.holds`` for a job that kept only the row (its id and attempt count)."""
    return Claim(work, pk, attempts).holds()
