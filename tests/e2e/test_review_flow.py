"""Clinicians' flows in a real Chromium: the queue, a packet, decisions and the lock."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from review.models import GroundTruth, Review
from review.roles import REVIEWERS, ensure_roles
from tests.conftest import PASSWORD
from tests.e2e.conftest import log_in
from tests.review.conftest import make_packet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def clinicians(django_user_model):
    roles = ensure_roles()
    users = {}
    for name in ("rita", "omar"):
        user = django_user_model.objects.create_user(
            username=name, password=PASSWORD, first_name=name.title()
        )
        user.groups.add(roles[REVIEWERS])
        users[name] = user
    return users


def test_open_the_next_packet_see_the_blocker_in_context_and_validate_with_a_key(
    page, live_server, clinicians, screenshot
):
    packet = make_packet()
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(f"{live_server.url}/review/")
    expect(page.locator("[data-count=pending]")).to_have_text("1")
    screenshot("review-queue")

    page.get_by_role("link", name="Next packet").click()
    page.wait_for_url(f"{live_server.url}/review/packets/{packet.pk}/")
    blocker = page.locator("article.issue", has_text="administrative_with_report")
    expect(blocker.locator(".badge")).to_have_text("BLOCKER")
    expect(blocker.locator("mark").first).to_be_visible()
    expect(blocker.locator("mark").first).to_contain_text("invasive ductal carcinoma")
    invented = page.locator("article.issue", has_text="fabricated_evidence")
    expect(invented).to_contain_text("Not found in the document.")
    screenshot("review-packet")

    page.keyboard.press("j")  # next issue: focus moves to the first issue
    expect(page.locator("article.issue.current")).to_have_count(1)
    page.keyboard.press("v")
    page.wait_for_url(f"{live_server.url}/review/")
    expect(page.get_by_role("status").first).to_contain_text("Validated")
    review = Review.objects.get()
    assert (review.outcome, review.reviewer.username) == ("validated", "rita")


def test_correct_a_misclassified_segment_and_see_the_ground_truth(
    page, live_server, clinicians, screenshot
):
    packet = make_packet()
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(f"{live_server.url}/review/packets/{packet.pk}/")
    page.keyboard.press("c")
    expect(page.get_by_label("Dominant type")).to_be_focused()
    page.get_by_label("Segments").fill("1-1 pathology\n2-2 other")
    page.get_by_label("Pathology Report share").fill("0.5")
    page.get_by_label("Other share").fill("0.4")  # wrong on purpose: sums to 0.9
    page.get_by_label("Notes", exact=True).fill("Page 2 is the requisition, not the report.")
    page.get_by_role("button", name="Save correction").click()
    expect(page.locator(".field-error")).to_contain_text("The shares add up to 0.90")
    screenshot("review-correction-error")

    page.get_by_label("Other share").fill("0.5")
    page.get_by_role("button", name="Save correction").click()
    page.wait_for_url(f"{live_server.url}/review/")
    expect(page.get_by_role("status").first).to_contain_text("Corrected")

    page.goto(f"{live_server.url}/documents/{packet.document_id}/")
    truth = page.locator("#ground-truth")
    expect(truth).to_contain_text("Corrected by a clinician by Rita")
    expect(truth).to_contain_text("Pages 2-2: other")
    assert GroundTruth.objects.get().source == "SME_CORRECTED"


def test_a_second_reviewer_is_blocked_by_the_lock(browser, live_server, clinicians, screenshot):
    packet = make_packet()
    url = f"{live_server.url}/review/packets/{packet.pk}/"
    first = browser.new_context().new_page()
    log_in(first, live_server, "rita", PASSWORD)
    first.goto(url)
    expect(first.locator("#lock-banner")).to_contain_text("Locked to you")

    second = browser.new_context().new_page()
    log_in(second, live_server, "omar", PASSWORD)
    second.goto(url)
    expect(second.locator("#lock-banner")).to_contain_text("Rita is reviewing this packet")
    expect(second.get_by_role("button", name="Validate")).to_be_disabled()
    second.keyboard.press("v")  # the shortcut does nothing while the button is disabled
    assert not Review.objects.exists()
