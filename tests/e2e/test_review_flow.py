"""Clinicians' flows in a real Chromium, driven by the exact keys of the keyboard contract:
validate, correct the type, skip, undo, split a bundle; then the ground truth and the export
rows they produced."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from review.models import AuditEvent, GroundTruth, Review, ReviewPacket, ReviewSkip
from review.roles import ADMINS, REVIEWERS, ensure_roles
from review.selectors import ground_truth_selection
from review.serializers import export_ground_truth
from tests.conftest import PASSWORD
from tests.e2e.conftest import log_in
from tests.review.conftest import (
    GENOMIC_REPORT,
    PATHOLOGY_REPORT,
    RADIOLOGY_REPORT,
    make_packet,
    pdf_packet,
)

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
    ada = django_user_model.objects.create_user(
        username="ada", password=PASSWORD, first_name="Ada", is_staff=True
    )
    ada.groups.add(roles[ADMINS])
    users["ada"] = ada
    return users


def keys(page, *sequence):
    """Press each key in turn; returns how many were pressed (the actions counted)."""
    for key in sequence:
        page.keyboard.press(key)
    return len(sequence)


def export_rows(**selection):
    body = export_ground_truth(ground_truth_selection(**selection), fmt="jsonl")
    return [json.loads(line) for line in body.decode().splitlines()]


def packet_url(live_server, packet):
    return f"{live_server.url}/review/packets/{packet.pk}/"


def test_next_then_v_validates_and_the_export_row_names_the_reviewer(
    page, live_server, clinicians, screenshot
):
    packet = make_packet()
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(f"{live_server.url}/review/")
    expect(page.locator("[data-count=pending]")).to_have_text("1")
    expect(page.locator("[data-count=my_waiting]")).to_have_text("1")
    screenshot("review-queue")

    keys(page, "n")
    page.wait_for_url(packet_url(live_server, packet))
    blocker = page.locator("li.issue[data-code=administrative_with_report]")
    expect(blocker.locator("h3")).to_contain_text("Reads like paperwork")
    expect(blocker.locator(".badge")).to_have_text("BLOCKER")
    expect(blocker.locator("mark").first).to_contain_text("invasive ductal carcinoma")
    expect(page.locator("li.issue[data-code=fabricated_evidence]")).to_contain_text(
        "Not found in the document."
    )

    keys(page, "j")  # the first issue becomes current, and so does its evidence in the viewer
    expect(page.locator("li.item.current")).to_have_count(1)
    expect(page.locator(".pages .mark.current").first).to_be_visible()
    assert keys(page, "v") == 1
    page.wait_for_url(f"{live_server.url}/review/")
    expect(page.locator(".messages")).to_contain_text("as Pathology Report, validated by you")

    truth = GroundTruth.objects.get()
    assert (truth.source, truth.version, truth.reviewer.username) == ("SME_VALIDATED", 1, "rita")
    [row] = export_rows()
    assert (row["source"], row["reviewer"], row["dominant_type"]) == (
        "SME_VALIDATED",
        "rita",
        "pathology",
    )
    assert row["reason"] == "" and row["note"] == ""


def test_a_type_correction_takes_four_keys_from_the_queue(page, live_server, clinicians):
    """N, C, 4, Enter: a one-page radiology report the classifier called pathology."""
    from engine.fields.library import find_template, load_packs

    packet = pdf_packet(RADIOLOGY_REPORT, label="pathology", name="ct-chest.pdf")
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(f"{live_server.url}/review/")

    pressed = keys(page, "n")
    page.wait_for_url(packet_url(live_server, packet))
    pressed += keys(page, "c", "4", "Enter")
    page.wait_for_url(f"{live_server.url}/review/")
    assert pressed == 4
    expect(page.locator(".messages")).to_contain_text(
        "Type changed from Pathology Report to Radiology Report."
    )
    expect(page.locator(".messages")).to_contain_text("Radiology Report template")

    truth = GroundTruth.objects.get()
    assert (truth.source, truth.dominant_type) == ("SME_CORRECTED", "radiology")
    segments = [
        (s["start_page"], s["end_page"], s["dominant_type"])
        for s in truth.classification["segments"]
    ]
    assert segments == [(1, 1, "radiology")]  # the segment followed the chosen type
    shares = {m["type"]: m["overall_share"] for m in truth.classification["document_mixture"]}
    assert shares == {
        "clinical_note": 0.0,
        "pathology": 0.0,
        "genomic": 0.0,
        "radiology": 1.0,
        "other": 0.0,
    }
    [row] = export_rows()
    assert row["reason"] == "Type changed from Pathology Report to Radiology Report."
    [fields] = row["fields"]
    radiology = find_template(load_packs(("clinical",)), "radiology")
    assert fields["doc_type"] == "radiology" and fields["re_extracted"] is True
    assert set(fields["fields"]) == {f.name for f in radiology.fields}


def test_s_skips_a_packet_behind_the_reviewers_other_work(page, live_server, clinicians):
    first = make_packet(sha="1")  # BLOCKER, oldest: first in the queue
    second = make_packet(sha="2")
    third = make_packet(
        sha="3",
        fabricate=False,
        pages=["CT CHEST\n\nFINDINGS\n\nNo nodules are seen in either lung."],
    )
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(f"{live_server.url}/review/")
    keys(page, "n")
    page.wait_for_url(packet_url(live_server, first))

    keys(page, "s")  # released, put behind rita's other work; the next packet opens
    page.wait_for_url(packet_url(live_server, second))
    expect(page.locator(".messages")).to_contain_text("Skipped")
    first.refresh_from_db()
    assert (first.status, first.locked_by) == ("pending", None)
    assert ReviewSkip.objects.filter(packet=first, reviewer=clinicians["rita"]).exists()
    assert AuditEvent.objects.filter(action="skipped", object_id=str(first.pk)).count() == 1

    keys(page, "n")  # next never reopens the packet just left: the third comes before the first
    page.wait_for_url(packet_url(live_server, third))
    keys(page, "v")
    page.wait_for_url(packet_url(live_server, second))  # second was given back by "n"
    keys(page, "v")
    page.wait_for_url(packet_url(live_server, first))  # the skipped one comes last
    assert GroundTruth.objects.count() == 2


def test_u_undoes_the_last_decision_as_a_new_version_and_it_can_be_decided_again(
    page, live_server, clinicians
):
    packet = pdf_packet(RADIOLOGY_REPORT, label="radiology", name="ct.pdf")
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(packet_url(live_server, packet))
    keys(page, "v")  # a stray V
    page.wait_for_url(f"{live_server.url}/review/")
    assert GroundTruth.objects.get().source == "SME_VALIDATED"

    keys(page, "u")
    page.wait_for_url(packet_url(live_server, packet))
    expect(page.locator(".messages")).to_contain_text("Undone")
    expect(page.locator("#packet-status")).to_contain_text("Locked to you")
    versions = list(GroundTruth.objects.order_by("version").values_list("version", "source"))
    assert versions == [(1, "SME_VALIDATED"), (2, "WITHDRAWN")]
    review = Review.objects.get()
    assert review.withdrawn_how == "undone" and review.withdrawn_by == clinicians["rita"]
    assert AuditEvent.objects.filter(action="undone", object_id=str(packet.pk)).count() == 1
    assert export_rows() == []  # a withdrawn decision is no ground truth

    keys(page, "c", "5", "Enter")
    page.wait_for_url(f"{live_server.url}/review/")
    [row] = export_rows()
    assert (row["version"], row["source"], row["dominant_type"]) == (3, "SME_CORRECTED", "other")
    assert len(export_rows(all_versions=True)) == 3


def test_undo_is_refused_after_five_minutes(page, live_server, clinicians):
    packet = make_packet()
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(packet_url(live_server, packet))
    keys(page, "v")
    page.wait_for_url(f"{live_server.url}/review/")
    Review.objects.update(finished_at=timezone.now() - timedelta(minutes=6))
    page.goto(f"{live_server.url}/review/")
    keys(page, "u")
    expect(page.locator(".messages")).to_contain_text("Nothing to undo")
    assert GroundTruth.objects.count() == 1


def test_a_two_way_bundle_split_takes_three_actions(page, live_server, clinicians, screenshot):
    """Pages 1-3 pathology, 4-7 genomic, classified as one pathology report: click the page
    where the genomic report starts, press its type's digit, press Enter."""
    packet = pdf_packet(PATHOLOGY_REPORT + GENOMIC_REPORT, label="pathology", name="bundle.pdf")
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(packet_url(live_server, packet))

    page.get_by_role("button", name="New document from page 4").click()
    actions = 1 + keys(page, "3")
    expect(page.locator("#correction-preview")).to_contain_text("Split pages 1-7")
    expect(page.locator("#correction-preview")).to_contain_text("extracted again")
    screenshot("review-packet-split-preview")
    actions += keys(page, "Enter")
    page.wait_for_url(f"{live_server.url}/review/")
    assert actions <= 6

    truth = GroundTruth.objects.get()
    segments = [
        (s["start_page"], s["end_page"], s["dominant_type"])
        for s in truth.classification["segments"]
    ]
    assert segments == [(1, 3, "pathology"), (4, 7, "genomic")]
    shares = {m["type"]: m["overall_share"] for m in truth.classification["document_mixture"]}
    assert (shares["pathology"], shares["genomic"]) == (0.4286, 0.5714)  # by page counts
    assert truth.dominant_type == "genomic"  # the larger share
    [row] = export_rows()
    assert row["reason"].startswith(
        "Split pages 1-7 (Pathology Report) into 1-3 Pathology Report, 4-7 Genomic Report"
    )
    assert [(f["doc_type"], f["pages"]) for f in row["fields"]] == [
        ("pathology", [1, 3]),
        ("genomic", [4, 7]),
    ]


