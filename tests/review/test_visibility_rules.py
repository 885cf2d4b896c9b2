"""The cases issue 34 found, each a test: check pages that showed answers to people the
documented table hides them from, the checks list's "Why" column, decisions posted by
someone not holding the packet or from a panel other than the one shown, and wording."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client
from django.urls import reverse

from review import panel, words
from review.corrections import corrected_output, correction_build, segmentation_of
from review.models import Review, SecondReview
from review.services import decisions
from review.views.packet import recorded_message
from tests.review import check_states
from tests.review.conftest import make_packet

pytestmark = pytest.mark.django_db


@pytest.fixture
def states(django_user_model, roles, settings) -> Iterator[check_states.States]:
    from core import events

    built = check_states.build(django_user_model, roles, settings)
    yield built
    events.published.disconnect(built.heard)


def page(states: check_states.States, role: str, url: str) -> str:
    client = Client()
    client.force_login(states.users[role])
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def test_the_detector_finds_an_answer_shown_to_someone_it_is_hidden_from(states):
    # The second reviewer of the adjudication sees both answers: to anyone else, a leak.
    html = page(
        states,
        "second_reviewer",
        reverse("review:second", args=[states.seconds["adjudication"].pk]),
    )
    assert not states.leaks("ottoline", html, "own page")
    leaks = {leak.what.split(" ")[0] for leak in states.leaks("ulrich", html, "as Ulrich")}
    assert {"adjudication/first", "adjudication/second", "xenophon"} <= leaks


def test_an_unrelated_reviewer_opening_an_adjudication_sees_neither_answer_nor_who_gave_it(
    states,
):
    html = page(
        states, "unrelated", reverse("review:second", args=[states.seconds["adjudication"].pk])
    )
    assert not states.leaks("ulrich", html, "adjudication page")
    assert 'id="check-hidden"' in html and 'id="comparison"' not in html
    assert "Waiting for adjudication" not in html  # nor that the answers differ


def test_the_prospective_second_reviewer_of_an_audit_disagreement_sees_neither_type(states):
    sample = states.samples["audit_disputed"]
    html = page(states, "second_reviewer", reverse("review:audit", args=[sample.pk]))
    assert not states.leaks("ottoline", html, "audit page")
    assert "The machine (" not in html and "Peregrine" not in html
    # The auditor sees the comparison (their own answer and the machine's).
    own = page(states, "auditor", reverse("review:audit", args=[sample.pk]))
    assert 'id="comparison"' in own and "The machine (" in own


def test_the_checks_list_does_not_tell_a_second_reviewer_why_a_check_exists(states):
    html = page(states, "second_reviewer", reverse("review:checks"))
    rules = {s.get_rule_display() for s in SecondReview.objects.all()}
    assert rules and not any(rule in html for rule in rules), rules
    assert ">Why<" not in html.split('id="second-queue"')[1].split("</section>")[0]
    admin = page(states, "admin", reverse("review:checks"))
    assert any(rule in admin for rule in rules)


def test_the_first_decider_sees_only_their_own_answer_during_adjudication(states):
    second = states.seconds["adjudication"]
    html = page(states, "first_decider_adjudication", reverse("review:second", args=[second.pk]))
    assert not states.leaks("xenophon", html, "adjudication page")
    assert 'data-answer="theirs"' in html and 'data-answer="yours"' not in html
    assert "Ottoline" not in html and 'id="own-only"' in html


# -- a decision is the act of the reviewer holding the packet, on the panel they saw ------------


def posted(packet, user, **extra):
    """What the packet page's form posts for a validation: its token and the panel's rows
    (the machine's answer)."""
    machine = segmentation_of(packet.classification)
    data = {
        "panel_token": panel.panel_token(packet=packet, user=user),
        "start": [str(a) for a, _, _ in machine],
        "type": [t.value for _, _, t in machine],
    }
    data.update(extra)
    return data


@pytest.fixture
def packet():
    return make_packet(sha="v")


def test_a_validation_without_the_panels_rows_is_refused(client, reviewer, packet):
    client.force_login(reviewer)
    client.get(reverse("review:packet", args=[packet.pk]))
    data = {"panel_token": panel.panel_token(packet=packet, user=reviewer)}
    response = client.post(reverse("review:validate", args=[packet.pk]), data)
    assert response.status_code == 409
    assert panel.MESSAGES[panel.MISSING] in response.content.decode()
    assert not Review.objects.exists()
    # The same post with the panel's rows (the machine's answer) records.
    response = client.post(reverse("review:validate", args=[packet.pk]), posted(packet, reviewer))
    assert response.status_code == 302 and Review.objects.count() == 1


def test_a_reviewer_who_does_not_hold_the_packet_cannot_decide_it(
    client, reviewer, other_reviewer, packet
):
    # Nobody opened it: the lock is free, but deciding needs holding it.
    client.force_login(other_reviewer)
    response = client.post(
        reverse("review:validate", args=[packet.pk]), posted(packet, other_reviewer)
    )
    assert response.status_code == 409 and not Review.objects.exists()
    assert panel.MESSAGES[panel.NOT_HELD] in response.content.decode()
    # Rita opens it; Omar's post (even with a token of his own) is refused: she holds it.
    decisions.packet_open(packet=packet, user=reviewer)
    response = client.post(
        reverse("review:correct", args=[packet.pk]),
        {
            "panel_token": panel.panel_token(packet=packet, user=other_reviewer),
            "start": ["1"],
            "type": ["other"],
        },
    )
    assert response.status_code == 409 and not Review.objects.exists()


def test_a_form_from_a_page_painted_before_an_undo_is_stale(client, reviewer, packet, settings):
    settings.SECOND_REVIEW_ON_CORRECTION = False
    client.force_login(reviewer)
    client.get(reverse("review:packet", args=[packet.pk]))
    old = posted(packet, reviewer)
    assert client.post(reverse("review:validate", args=[packet.pk]), old).status_code == 302
    assert client.post(reverse("review:undo")).status_code == 302
    # The packet is open again, locked to Rita; a post from the page painted before is stale.
    response = client.post(reverse("review:validate", args=[packet.pk]), old)
    assert response.status_code == 409
    assert panel.MESSAGES[panel.STALE] in response.content.decode()
    assert Review.objects.filter(withdrawn_at__isnull=True).count() == 0
    # Another user's token does not fit either.
    forged = posted(packet, reviewer, panel_token="x" + old["panel_token"])
    assert client.post(reverse("review:validate", args=[packet.pk]), forged).status_code == 409


def test_a_type_marked_also_present_that_a_segment_has_adds_nothing_and_the_panel_saves(
    client, reviewer, packet
):
    client.force_login(reviewer)
    client.get(reverse("review:packet", args=[packet.pk]))
    data = posted(packet, reviewer, start=["1", "2"], type=["pathology", "other"])
    data["present"] = ["pathology"]  # already a segment's type
    response = client.post(reverse("review:correct", args=[packet.pk]), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Review.objects.get().outcome == "corrected"


# -- wording -----------------------------------------------------------------------------------


def test_other_takes_an():
    said = words.issue_words(
        {
            "code": "low_confidence",
            "message": "Segment 1 is other with confidence 0.40, below 0.60.",
            "location": "segments[0].types.other",
        },
        corrected_output(correction_build(segments=[(1, 2, check_states.OTHER)])),
    )
    assert " is an Other " in said.sentence and " a Other" not in said.sentence


def test_the_recorded_message_reads_as_one_sentence(reviewer, packet, settings):
    settings.SECOND_REVIEW_ON_CORRECTION = False
    decisions.packet_open(packet=packet, user=reviewer)
    review = decisions.review_submit(
        packet_id=packet.pk,
        reviewer=reviewer,
        correction=correction_build(segments=[(1, 1, check_states.P), (2, 2, check_states.OTHER)]),
        notes="",
    )
    said = recorded_message(review)
    assert " as page 1 Pathology Report; page 2 Other, corrected" in said, said
    assert ".." not in said and " as Page" not in said
