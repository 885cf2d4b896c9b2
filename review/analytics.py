"""Reviewer analytics: how much each reviewer decides, how fast, how often they take a
decision back, and how often the independent checks agree with them. Reads only; the counts,
sums and medians are computed in the database (a few grouped queries, whatever the number of
decisions); only adjudicated disagreements, which are few, are compared in Python.

Definitions (every figure per reviewer, and per type for that reviewer):

- **Decisions**: every decision the reviewer recorded on a packet, including those later
  undone or reopened (the work was done).
- **Type**: the packet's *claimed* type, what the machine said and the reviewer was handed
  (``Review.claimed_type``), not the type decided: a decision, its undo and its redo count
  under the same type, and a correction counts under the type it corrected. For a second
  review of an audit, the accepted (machine's) type.
- **Seconds per decision**: from when the reviewer last opened the packet (the start of their
  lock) to the decision. Decisions without a start (none recorded) are not timed. The median
  is shown (PostgreSQL interpolates; SQLite takes the nearest rank).
- **Decisions per hour**: timed decisions divided by the hours spent on them, each decision
  counting at most REVIEW_LOCK_MINUTES (a packet left open longer was not being worked on).
  Time between packets (the queue, breaks) is not work time: this is the pace while deciding.
- **Undo rate**: decisions the reviewer took back themselves (undo) over decisions. An
  admin's reopening is not counted against the reviewer.
- **Agreement with second reviews**: the reviewer's first answers (decisions, and audit
  answers that disagreed with the machine) that an independent second reviewer answered, and
  the share of those the second reviewer agreed with (same pages and types). A second review
  whose first decision was withdrawn is left out.
- **Agreement with adjudication**: the disagreements the reviewer was part of (first or
  second answer) that an adjudicator settled, and the share where the adjudicator's final
  segmentation is the reviewer's answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import (
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    Q,
    QuerySet,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce, Least

from core.aggregates import percentile_by
from engine.schemas import DISPLAY_NAMES, DOC_TYPES
from review.corrections import segmentation_from_json, segmentations_agree
from review.models import Review, SecondReview

SECOND_REVIEWED = (
    SecondReview.Status.AGREED,
    SecondReview.Status.ADJUDICATION,
    SecondReview.Status.ADJUDICATED,
)


@dataclass
class Figures:
    """One reviewer's figures, for every type (``doc_type`` "") or one."""

    doc_type: str = ""
    decisions: int = 0
    timed: int = 0
    worked_seconds: float = 0.0
    median_seconds: float | None = None
    undone: int = 0
    second_reviewed: int = 0
    second_agreed: int = 0
    adjudicated: int = 0
    adjudication_matched: int = 0

    @property
    def type_name(self) -> str:
        return DISPLAY_NAMES.get(self.doc_type, self.doc_type) if self.doc_type else "All types"

    @property
    def per_hour(self) -> float | None:
        return self.timed * 3600 / self.worked_seconds if self.worked_seconds > 0 else None

    @property
    def undo_rate(self) -> float | None:
        return self.undone / self.decisions if self.decisions else None

    @property
    def second_agreement(self) -> float | None:
        return self.second_agreed / self.second_reviewed if self.second_reviewed else None

    @property
    def adjudication_agreement(self) -> float | None:
        return self.adjudication_matched / self.adjudicated if self.adjudicated else None


@dataclass
class ReviewerFigures:
    """A reviewer's figures over every type, and type by type (in the types' usual order)."""

    reviewer_id: int
    name: str
    total: Figures = field(default_factory=Figures)
    by_type: dict[str, Figures] = field(default_factory=dict)

    def of_type(self, doc_type: str) -> Figures:
        return self.by_type.setdefault(doc_type, Figures(doc_type=doc_type))

    @property
    def types(self) -> list[Figures]:
        order = {t.value: i for i, t in enumerate(DOC_TYPES)}
        return sorted(self.by_type.values(), key=lambda f: (order.get(f.doc_type, 99), f.doc_type))


