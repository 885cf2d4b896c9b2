"""A clinician logs in, uploads PDFs and watches them reach "Ready" in a real browser."""

from __future__ import annotations

import re
import threading

import pytest
from playwright.sync_api import expect

from benchmarks.pdfgen import text_pdf
from documents.models import Document
from tests.conftest import PASSWORD, run_burst_worker
from tests.e2e.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REPORT = [["RADIOLOGY REPORT", "FINDINGS", "No focal consolidation.", "IMPRESSION", "Normal."]]


def test_upload_a_pdf_and_see_it_ready(page, live_server, reviewer, tmp_path, screenshot):
    pdf_path = tmp_path / "chest-xray.pdf"
    pdf_path.write_bytes(text_pdf(REPORT))

    csp: list[str] = []
    page.on(
        "console",
        lambda m: csp.append(m.text) if "Content Security Policy" in m.text else None,
    )
    log_in(page, live_server, reviewer.username, PASSWORD)
    page.get_by_role("link", name="Upload documents").click()
    page.get_by_label("Documents").set_input_files(str(pdf_path))
    held = []  # hold the upload at the server's door to see the page while it is under way
    page.route("**/documents/upload/", lambda route: held.append(route))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#upload-button")).to_be_disabled()
    expect(page.locator("#upload-button")).to_have_text("Uploading…")
    expect(page.locator("#upload-progress")).to_be_visible()
    screenshot("upload-in-progress")
    held[0].continue_()
    page.unroute("**/documents/upload/")

    page.wait_for_url(f"{live_server.url}/documents/")
    expect(page.get_by_role("status")).to_contain_text("Uploaded 1 file(s): “chest-xray.pdf”.")
    row = page.locator("tr", has_text="chest-xray.pdf")
    expect(row.locator("[data-status]")).to_have_attribute("data-status", "ready")
    expect(row.locator("[data-status]")).not_to_have_text("Ready")  # read is not an outcome
    screenshot("documents-list")

    row.get_by_role("link", name="chest-xray.pdf").click()
    expect(page.locator(".page-frame img").first).to_be_visible()  # the page, in the viewer
    page.get_by_role("button", name="Text").click()
    expect(page.locator(".page-text", has_text="No focal consolidation.")).to_be_visible()
    assert csp == []  # nothing blocked, after the upload either
    screenshot("document-detail")


def test_a_refused_upload_shows_the_reason_on_the_form(page, live_server, reviewer, tmp_path):
    bad = tmp_path / "photo.pdf"
    bad.write_bytes(b"\xff\xd8\xff\xe0 JPEG data, not a PDF")

    log_in(page, live_server, reviewer.username, PASSWORD)
    page.goto(f"{live_server.url}/documents/upload/")
    page.get_by_label("Documents").set_input_files(str(bad))
    page.get_by_role("button", name="Upload").click()

    expect(page.get_by_role("alert")).to_contain_text(
        "“photo.pdf” has a .pdf name but is not a PDF file. Upload the original PDF."
    )
    assert Document.objects.count() == 0


def test_the_list_refreshes_itself_while_a_worker_ingests(
    page, live_server, reviewer, tmp_path, redis_url, screenshot
):
    pdf_path = tmp_path / "queued.pdf"
    pdf_path.write_bytes(text_pdf(REPORT * 2))

    log_in(page, live_server, reviewer.username, PASSWORD)
    page.goto(f"{live_server.url}/documents/upload/")
    page.get_by_label("Documents").set_input_files(str(pdf_path))
    page.get_by_role("button", name="Upload").click()
    page.wait_for_url(f"{live_server.url}/documents/")

    badge = page.locator("tr", has_text="queued.pdf").locator("[data-status]")
    expect(badge).to_have_attribute("data-status", "uploaded")
    screenshot("documents-list-working")

    worker = threading.Thread(target=run_burst_worker, args=(redis_url,))
    worker.start()
    # No reload: htmx polls the table every 2 s while work is running.
    expect(badge).to_have_attribute("data-status", "ready", timeout=30_000)
    worker.join(timeout=60)
    # The run may still be working when the document is read: polling stops at the next refresh.
    expect(page.locator("#document-table")).not_to_have_attribute(
        "hx-trigger", re.compile(".*"), timeout=10_000
    )
