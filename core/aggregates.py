"""Percentiles computed in the database, so that pages never load every row into Python."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from django.db import connections
from django.db.models import Aggregate, Count, Expression, F, FloatField, QuerySet, Value, Window
from django.db.models.functions import Ceil, RowNumber


class PercentileCont(Aggregate):
    """PostgreSQL's continuous percentile: percentile_cont(f) WITHIN GROUP (ORDER BY x)."""

    function = "PERCENTILE_CONT"
    name = "PercentileCont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"

    def __init__(self, expression: Any, *, fraction: float, **extra: Any) -> None:
        if not 0.0 <= fraction <= 1.0:
            raise ValueError("fraction must be within 0..1")
        extra.setdefault("output_field", FloatField())
        super().__init__(expression, fraction=repr(float(fraction)), **extra)


def percentile(
    queryset: QuerySet[Any], expression: str | Expression, fraction: float, **extra: Any
) -> Any:
    """The ``fraction`` percentile of ``expression`` over the queryset, or None without rows.

    PostgreSQL interpolates (percentile_cont). Other databases (SQLite, the embedded default)
    have no percentile function: the nearest-rank value is read, one row, by ordering and
    offset in SQL."""
    value = F(expression) if isinstance(expression, str) else expression
    if connections[queryset.db].vendor == "postgresql":
        return queryset.aggregate(value=PercentileCont(value, fraction=fraction, **extra))["value"]
    ordered = queryset.annotate(_value=value).exclude(_value=None).order_by("_value")
    count = ordered.count()
    if not count:
        return None
    rank = max(0, math.ceil(fraction * count) - 1)
    return ordered.values_list("_value", flat=True)[rank]


def percentile_by(
    queryset: QuerySet[Any],
    by: Sequence[str],
    expression: str | Expression,
    fraction: float,
    **extra: Any,
) -> dict[tuple[Any, ...], Any]:
    """The ``fraction`` percentile of ``expression`` for each group of the fields ``by``:
    {(group values...): percentile}. Groups whose values are all NULL are left out.

    PostgreSQL interpolates, in one grouped query. Elsewhere (SQLite, the embedded default)
    the nearest-rank value of each group, as :func:`percentile` reads it for one, is picked
    by window functions in one query: only one row per group is read."""
    value = F(expression) if isinstance(expression, str) else expression
    if connections[queryset.db].vendor == "postgresql":
        rows = (
            queryset.order_by()
            .values(*by)
            .annotate(_value=PercentileCont(value, fraction=fraction, **extra))
        )
        return {
            tuple(row[f] for f in by): row["_value"] for row in rows if row["_value"] is not None
        }
    # The nearest rank in SQL: each value's rank in its group, and the rank wanted there.
    partition = [F(field) for field in by]
    ranked = (
        queryset.annotate(_value=value)
        .exclude(_value=None)
        .annotate(
            _rank=Window(RowNumber(), partition_by=partition, order_by=F("_value").asc()),
            _count=Window(Count("*"), partition_by=partition),
        )
        # ceil(fraction * count), and the first rank for fraction 0 (as in percentile()).
        .annotate(_wanted=Ceil(F("_count") * Value(float(fraction))) if fraction else Value(1))
        .filter(_rank=F("_wanted"))
        .values_list(*by, "_value")
    )
    return {tuple(row[:-1]): row[-1] for row in ranked}
