"""Measuring what is accepted and how reviewers agree: audit sampling decisions, Wilson
intervals and Cohen's kappa. Pure functions (no Django), so they are tested on known values.

Sampling is deterministic: a run's draw is a hash of its key and a salt, so the same run is
always in or out of the audit sample, whichever worker accepts it and however often the
decision is recomputed."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

Z_95 = 1.959963984540054  # two-sided 95% normal quantile
Z_95_ONE_SIDED = 1.6448536269514722  # one-sided 95% normal quantile

# Reasons a run was sampled for audit.
SAMPLED = "sampled"
DAILY_MINIMUM = "daily_minimum"


def wilson_interval(errors: int, n: int, *, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of the proportion errors/n. With no observation the
    interval is the whole of [0, 1]: nothing is known."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= errors <= n:
        raise ValueError(f"errors={errors} must be between 0 and n={n}.")
    p = errors / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # Rounding can push the bounds a hair past the observed proportion at 0 and 1.
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa between two raters' labels, one pair per item. None when undefined
    (no pairs, or both raters always gave the same single label: chance agreement is 1)."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(1 for a, b in pairs if a == b) / n
    first: dict[str, int] = {}
    second: dict[str, int] = {}
    for a, b in pairs:
        first[a] = first.get(a, 0) + 1
        second[b] = second.get(b, 0) + 1
    expected = sum(first.get(label, 0) * second.get(label, 0) for label in first) / (n * n)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)


def kappa_per_type(
    pairs: Sequence[tuple[str, str]], types: Iterable[str]
) -> dict[str, float | None]:
    """For each type, kappa of the two raters' yes/no answer to "is it this type?"."""
    return {
        t: cohen_kappa([(str(a == t), str(b == t)) for a, b in pairs]) if pairs else None
        for t in types
    }


def sample_draw(key: str, *, salt: str) -> float:
    """A uniform number in [0, 1) fixed by the key: the same run always draws the same."""
    digest = hashlib.sha256(f"{salt}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def confidence_band(confidence: float, edges: Sequence[float]) -> str:
    """The band a confidence falls in, named by its bounds: with edges (0.8, 0.95) the bands
    are "<0.80", "0.80-0.95" and ">=0.95"."""
    ordered = sorted(edges)
    if not ordered:
        return "all"
    if confidence < ordered[0]:
        return f"<{ordered[0]:.2f}"
    for low, high in pairwise(ordered):
        if low <= confidence < high:
            return f"{low:.2f}-{high:.2f}"
    return f">={ordered[-1]:.2f}"


def sample_rate(rates: Mapping[str, float], default: float, *, doc_type: str, band: str) -> float:
    """The audit share for a type and confidence band, most specific first:
    "type/band", then "type", then "*/band", then the default."""
    for key in (f"{doc_type}/{band}", doc_type, f"*/{band}"):
        if key in rates:
            return float(rates[key])
    return default


@dataclass(frozen=True)
class SampleDecision:
    sampled: bool
    reason: str  # SAMPLED, DAILY_MINIMUM or "" when not sampled
    rate: float
    draw: float


def audit_decision(
    *, key: str, salt: str, rate: float, first_of_day: bool, daily_minimum: bool = True
) -> SampleDecision:
    """Whether an auto-accepted run goes to audit: its draw falls under the rate, or it is
    the first of its type today and each type must be audited at least once a day."""
    draw = sample_draw(key, salt=salt)
    if draw < rate:
        return SampleDecision(True, SAMPLED, rate, draw)
    if daily_minimum and first_of_day:
        return SampleDecision(True, DAILY_MINIMUM, rate, draw)
    return SampleDecision(False, "", rate, draw)