def test_a_decided_packet_shows_who_decided_and_an_admin_reopens_it(
    browser, live_server, clinicians
):
    packet = make_packet()
    rita = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    log_in(rita, live_server, "rita", PASSWORD)
    rita.goto(packet_url(live_server, packet))
    keys(rita, "v")
    rita.wait_for_url(f"{live_server.url}/review/")

    ada = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    log_in(ada, live_server, "ada", PASSWORD)
    ada.goto(packet_url(live_server, packet))
    expect(ada.locator("#packet-status")).to_contain_text("Validated by Rita")
    expect(ada.locator("#decided")).to_contain_text("Ground truth version 1")
    ada.get_by_role("button", name="Reopen").click()
    ada.wait_for_url(f"{live_server.url}/review/")
    expect(ada.locator(".messages")).to_contain_text("Reopened")
    packet.refresh_from_db()
    assert packet.status == "pending"
    assert AuditEvent.objects.filter(action="reopened", username="ada").count() == 1
    assert GroundTruth.objects.latest("version").source == "WITHDRAWN"


def test_a_second_reviewer_reads_a_locked_packet_with_every_control_disabled(
    browser, live_server, clinicians
):
    packet = pdf_packet(RADIOLOGY_REPORT, label="pathology", name="ct.pdf")
    url = packet_url(live_server, packet)
    first = browser.new_context().new_page()
    log_in(first, live_server, "rita", PASSWORD)
    first.goto(url)
    expect(first.locator("#packet-status")).to_contain_text("Locked to you")

    second = browser.new_context().new_page()
    log_in(second, live_server, "omar", PASSWORD)
    second.goto(url)
    status = second.locator("#packet-status")
    expect(status).to_contain_text("Rita is reviewing this packet")
    expect(second.locator(".message")).to_have_count(1)  # one message, not two
    for name in ("Validate", "Save correction", "Skip"):
        expect(second.get_by_role("button", name=name)).to_be_disabled()
    expect(second.locator(".seg-type").first).to_be_disabled()
    expect(second.locator(".type-key").first).to_be_disabled()
    keys(second, "v", "c", "4", "Enter", "s")  # the shortcuts do nothing either
    assert not Review.objects.exists() and not ReviewSkip.objects.exists()


def test_a_stale_tab_shows_one_message_after_someone_else_decided(browser, live_server, clinicians):
    packet = make_packet()
    url = packet_url(live_server, packet)
    stale = browser.new_context().new_page()
    log_in(stale, live_server, "rita", PASSWORD)
    stale.goto(url)
    ReviewPacket.objects.filter(pk=packet.pk).update(lock_expires_at=timezone.now())
    other = browser.new_context().new_page()
    log_in(other, live_server, "omar", PASSWORD)
    other.goto(url)
    keys(other, "v")
    other.wait_for_url(f"{live_server.url}/review/")

    keys(stale, "v")  # rita's tab still shows the packet open
    expect(stale.locator("#packet-status")).to_have_text("This packet has already been decided.")
    expect(stale.locator(".ws-head .message")).to_have_count(1)
    assert Review.objects.get().reviewer.username == "omar"
