"""A decision is the act of the reviewer who holds the packet, on the panel they saw, in a
real Chromium: keys wait until a packet has been on screen 400 ms, leave focused controls
alone, "Also present" cannot strand the panel, and a page painted before an undo is stale."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from review.models import Review
from review.roles import REVIEWERS, ensure_roles
from tests.conftest import PASSWORD
from tests.e2e.conftest import log_in
from tests.review.conftest import make_packet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def rita(django_user_model):
    user = django_user_model.objects.create_user(
        username="rita", password=PASSWORD, first_name="Rita"
    )
    user.groups.add(ensure_roles()[REVIEWERS])
    return user


def url(live_server, packet):
    return f"{live_server.url}/review/packets/{packet.pk}/"


def test_v_pressed_150_ms_after_the_next_packet_opens_records_nothing(page, live_server, rita):
    first, second = make_packet(sha="1"), make_packet(sha="2")
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(url(live_server, first))
    for key in ("c", "4", "Enter"):  # correct the first: the next packet opens
        page.keyboard.press(key)
    # The Enter-then-V race: V as soon as the next packet's page is parsed (its images may
    # take seconds more on a loaded machine, so not after "load"), before it can be read.
    page.wait_for_url(url(live_server, second), wait_until="domcontentloaded")
    assert page.evaluate("document.documentElement.dataset.keysReady") is None
    page.keyboard.press_at_once("v")
    page.wait_for_timeout(600)
    assert page.url == url(live_server, second)
    assert not Review.objects.filter(packet=second).exists()
    page.keyboard.press("v")  # read now: V validates it
    page.wait_for_url(f"{live_server.url}/review/")
    assert Review.objects.get(packet=second).outcome == "validated"


def test_keys_never_act_on_a_focused_form_control(page, live_server, rita):
    packet = make_packet()
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(url(live_server, packet))
    select = page.locator("#segment-rows .seg-type").first
    before = select.input_value()
    select.focus()
    page.keyboard.press("g")  # the browser's type-ahead would pick Genomic Report
    assert select.input_value() == before
    share = page.locator("input[name=share_pathology]")
    share.focus()
    page.keyboard.press("Enter")  # a field's Enter submits nothing unless correcting
    page.wait_for_timeout(400)
    assert page.url == url(live_server, packet) and not Review.objects.exists()


def test_also_present_cannot_strand_the_panel(page, live_server, rita):
    packet = make_packet()
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(url(live_server, packet))
    page.locator("details.present summary").click()
    # The machine saw Pathology Report: it cannot be ticked as missed.
    expect(page.locator("input[name=present][value=pathology]")).to_be_disabled()
    page.locator("input[name=present][value=radiology]").check()
    expect(page.locator("#will-record")).to_have_attribute("data-action", "correct")
    page.evaluate("document.activeElement.blur()")  # keys leave a focused control alone
    page.keyboard.press("v")
    expect(page.locator("#packet-status")).to_contain_text("R to put the machine's answer back")
    page.keyboard.press("r")  # the whole answer back, the ticked type too
    expect(page.locator("input[name=present][value=radiology]")).not_to_be_checked()
    expect(page.locator("#will-record")).to_have_attribute("data-action", "validate")
    page.keyboard.press("v")
    page.wait_for_url(f"{live_server.url}/review/")
    assert Review.objects.get().outcome == "validated"


def test_a_page_painted_before_an_undo_records_nothing(browser, live_server, rita):
    packet = make_packet()
    context = browser.new_context()
    stale = context.new_page()
    log_in(stale, live_server, "rita", PASSWORD)
    stale.goto(url(live_server, packet))
    fresh = context.new_page()  # the same reviewer, a second tab
    fresh.goto(url(live_server, packet))
    fresh.keyboard.press("v")
    fresh.wait_for_url(f"{live_server.url}/review/")
    fresh.keyboard.press("u")  # undone: the packet is open again, locked to her
    fresh.wait_for_url(url(live_server, packet))
    stale.keyboard.press("v")
    expect(stale.locator("#packet-status")).to_contain_text("this page is out of date")
    assert not Review.objects.filter(withdrawn_at__isnull=True).exists()
    context.close()
