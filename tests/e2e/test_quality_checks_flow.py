"""Second review and adjudication, and a blind audit, walked through in a real Chromium: the
second reviewer answers without seeing the first decision, the disagreement goes to an admin
who made neither decision, and the adjudicated type becomes the ground truth."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from engine.schemas import DocType
from review.corrections import correction_build
from review.models import AuditEvent, AuditSample, GroundTruth, SecondReview
from review.roles import ADMINS, REVIEWERS, ensure_roles
from review.services import decisions
from tests.conftest import PASSWORD
from tests.e2e.conftest import log_in
from tests.review.conftest import make_packet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def clinicians(django_user_model):
    roles = ensure_roles()
    users = {}
    for name, role in (("rita", REVIEWERS), ("omar", REVIEWERS), ("ada", ADMINS)):
        user = django_user_model.objects.create_user(
            username=name, password=PASSWORD, first_name=name.title(), is_staff=role == ADMINS
        )
        user.groups.add(roles[role])
        users[name] = user
    return users


def as_user(browser, live_server, username):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    log_in(page, live_server, username, PASSWORD)
    return page


def test_a_disagreement_is_adjudicated_in_the_browser(browser, live_server, clinicians):
    packet = make_packet()
    decisions.packet_open(packet=packet, user=clinicians["rita"])
    decisions.review_submit(
        packet_id=packet.pk,
        reviewer=clinicians["rita"],
        correction=correction_build(segments=[(1, 2, DocType.RADIOLOGY)]),
        notes="",
    )
    second = SecondReview.objects.get()

    # Omar, a second reviewer: the first decision is nowhere on the page. He answers by keys.
    omar = as_user(browser, live_server, "omar")
    omar.get_by_role("link", name="Quality checks").click()
    omar.locator(f"[data-second='{second.pk}'] a").click()
    omar.wait_for_load_state()
    expect(omar.locator("#decision-form")).to_be_visible()
    expect(omar.locator("#comparison")).to_have_count(0)
    assert "Rita" not in omar.content()
    for key in ("c", "2", "Enter"):  # Pathology Report
        omar.keyboard.press(key)
    expect(omar.locator(".messages")).to_contain_text("disagrees")
    omar.goto(f"{live_server.url}/review/second/{second.pk}/")
    expect(omar.locator("[data-answer=theirs]")).to_have_text("Radiology Report")
    expect(omar.locator("[data-status]")).to_have_text("Waiting for adjudication")
    expect(omar.locator("#decision-form")).to_have_count(0)  # a reviewer does not adjudicate

    # Ada (Admins) gave neither answer: she sees both, side by side, and decides.
    ada = as_user(browser, live_server, "ada")
    ada.goto(f"{live_server.url}/review/checks/")
    ada.locator(f"[data-adjudication='{second.pk}'] a").click()
    ada.wait_for_load_state()
    expect(ada.locator("[data-answer-index='1']")).to_contain_text("Radiology Report")
    expect(ada.locator("[data-answer-index='2']")).to_contain_text("Pathology Report")
    ada.keyboard.press("2")  # take Omar's answer
    ada.get_by_label("Note (optional)").fill("Gross description and diagnosis: pathology.")
    ada.locator("#correct-button").click()
    expect(ada.locator(".messages")).to_contain_text("Adjudicated: Pathology Report")
    ada.goto(f"{live_server.url}/review/second/{second.pk}/")
    expect(ada.locator("[data-answer=final]")).to_have_text("Pathology Report")

    second.refresh_from_db()
    assert second.status == SecondReview.Status.ADJUDICATED
    latest = GroundTruth.objects.filter(document=packet.document).order_by("-version").first()
    assert (latest.dominant_type, latest.source, latest.reviewer.username, latest.version) == (
        "pathology",
        "SME_CORRECTED",
        "ada",
        2,
    )
    assert list(
        AuditEvent.objects.filter(
            action__in=[AuditEvent.Action.SECOND_REVIEWED, AuditEvent.Action.ADJUDICATED]
        )
        .order_by("at")
        .values_list("username", "action")
    ) == [("omar", "second_reviewed"), ("ada", "adjudicated")]

    # Ada's metrics page now has a second review to compute kappa from.
    ada.get_by_role("link", name="Metrics").click()
    expect(ada.locator("#kappa-metrics")).to_contain_text("1 second review")


def test_a_blind_audit_in_the_browser(browser, live_server, clinicians, settings):
    from tests.review.test_quality_checks import accept

    settings.AUDIT_SAMPLE_RATE = 1.0
    accept(1)
    sample = AuditSample.objects.get()
    rita = as_user(browser, live_server, "rita")
    rita.goto(f"{live_server.url}/review/checks/")
    rita.locator(f"[data-audit='{sample.pk}'] a").click()
    rita.wait_for_load_state()
    expect(rita.locator("#decision-form")).to_be_visible()
    expect(rita.locator("#comparison")).to_have_count(0)
    for key in ("c", "4", "Enter"):  # Radiology Report
        rita.keyboard.press(key)
    expect(rita.locator(".messages")).to_contain_text("disagrees with the accepted answer")
    rita.goto(f"{live_server.url}/review/audits/{sample.pk}/")
    expect(rita.locator("[data-agrees]")).to_have_text("Disagree")
    expect(rita.locator("[data-answer=theirs]")).to_contain_text("Pathology Report")
    sample.refresh_from_db()
    assert sample.agrees is False and sample.correction is None  # checked first
    assert SecondReview.objects.get().audit == sample