def seconds(value: Any) -> float | None:
    """A duration from the database in seconds (a timedelta; SQLite may give microseconds)."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value) / 1_000_000


def _span() -> ExpressionWrapper:
    return ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())


TIMED = Q(started_at__isnull=False, finished_at__gte=F("started_at"))


def reviewer_analytics(*, reviewer: Any | None = None) -> list[ReviewerFigures]:
    """Every reviewer's figures (or only ``reviewer``'s), reviewers in name order. A reviewer
    appears once they decided, answered a second review, or took part in an adjudication."""
    reviews: QuerySet[Review] = Review.objects.all()
    second_answers = SecondReview.objects.filter(status__in=SECOND_REVIEWED)
    adjudicated = SecondReview.objects.filter(status=SecondReview.Status.ADJUDICATED)
    if reviewer is not None:
        reviews = reviews.filter(reviewer=reviewer)
        second_answers = second_answers.filter(first_by=reviewer)
        adjudicated = adjudicated.filter(Q(first_by=reviewer) | Q(second_reviewer=reviewer))
    figures: dict[int, ReviewerFigures] = {}

    def of(reviewer_id: int) -> ReviewerFigures:
        return figures.setdefault(reviewer_id, ReviewerFigures(reviewer_id=reviewer_id, name=""))

    cap = timedelta(minutes=settings.REVIEW_LOCK_MINUTES)
    worked = Least(_span(), Value(cap, output_field=DurationField()))
    for row in (
        reviews.order_by()
        .values("reviewer_id", "claimed_type")
        .annotate(
            decisions=Count("pk"),
            undone=Count("pk", filter=Q(withdrawn_how="undone")),
            timed=Count("pk", filter=TIMED),
            worked=Sum(worked, filter=TIMED, output_field=DurationField()),
        )
    ):
        person = of(row["reviewer_id"])
        for part in (person.total, person.of_type(row["claimed_type"])):
            part.decisions += row["decisions"]
            part.undone += row["undone"]
            part.timed += row["timed"]
            part.worked_seconds += seconds(row["worked"]) or 0.0

    timed = reviews.filter(TIMED)
    for (reviewer_id, doc_type), value in percentile_by(
        timed, ["reviewer_id", "claimed_type"], _span(), 0.5, output_field=DurationField()
    ).items():
        of(reviewer_id).of_type(doc_type).median_seconds = seconds(value)
    for (reviewer_id,), value in percentile_by(
        timed, ["reviewer_id"], _span(), 0.5, output_field=DurationField()
    ).items():
        of(reviewer_id).total.median_seconds = seconds(value)

    claimed = Coalesce("first_review__claimed_type", "audit__machine_type", Value(""))
    for asked in (
        second_answers.exclude(first_by=None)
        .order_by()
        .annotate(claimed=claimed)
        .values("first_by_id", "claimed")
        .annotate(
            asked=Count("pk"),
            agreed=Count("pk", filter=Q(status=SecondReview.Status.AGREED)),
        )
    ):
        person = of(asked["first_by_id"])
        for part in (person.total, person.of_type(asked["claimed"])):
            part.second_reviewed += asked["asked"]
            part.second_agreed += asked["agreed"]

    for settled in adjudicated.annotate(claimed=claimed).values(
        "first_by_id",
        "second_reviewer_id",
        "first_segments",
        "second_segments",
        "final_segments",
        "claimed",
    ):
        final = segmentation_from_json(settled["final_segments"])
        for who, answer in (
            (settled["first_by_id"], settled["first_segments"]),
            (settled["second_reviewer_id"], settled["second_segments"]),
        ):
            if who is None or (reviewer is not None and who != reviewer.pk):
                continue
            matched = segmentations_agree(segmentation_from_json(answer), final)
            person = of(who)
            for part in (person.total, person.of_type(settled["claimed"])):
                part.adjudicated += 1
                part.adjudication_matched += matched

    people = (
        get_user_model()
        .objects.filter(pk__in=list(figures))
        .only("username", "first_name", "last_name")
    )
    for account in people:
        figures[account.pk].name = account.get_full_name() or account.get_username()
    return sorted(figures.values(), key=lambda f: (f.name.casefold(), f.reviewer_id))
