"""The packet page is one screen at 1280x800 (the decision controls always in view), one column
at 768 px, and the main pages pass an axe-core scan (vendored: no script from the network)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from review.models import ReviewPacket
from tests.conftest import PASSWORD
from tests.e2e.conftest import ARTIFACTS, log_in
from tests.review.conftest import GENOMIC_REPORT, PATHOLOGY_REPORT, make_packet, pdf_packet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).parent / "vendor" / "axe-4.14.1.min.js"
DECISION_CONTROLS = ("#correct-button", "#validate-button", "#skip-button", "#next-link")


def in_viewport(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    return (
        box is not None
        and box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= size["width"]
        and box["y"] + box["height"] <= size["height"]
    )


def serious_violations(page) -> list[dict]:
    """axe-core's serious and critical findings on the current page."""
    page.evaluate(AXE.read_text())
    found = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ["violations"]})).violations
            .map(v => ({id: v.id, impact: v.impact, help: v.help,
                        nodes: v.nodes.slice(0, 3).map(n => n.target.join(" "))}))"""
    )
    return [v for v in found if v["impact"] in ("serious", "critical")]


@pytest.fixture
def demo_reviewer():
    """The demo documents, loaded as the quick start loads them (five packets stay open; two
    more are decided, with their second review and adjudication waiting)."""
    call_command("load_demo", "--password", PASSWORD, verbosity=0)
    return "reviewer"


def test_the_decision_controls_are_in_view_at_1280x800_on_every_demo_packet_and_a_bundle(
    browser, live_server, demo_reviewer
):
    bundle = pdf_packet(PATHOLOGY_REPORT + GENOMIC_REPORT, label="pathology", name="bundle.pdf")
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    log_in(page, live_server, demo_reviewer, PASSWORD)
    packets = list(
        ReviewPacket.objects.filter(status__in=ReviewPacket.OPEN_STATUSES).select_related(
            "document"
        )
    )
    assert len(packets) >= 3  # the demo's packets and the bundle
    heights = {}
    for packet in packets:
        page.goto(f"{live_server.url}/review/packets/{packet.pk}/")
        expect(page.locator("#packet-status")).to_contain_text("Locked to you")
        for selector in DECISION_CONTROLS:
            assert in_viewport(page, selector), (packet.document.original_filename, selector)
        heights[packet.document.original_filename] = page.evaluate(
            "document.documentElement.scrollHeight"
        )
        page.keyboard.press("c")  # correcting keeps everything in view too
        page.keyboard.press("2")
        assert in_viewport(page, "#correct-button")
    # One screen: the page itself never scrolls; its panels do.
    assert set(heights.values()) == {800}, heights
    page.goto(f"{live_server.url}/review/packets/{bundle.pk}/")
    page.keyboard.press("j")
    page.screenshot(path=str(ARTIFACTS / "review-packet-1280.png"))


def test_at_768_px_the_packet_page_and_the_documents_list_are_one_column_and_unclipped(
    browser, live_server, demo_reviewer
):
    bundle = pdf_packet(PATHOLOGY_REPORT + GENOMIC_REPORT, label="pathology", name="bundle.pdf")
    page = browser.new_context(viewport={"width": 768, "height": 1024}).new_page()
    log_in(page, live_server, demo_reviewer, PASSWORD)
    page.goto(f"{live_server.url}/review/packets/{bundle.pk}/")
    issues = page.locator(".ws-issues").bounding_box()
    viewer = page.locator(".ws-viewer").bounding_box()
    decision = page.locator(".ws-decision").bounding_box()
    assert issues["x"] == viewer["x"] == decision["x"]  # stacked, not side by side
    assert viewer["width"] > 700
    assert page.evaluate("document.documentElement.scrollWidth") <= 768
    for selector in ("#correct-button", "#validate-button"):  # the action bar stays in view
        assert in_viewport(page, selector)
    type_select = page.locator(".seg-type").first.bounding_box()
    assert type_select["width"] > 200  # inputs are usable, not four characters wide
    page.screenshot(path=str(ARTIFACTS / "review-packet-768.png"))

    page.goto(f"{live_server.url}/documents/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 768
    page.screenshot(path=str(ARTIFACTS / "documents-list-768.png"), full_page=True)


def test_axe_finds_no_serious_or_critical_violations_on_the_main_pages(
    browser, live_server, demo_reviewer, django_user_model, roles
):
    from review.roles import ADMINS

    bundle = pdf_packet(PATHOLOGY_REPORT + GENOMIC_REPORT, label="pathology", name="bundle.pdf")
    invented = make_packet()  # a fabricated snippet and a document without page images
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    found = {"login": serious_violations(page)}
    log_in(page, live_server, demo_reviewer, PASSWORD)
    for name, path in [
        ("documents", "/documents/"),
        ("upload", "/documents/upload/"),
        ("queue", "/review/"),
        ("packet-invented", f"/review/packets/{invented.pk}/"),
        ("packet", f"/review/packets/{bundle.pk}/"),
    ]:
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
        found[name] = serious_violations(page)
    page.keyboard.press("c")
    page.keyboard.press("3")
    expect(page.locator("#correction-preview")).to_contain_text("Will record")
    found["packet-correcting"] = serious_violations(page)
    page.goto(f"{live_server.url}/review/packets/{invented.pk}/")
    page.keyboard.press("v")
    page.wait_for_url(lambda url: f"/packets/{invented.pk}/" not in url)
    admin = django_user_model.objects.create_user(username="ada", password=PASSWORD)
    admin.groups.add(roles[ADMINS])
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    log_in(page, live_server, "ada", PASSWORD)
    for name, path in [
        ("decided", f"/review/packets/{invented.pk}/"),
        ("export", "/review/export/"),
    ]:
        page.goto(f"{live_server.url}{path}")
        found[name] = serious_violations(page)
    assert {name: v for name, v in found.items() if v} == {}


def test_the_favicon_is_served(page, live_server):
    response = page.goto(f"{live_server.url}/favicon.ico")
    assert response.status == 200
    assert response.headers["content-type"].startswith("image/svg+xml")
