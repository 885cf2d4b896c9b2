"""Audit sampling decisions, Wilson intervals and Cohen's kappa on known values."""

from __future__ import annotations

import pytest

from engine import quality


@pytest.mark.parametrize(
    ("errors", "n", "low", "high"),
    [
        (0, 20, 0.0, 0.1611),
        (5, 100, 0.0215, 0.1118),
        (1, 10, 0.0179, 0.4042),
        (10, 10, 0.7225, 1.0),
        (0, 1000, 0.0, 0.0038),
    ],
)
def test_wilson_interval_matches_published_values(errors, n, low, high):
    got = quality.wilson_interval(errors, n)
    assert got == pytest.approx((low, high), abs=1e-4)


def test_wilson_interval_without_observations_is_everything():
    assert quality.wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_interval_refuses_more_errors_than_observations():
    with pytest.raises(ValueError):
        quality.wilson_interval(3, 2)


def _table(cells: dict[tuple[str, str], int]) -> list[tuple[str, str]]:
    return [pair for pair, count in cells.items() for _ in range(count)]


def test_kappa_on_the_textbook_two_by_two_table():
    # po = 0.70, pe = 0.50: kappa = 0.40
    pairs = _table({("y", "y"): 20, ("y", "n"): 5, ("n", "y"): 10, ("n", "n"): 15})
    assert quality.cohen_kappa(pairs) == pytest.approx(0.4)


def test_kappa_on_a_table_with_little_more_than_chance_agreement():
    # po = 0.60, pe = 0.54: kappa = 0.06 / 0.46
    pairs = _table({("y", "y"): 45, ("y", "n"): 15, ("n", "y"): 25, ("n", "n"): 15})
    assert quality.cohen_kappa(pairs) == pytest.approx(0.06 / 0.46)


def test_kappa_on_a_three_type_table():
    # po = 0.9; marginals A (a 4, b 3, c 3), B (a 4, b 4, c 2): pe = 0.34, kappa = 0.56 / 0.66
    pairs = _table({("a", "a"): 4, ("b", "b"): 3, ("c", "c"): 2, ("c", "b"): 1})
    assert quality.cohen_kappa(pairs) == pytest.approx(0.56 / 0.66)


def test_kappa_is_one_for_perfect_agreement_and_undefined_without_variety():
    assert quality.cohen_kappa([("a", "a"), ("b", "b")]) == pytest.approx(1.0)
    assert quality.cohen_kappa([("a", "a"), ("a", "a")]) is None
    assert quality.cohen_kappa([]) is None


def test_kappa_per_type_reads_each_type_as_yes_or_no():
    pairs = [("a", "a")] * 5 + [("b", "b")] * 5 + [("a", "b")] * 2
    per_type = quality.kappa_per_type(pairs, ["a", "b", "c"])
    assert per_type["a"] == pytest.approx(
        quality.cohen_kappa(
            [("True", "True")] * 5 + [("False", "False")] * 5 + [("True", "False")] * 2
        )
    )
    assert per_type["c"] is None  # nobody ever said c: kappa is undefined


def test_confidence_bands_are_named_by_their_edges():
    edges = [0.8, 0.95]
    assert quality.confidence_band(0.5, edges) == "<0.80"
    assert quality.confidence_band(0.8, edges) == "0.80-0.95"
    assert quality.confidence_band(0.97, edges) == ">=0.95"
    assert quality.confidence_band(0.97, []) == "all"


def test_the_most_specific_rate_wins():
    rates = {"pathology/<0.80": 0.5, "pathology": 0.2, "*/<0.80": 0.3}
    assert quality.sample_rate(rates, 0.05, doc_type="pathology", band="<0.80") == 0.5
    assert quality.sample_rate(rates, 0.05, doc_type="pathology", band=">=0.95") == 0.2
    assert quality.sample_rate(rates, 0.05, doc_type="radiology", band="<0.80") == 0.3
    assert quality.sample_rate(rates, 0.05, doc_type="radiology", band=">=0.95") == 0.05


def test_the_draw_is_deterministic_and_depends_on_the_salt():
    assert quality.sample_draw("run:7", salt="s") == quality.sample_draw("run:7", salt="s")
    assert quality.sample_draw("run:7", salt="s") != quality.sample_draw("run:7", salt="t")


@pytest.mark.parametrize("rate", [0.01, 0.05, 0.2])
def test_the_sampled_share_is_the_rate_over_many_runs(rate):
    n = 20_000
    sampled = sum(
        quality.audit_decision(
            key=f"run:{i}", salt="vetted-audit", rate=rate, first_of_day=False
        ).sampled
        for i in range(n)
    )
    # Four binomial standard deviations: a deterministic draw far from uniform would fail.
    tolerance = 4 * (rate * (1 - rate) / n) ** 0.5
    assert abs(sampled / n - rate) < tolerance


def test_the_first_run_of_a_type_each_day_is_always_sampled():
    decision = quality.audit_decision(key="run:1", salt="s", rate=0.0, first_of_day=True)
    assert decision.sampled and decision.reason == quality.DAILY_MINIMUM
    off = quality.audit_decision(
        key="run:1", salt="s", rate=0.0, first_of_day=True, daily_minimum=False
    )
    assert not off.sampled
