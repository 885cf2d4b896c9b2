"""The loop's monitoring on the metrics page: SQL aggregates, percentiles in the database,
alert thresholds and their warnings."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from core.aggregates import percentile
from reliability.models import Extraction, Run
from reliability.selectors import loop_monitoring
from tests.conftest import ready_document

pytestmark = pytest.mark.django_db

# (iterations, first score, final score, met threshold, seconds, template)
ROWS = [
    (1, 0.97, 0.97, True, 1.0, "radiology"),
    (2, 0.80, 1.00, True, 2.0, "pathology"),
    (3, 0.70, 0.90, False, 3.0, "pathology"),
    (3, 0.60, 0.60, False, 4.0, "clinical_note"),
]


def make_extractions(rows=ROWS, *, age_days=0):
    document = ready_document("text", sha=str(Extraction.objects.count()))
    run = Run.objects.create(document=document, preset="clinical", classifier="offline")
    created = []
    for number, (iterations, first, final, met, seconds, doc_type) in enumerate(rows):
        created.append(
            Extraction.objects.create(
                document=document,
                run=run,
                segment_index=number,
                doc_type=doc_type,
                status=Extraction.Status.COMPLETED,
                iterations_count=iterations,
                first_score=first,
                final_score=final,
                met_threshold=met,
                seconds=seconds,
            )
        )
    if age_days:
        Extraction.objects.filter(pk__in=[e.pk for e in created]).update(
            created_at=timezone.now() - timedelta(days=age_days)
        )
    return created


@pytest.mark.postgres
def test_the_loop_figures_are_aggregated_in_the_database():
    make_extractions()
    make_extractions(age_days=90)  # outside the 30-day window
    Extraction.objects.create(
        document=Extraction.objects.first().document,
        doc_type="pathology",
        status=Extraction.Status.REFUSED,
    )
    loop = loop_monitoring()
    assert loop["extractions"] == 4 and loop["window_days"] == 30
    assert loop["mean_iterations"] == pytest.approx(9 / 4)
    assert loop["mean_score"] == pytest.approx((0.97 + 1.0 + 0.9 + 0.6) / 4)
    assert loop["threshold_met_rate"] == 0.5
    assert [(r["iterations"], r["extractions"]) for r in loop["iterations"]] == [
        (1, 1),
        (2, 1),
        (3, 2),
    ]
    bands = {b["band"]: b["extractions"] for b in loop["score_bands"]}
    assert bands == {
        "below 0.50": 0,
        "0.50-0.70": 1,
        "0.70-0.80": 0,
        "0.80-0.90": 0,
        "0.90-0.95": 1,
        "0.95 and above": 2,
    }
    # percentile_cont interpolates: the seconds are 1, 2, 3, 4.
    assert (loop["p50_seconds"], loop["p95_seconds"]) == pytest.approx((2.5, 3.85))
    # Gains per extra iteration: 0.20 / 1, 0.20 / 2 and 0 / 2.
    assert loop["mean_improvement"] == pytest.approx((0.2 + 0.1 + 0.0) / 3)
    assert loop["improved_extractions"] == 3
    pathology = next(t for t in loop["by_type"] if t["doc_type"] == "pathology")
    assert (pathology["extractions"], pathology["met_rate"]) == (2, 0.5)


def test_without_a_percentile_function_the_nearest_rank_row_is_read(monkeypatch):
    make_extractions()
    rows = Extraction.objects.all()
    monkeypatch.setattr(connection, "vendor", "sqlite")
    assert percentile(rows, "seconds", 0.5) == 2.0
    assert percentile(rows, "seconds", 0.95) == 4.0
    assert percentile(rows.none(), "seconds", 0.5) is None


def test_the_number_of_queries_does_not_grow_with_the_rows(django_assert_max_num_queries):
    make_extractions()
    with django_assert_max_num_queries(8):
        loop_monitoring()
    make_extractions(ROWS * 10)
    with django_assert_max_num_queries(8):
        assert loop_monitoring()["extractions"] == 44


def test_each_figure_warns_when_it_crosses_its_threshold(settings):
    make_extractions()
    loop = loop_monitoring()
    assert loop["alerts_crossed"] == []  # the defaults: nothing unusual in these rows
    settings.LOOP_ALERT_MAX_MEAN_ITERATIONS = 2.0
    settings.LOOP_ALERT_MIN_MEAN_SCORE = 0.9
    settings.LOOP_ALERT_MIN_THRESHOLD_MET_RATE = 0.75
    settings.LOOP_ALERT_MAX_P95_SECONDS = 3.0
    settings.LOOP_ALERT_MIN_IMPROVEMENT = 0.2
    crossed = {a.key: a for a in loop_monitoring()["alerts_crossed"]}
    assert set(crossed) == {
        "mean_iterations",
        "mean_score",
        "threshold_met_rate",
        "p95_seconds",
        "mean_improvement",
    }
    assert crossed["p95_seconds"].rule == "at most 3"
    assert crossed["threshold_met_rate"].rule == "at least 0.75"


@pytest.mark.postgres
def test_the_metrics_page_shows_the_loop_and_its_warnings(admin_user, client, settings):
    settings.METRICS_MAX_AGE_SECONDS = 0  # the alert limits change between the loads below
    make_extractions()
    client.force_login(admin_user)
    body = client.get(reverse("review:metrics")).content.decode()
    assert 'id="loop-monitoring"' in body and 'id="loop-alerts"' not in body
    assert "Processing time p95 (s)" in body and "0.95 and above" in body
    assert "<script" not in body.split('id="loop-monitoring"')[1].split("</section>")[0]
    settings.LOOP_ALERT_MAX_P95_SECONDS = 3.0
    body = client.get(reverse("review:metrics")).content.decode()
    assert 'role="alert" id="loop-alerts"' in body
    assert (
        '<li data-alert="p95_seconds">Processing time p95 (s) is 3.850; the threshold is at '
        "most 3.</li>" in body
    )


def test_an_empty_window_says_so(admin_user, client):
    client.force_login(admin_user)
    body = client.get(reverse("review:metrics")).content.decode()
    assert "No extractions in this window yet." in body
