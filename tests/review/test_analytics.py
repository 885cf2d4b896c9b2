"""Reviewer analytics (review.analytics) with known decisions and times: decisions, decisions
per hour, median seconds, undo rate, agreement with second reviews and with adjudication, per
reviewer and per claimed type; where Admins and each reviewer see them; and the workspace's
"packet 3 of 12 today"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.urls import reverse

from engine.schemas import DocType
from review.analytics import reviewer_analytics
from review.corrections import correction_build
from review.models import Review, SecondReview
from review.services import decisions
from review.services.second_review import adjudicate, second_review_submit
from tests.review.conftest import make_packet

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def timed(review: Review, start: float, end: float) -> Review:
    """Give a decision known times (minutes after 09:00), after the services made it."""
    Review.objects.filter(pk=review.pk).update(started_at=at(start), finished_at=at(end))
    return review


def validate(packet: Any, reviewer: Any) -> Review:
    decisions.packet_open(packet=packet, user=reviewer)
    return decisions.review_submit(
        packet_id=packet.pk, reviewer=reviewer, correction=None, notes=""
    )


def correct(packet: Any, reviewer: Any, to: DocType) -> Review:
    decisions.packet_open(packet=packet, user=reviewer)
    correction = correction_build(segments=[(1, packet.document.page_count, to)])
    return decisions.review_submit(
        packet_id=packet.pk, reviewer=reviewer, correction=correction, notes=""
    )


def whole(doc_type: DocType) -> list[tuple[int, int, DocType]]:
    return [(1, 2, doc_type)]  # make_packet's documents have two pages


def second_of(review: Review) -> int:
    return SecondReview.objects.get(first_review=review).pk


@pytest.fixture
def known_day(settings, reviewer, other_reviewer, admin_user) -> dict[str, Any]:
    """Rita (reviewer) and Omar (other_reviewer) decide packets at known times; Ada
    (admin_user) adjudicates.

    Rita, 7 decisions: pathology 60 s, 90 s (undone), 30 s (the redo); radiology 120 s
    (corrected to pathology, a second review agrees), 1,800 s (corrected to genomic, the
    second reviewer says pathology, Ada says genomic), 60 s; genomic 40 s.
    Omar, 3 pathology decisions: 45 s; 60 s (corrected to radiology; Rita, second, says
    pathology; Ada says pathology); 15 s."""
    settings.SECOND_REVIEW_ON_CORRECTION = True
    settings.SECOND_REVIEW_ON_BLOCKER = False
    settings.SECOND_REVIEW_RATE = 0.0
    settings.REVIEW_LOCK_MINUTES = 15
    rita, omar, ada = reviewer, other_reviewer, admin_user

    def packet(sha: str, label: str) -> Any:
        return make_packet(sha=sha, label=label)

    timed(validate(packet("a", "pathology"), rita), 0, 1)
    p2 = packet("b", "pathology")
    undone = validate(p2, rita)
    decisions.review_undo(reviewer=rita)
    timed(undone, 1, 2.5)
    timed(validate(p2, rita), 2.5, 3)
    agreed = timed(correct(packet("c", "radiology"), rita, DocType.PATHOLOGY), 3, 5)
    second_review_submit(
        second_id=second_of(agreed), reviewer=omar, segments=whole(DocType.PATHOLOGY)
    )
    disputed = timed(correct(packet("e", "radiology"), rita, DocType.GENOMIC), 5, 35)
    second_review_submit(
        second_id=second_of(disputed), reviewer=omar, segments=whole(DocType.PATHOLOGY)
    )
    adjudicate(second_id=second_of(disputed), user=ada, segments=whole(DocType.GENOMIC))
    timed(validate(packet("f", "radiology"), rita), 35, 36)
    timed(validate(packet("g", "genomic"), rita), 36, 36 + 40 / 60)

    timed(validate(packet("h", "pathology"), omar), 60, 60.75)
    omars = timed(correct(packet("i", "pathology"), omar, DocType.RADIOLOGY), 61, 62)
    second_review_submit(
        second_id=second_of(omars), reviewer=rita, segments=whole(DocType.PATHOLOGY)
    )
    adjudicate(second_id=second_of(omars), user=ada, segments=whole(DocType.PATHOLOGY))
    timed(validate(packet("j", "pathology"), omar), 63, 63.25)
    return {"rita": rita, "omar": omar, "ada": ada}


def by_name(figures: list[Any]) -> dict[str, Any]:
    return {person.name: person for person in figures}


def test_each_reviewers_figures_match_their_known_decisions_and_times(known_day):
    people = by_name(reviewer_analytics())
    assert set(people) == {"Rita", "Omar"}  # Ada only adjudicated: no figures of her own

    rita = people["Rita"].total
    assert (rita.decisions, rita.timed, rita.undone) == (7, 7, 1)
    # 60 + 90 + 30 + 120 + 900 (1,800 s counts at most the 15-minute lock) + 60 + 40 s.
    assert rita.worked_seconds == pytest.approx(1300)
    assert rita.per_hour == pytest.approx(7 * 3600 / 1300)
    assert rita.median_seconds == pytest.approx(60)  # 30 40 60 [60] 90 120 1800
    assert rita.undo_rate == pytest.approx(1 / 7)
    assert (rita.second_reviewed, rita.second_agreed) == (2, 1)
    assert rita.second_agreement == pytest.approx(0.5)
    # Her correction to genomic (Ada agreed) and her second answer on Omar's (Ada agreed).
    assert (rita.adjudicated, rita.adjudication_matched) == (2, 2)
    assert rita.adjudication_agreement == pytest.approx(1.0)

    types = {f.doc_type: f for f in people["Rita"].types}
    assert [f.doc_type for f in people["Rita"].types] == ["pathology", "genomic", "radiology"]
    pathology, radiology, genomic = types["pathology"], types["radiology"], types["genomic"]
    assert (pathology.decisions, pathology.undone, pathology.median_seconds) == (3, 1, 60)
    assert pathology.per_hour == pytest.approx(3 * 3600 / 180)
    assert pathology.undo_rate == pytest.approx(1 / 3)
    assert (radiology.decisions, radiology.undone, radiology.median_seconds) == (3, 0, 120)
    assert radiology.per_hour == pytest.approx(3 * 3600 / 1080)
    assert (genomic.decisions, genomic.median_seconds, genomic.per_hour) == (1, 40, 90)
    # Second reviews count under the type the packet claimed (radiology), not the answer's.
    assert (radiology.second_reviewed, radiology.second_agreed) == (2, 1)
    assert (pathology.second_reviewed, pathology.second_agreement) == (0, None)
    assert (radiology.adjudicated, radiology.adjudication_matched) == (1, 1)
    assert (pathology.adjudicated, pathology.adjudication_matched) == (1, 1)

    omar = people["Omar"].total
    assert (omar.decisions, omar.undone, omar.undo_rate) == (3, 0, 0.0)
    assert omar.median_seconds == pytest.approx(45)  # 15 [45] 60
    assert omar.per_hour == pytest.approx(3 * 3600 / 120)
    assert (omar.second_reviewed, omar.second_agreed, omar.second_agreement) == (1, 0, 0.0)
    # His second answer on Rita's correction and his own correction: Ada agreed with neither.
    assert (omar.adjudicated, omar.adjudication_matched, omar.adjudication_agreement) == (
        2,
        0,
        0.0,
    )
    assert [f.doc_type for f in people["Omar"].types] == ["pathology", "radiology"]


def test_a_reviewers_own_figures_are_the_same_as_in_everyones(known_day):
    (mine,) = reviewer_analytics(reviewer=known_day["omar"])
    everyone = by_name(reviewer_analytics())["Omar"]
    assert mine.total == everyone.total
    assert mine.by_type == everyone.by_type


def test_untimed_decisions_count_but_are_not_timed(reviewer):
    review = validate(make_packet(sha="k"), reviewer)
    Review.objects.filter(pk=review.pk).update(started_at=None)
    (figures,) = reviewer_analytics()
    assert (figures.total.decisions, figures.total.timed) == (1, 0)
    assert figures.total.per_hour is None and figures.total.median_seconds is None


def test_admins_see_every_reviewers_row_on_the_metrics_page(client, known_day):
    client.force_login(known_day["ada"])
    html = client.get(reverse("review:metrics")).content.decode()
    assert 'id="reviewer-metrics"' in html
    for person in (known_day["rita"], known_day["omar"]):
        assert f'data-reviewer="{person.pk}"' in html
    assert '<td data-figure="decisions">7</td>' in html
    assert '<td data-figure="median_seconds">60</td>' in html
    assert '<td data-figure="per_hour">19.4</td>' in html  # 7 decisions in 1,300 s
    assert '<td data-figure="undo_rate">14% (1)</td>' in html
    assert '<td data-figure="second_agreement">50% (1 of 2)</td>' in html
    assert '<td data-figure="adjudication_agreement">0% (0 of 2)</td>' in html


def test_reviewers_see_their_own_figures_and_nobody_elses(client, known_day):
    client.force_login(known_day["omar"])
    response = client.get(reverse("review:me"))
    assert response.status_code == 200
    html = response.content.decode()
    assert f'data-reviewer="{known_day["omar"].pk}"' in html
    assert f'data-reviewer="{known_day["rita"].pk}"' not in html and "Rita" not in html
    assert '<td data-figure="decisions">3</td>' in html
    assert client.get(reverse("review:queue")).content.decode().count(reverse("review:me")) == 1
    # The metrics page stays an Admin's.
    assert client.get(reverse("review:metrics")).status_code == 403


def test_my_work_needs_a_reviewers_role(client, outsider):
    assert client.get(reverse("review:me")).status_code == 302  # to the login page
    client.force_login(outsider)
    assert client.get(reverse("review:me")).status_code == 403


def test_the_packet_page_says_where_the_reviewer_is_in_their_day(client, reviewer):
    packets = [make_packet(sha=sha) for sha in "lmno"]
    validate(packets[0], reviewer)  # one decided today; three waiting
    client.force_login(reviewer)
    html = client.get(reverse("review:packet", args=[packets[1].pk])).content.decode()
    assert '<span id="progress">Packet 2 of 4 today (2 more waiting)</span>' in html
    # A decided packet is not a step of the day: no progress on it.
    html = client.get(reverse("review:packet", args=[packets[0].pk])).content.decode()
    assert 'id="progress"' not in html


def test_a_packet_someone_else_holds_shows_no_progress(client, reviewer, other_reviewer):
    packet = make_packet(sha="p")
    decisions.packet_open(packet=packet, user=other_reviewer)
    client.force_login(reviewer)
    html = client.get(reverse("review:packet", args=[packet.pk])).content.decode()
    assert 'id="progress"' not in html


def test_the_figures_take_the_same_few_queries_however_many_decisions(
    known_day, reviewer, django_assert_max_num_queries
):
    with django_assert_max_num_queries(6):
        reviewer_analytics()
    for sha in "qrstuvw":
        validate(make_packet(sha=sha), reviewer)
    with django_assert_max_num_queries(6):
        assert by_name(reviewer_analytics())["Rita"].total.decisions == 14


def test_medians_per_group_are_the_nearest_rank_without_a_percentile_function(
    known_day, monkeypatch
):
    """PostgreSQL interpolates; elsewhere (SQLite) the nearest-rank value of each group is
    picked in SQL. Omar's pathology times are 15, 45, 60 s; Rita's radiology ones 60, 120,
    1,800 s; an even group (Rita's standing pathology decisions) shows the difference."""
    from django.db import connection
    from django.db.models import DurationField, ExpressionWrapper, F

    from core.aggregates import percentile_by

    span = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
    rita, omar = known_day["rita"].pk, known_day["omar"].pk
    fastest = Review.objects.filter(reviewer_id=rita, claimed_type="pathology").exclude(
        withdrawn_how="undone"
    )  # 60 s and 30 s
    rows = Review.objects.all()
    monkeypatch.setattr(connection, "vendor", "sqlite")
    medians = percentile_by(rows, ["reviewer_id", "claimed_type"], span, 0.5)
    assert medians[(omar, "pathology")] == timedelta(seconds=45)
    assert medians[(rita, "radiology")] == timedelta(seconds=120)
    assert percentile_by(fastest, ["reviewer_id"], span, 0.5) == {(rita,): timedelta(seconds=30)}
    assert percentile_by(rows, ["reviewer_id"], span, 1.0)[(rita,)] == timedelta(seconds=1800)
    assert percentile_by(rows, ["reviewer_id"], span, 0.0)[(rita,)] == timedelta(seconds=30)
    assert percentile_by(rows.none(), ["reviewer_id"], span, 0.5) == {}
    monkeypatch.undo()
    if connection.vendor == "postgresql":
        interpolated = percentile_by(
            fastest, ["reviewer_id"], span, 0.5, output_field=DurationField()
        )
        assert interpolated == {(rita,): timedelta(seconds=45)}
