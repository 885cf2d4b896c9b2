"""Percentiles computed in the database, so that pages never load every row into Python."""

from __future__ import annotations

import math
from typing import Any

from django.db import connections
from django.db.models import Aggregate, Expression, F, FloatField, QuerySet


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
