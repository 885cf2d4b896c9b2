"""The review queue at hospital scale: pages by position in the queue, not by offset, and
counts kept in the cache between changes. No database writes here.

A page of the queue is found by the last (or first) packet of the page before it: a cursor
``priority.created_at.pk`` that the index on (priority, created_at, id) of open packets serves
directly, so page 4,000 costs what page 1 costs. Counts (open, BLOCKER, decided today, the
total of a filter, the issue codes on offer) would scan every open packet; they are computed
once per *generation* and kept in the cache. Review services call :func:`queue_changed` when
a packet enters or leaves the queue (created, decided, undone, reopened), which starts a new
generation; ``QUEUE_COUNTS_MAX_AGE_SECONDS`` bounds how long a count can miss a change made
outside them. What changes every minute (packets in review, locks) is counted live from small
index ranges.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, Count, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from core.caching import cache_get, cache_set, cached
from engine.schemas import DOC_TYPES, Severity
from review.models import Review, ReviewPacket

ORDER = ("priority", "created_at", "pk")
# QUEUE_ORDER=learning: within a severity, the packets whose labels teach the model most
# first (ReviewPacket.learning_rank), then oldest; served by its own partial index.
LEARNING_ORDER = ("priority", "learning_rank", "created_at", "pk")
_GENERATION_KEY = "review:queue:generation"
T = TypeVar("T")


# -- what is shown ----------------------------------------------------------------------------


def queue_packets(
    *, status: str, doc_type: str, severity: str, code: str = "", search: str = ""
) -> QuerySet[ReviewPacket]:
    """The queue's rows for a filter, unordered (pages order them: BLOCKER first, then oldest)."""
    packets = ReviewPacket.objects.select_related("document", "locked_by").only(
        "pk",
        "status",
        "priority",
        "dominant_type",
        "worst_severity",
        "issue_count",
        "created_at",
        "learning_rank",
        "lock_expires_at",
        "document__original_filename",
        "document__page_count",
        "locked_by__username",
        "locked_by__first_name",
        "locked_by__last_name",
    )
    return packets.filter(_filter(status, doc_type, severity, code, search))


def _filter(status: str, doc_type: str, severity: str, code: str, search: str) -> Q:
    q = Q()
    if status == "open":
        q &= Q(status__in=ReviewPacket.OPEN_STATUSES)
    elif status in ReviewPacket.Status.values:
        q &= Q(status=status)
    if doc_type in {t.value for t in DOC_TYPES}:
        q &= Q(dominant_type=doc_type)
    if severity in Severity.__members__:
        q &= Q(worst_severity=severity)
    if code and code.replace("_", "").isalnum():
        q &= Q(issue_codes__contains=f" {code} ")
    if search.strip():
        q &= Q(document__original_filename__icontains=search.strip())
    return q


@dataclass(frozen=True)
class QueuePage:
    packets: list[ReviewPacket]
    total: int  # packets matching the filter (from the cache, see module docstring)
    first: bool  # this page starts the queue
    after: str  # cursor of the next page ("" when this is the last)
    before: str  # cursor of the previous page ("" when this is the first)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def queue_order() -> tuple[str, ...]:
    """The queue's order: BLOCKER first, then oldest; or, with QUEUE_ORDER=learning, by
    learning value within a severity."""
    return LEARNING_ORDER if settings.QUEUE_ORDER == "learning" else ORDER


def cursor_of(packet: ReviewPacket) -> str:
    micros = (packet.created_at - _EPOCH) // _MICROSECOND  # exact, unlike a float timestamp
    if queue_order() == LEARNING_ORDER:
        return f"{packet.priority}.{packet.learning_rank}.{micros}.{packet.pk}"
    return f"{packet.priority}.{micros}.{packet.pk}"


Cursor = tuple[Any, ...]  # the values of queue_order() for one packet


def parse_cursor(text: str) -> Cursor | None:
    """A cursor of the order in force (one of the other order is not read: first page)."""
    learning = queue_order() == LEARNING_ORDER
    parts = text.split(".")
    if len(parts) != (4 if learning else 3) or not all(p.isdigit() and len(p) < 20 for p in parts):
        return None
    numbers = [int(p) for p in parts]
    try:
        created = _EPOCH + numbers[-2] * _MICROSECOND
    except OverflowError:
        return None
    return (*numbers[:-2], created, numbers[-1])


def _beyond(key: Cursor, op: str) -> RawSQL:
    """(priority, [learning_rank,] created_at, id) compared with a cursor as one row value,
    which PostgreSQL answers as a range of the queue's index (and SQLite understands too)."""
    table = connection.ops.quote_name(ReviewPacket._meta.db_table)
    names = ["id" if f == "pk" else f for f in queue_order()]
    columns = ", ".join(f"{table}.{connection.ops.quote_name(c)}" for c in names)
    values = [
        connection.ops.adapt_datetimefield_value(v) if isinstance(v, datetime) else v for v in key
    ]
    marks = ", ".join(["%s"] * len(values))
    return RawSQL(f"({columns}) {op} ({marks})", tuple(values), BooleanField())


def _rows(
    packets: QuerySet[ReviewPacket], beyond: RawSQL | None, order: list[str], limit: int
) -> list[ReviewPacket]:
    """The first ``limit`` packets in ``order``: their ids from the packets table alone, then
    the rows with their document and lock holder. PostgreSQL cannot estimate a row comparison
    (it guesses one row); with joins in the same query it may then join by hash and sort every
    packet past the cursor, where alone it walks the index and stops after one page."""
    matching = packets if beyond is None else packets.filter(beyond)
    ids = list(matching.order_by(*order).values_list("pk", flat=True)[:limit])
    found = packets.in_bulk(ids)
    return [found[pk] for pk in ids if pk in found]


def queue_page(
    packets: QuerySet[ReviewPacket], *, after: str = "", before: str = "", total: int, size: int
) -> QueuePage:
    """One page of ``packets`` in queue order: the first, the one after cursor ``after``, or
    the one before cursor ``before``. An unreadable cursor gives the first page."""
    if key := parse_cursor(after):
        rows = _rows(packets, _beyond(key, ">"), list(queue_order()), size + 1)
        more, rows = len(rows) > size, rows[:size]
        return QueuePage(
            packets=rows,
            total=total,
            first=False,
            after=cursor_of(rows[-1]) if more else "",
            before=cursor_of(rows[0]) if rows else "",
        )
    if key := parse_cursor(before):
        descending = [f"-{f}" for f in queue_order()]
        rows = _rows(packets, _beyond(key, "<"), descending, size + 1)
        more, rows = len(rows) > size, rows[:size][::-1]
        if more:
            return QueuePage(
                packets=rows,
                total=total,
                first=False,
                after=cursor_of(rows[-1]) if rows else "",
                before=cursor_of(rows[0]),
            )
        # Fewer than a page before the cursor: that is the start of the queue.
    rows = _rows(packets, None, list(queue_order()), size + 1)
    more, rows = len(rows) > size, rows[:size]
    return QueuePage(
        packets=rows, total=total, first=True, after=cursor_of(rows[-1]) if more else "", before=""
    )


# -- counts -----------------------------------------------------------------------------------


def queue_changed() -> None:
    """A packet entered or left the queue: counts are computed afresh at the next read. Called
    at once and again after the transaction commits, so a read between the two cannot keep a
    count that misses the change."""
    _new_generation()
    transaction.on_commit(_new_generation)


def _new_generation() -> None:
    cache_set(_GENERATION_KEY, time.time(), timeout=None)


def _cached(name: str, compute: Callable[[], T]) -> T:
    """``compute()`` kept under ``name`` for the current generation of the queue."""
    generation = cache_get(_GENERATION_KEY)
    if generation is None:
        generation = time.time()
        cache_set(_GENERATION_KEY, generation, timeout=None)
    return cached(
        f"review:queue:{generation}:{name}",
        compute,
        timeout=settings.QUEUE_COUNTS_MAX_AGE_SECONDS,
    )


def _today() -> datetime:
    return timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)


def queue_counts(*, user: Any = None) -> dict[str, int]:
    """Open, pending, in review, open with a BLOCKER, and decided today; with ``user``, also
    ``held_by_others``: the packets other reviewers hold right now (for :func:`my_progress`)."""
    today = _today()

    def standing() -> dict[str, int]:
        # Three counts, each a range of one index (one aggregate would read every row).
        open_packets = ReviewPacket.objects.filter(status__in=ReviewPacket.OPEN_STATUSES)
        return {
            "open": open_packets.count(),
            "blockers": open_packets.filter(priority=0).count(),
            "completed_today": ReviewPacket.objects.filter(
                status=ReviewPacket.Status.COMPLETED, updated_at__gte=today
            ).count(),
        }

    counts = dict(_cached(f"counts:{today.date().isoformat()}", standing))
    # Opening and releasing packets does not change the generation: count those live, in one
    # read of a range of the status index as long as the number of packets being reviewed
    # right now (and, of them, those another reviewer's unexpired lock holds).
    live: dict[str, Count] = {"in_review": Count("pk")}
    if user is not None:
        held = Q(locked_by__isnull=False, lock_expires_at__gt=timezone.now())
        live["held_by_others"] = Count("pk", filter=held & ~Q(locked_by=user.pk))
    counts |= ReviewPacket.objects.filter(status=ReviewPacket.Status.IN_REVIEW).aggregate(**live)
    counts["pending"] = max(counts["open"] - counts["in_review"], 0)
    return counts


def queue_total(*, status: str, doc_type: str, severity: str, code: str, search: str) -> int:
    """How many packets match a filter."""
    fields = "\x1f".join((status, doc_type, severity, code, search.strip().lower()))
    digest = hashlib.sha256(fields.encode()).hexdigest()[:24]
    return _cached(
        f"total:{digest}",
        lambda: ReviewPacket.objects.filter(
            _filter(status, doc_type, severity, code, search)
        ).count(),
    )


def issue_code_choices() -> list[str]:
    """The issue codes of packets still open, for the queue's filter."""

    def compute() -> list[str]:
        rows = (
            ReviewPacket.objects.filter(status__in=ReviewPacket.OPEN_STATUSES)
            .exclude(issue_codes="")
            .order_by()
            .values_list("issue_codes", flat=True)
            .distinct()
        )
        return sorted({code for row in rows for code in row.split()})

    return _cached("codes", compute)


def my_progress(user: Any, *, counts: dict[str, int]) -> dict[str, int]:
    """A reviewer's own day: decisions standing since midnight, and packets waiting that
    they could take (open and not locked by someone else: the open count less the few packets
    other reviewers hold right now). ``counts``: :func:`queue_counts` for this user."""
    return {
        "decided_today": Review.objects.filter(
            reviewer=user, finished_at__gte=_today(), withdrawn_at__isnull=True
        ).count(),
        "waiting": max(counts["open"] - counts["held_by_others"], 0),
    }


def workspace_progress(user: Any) -> dict[str, int]:
    """Where a reviewer is in their day, for the head of the packet they hold: ``at`` is this
    packet's number in their day (decisions standing since midnight, plus one), ``of`` that
    plus the packets still waiting for them after it, ``left_today`` those packets (the packet
    held is one of the packets waiting, so it is not counted twice)."""
    mine = my_progress(user, counts=queue_counts(user=user))
    at = mine["decided_today"] + 1
    left = max(mine["waiting"] - 1, 0)
    return {"at": at, "of": at + left, "left_today": left}
