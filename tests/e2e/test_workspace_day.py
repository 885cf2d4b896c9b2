"""A workspace for the whole day (issue 24), in Chromium: evidence read in order, keys that act
only on what is on screen at 768 px, a document list that fits and tells the outcome, a mixed
upload answered file by file, splitting that keeps the rows in view, a remembered fit-width
zoom; and on every page touched, no Content-Security-Policy violation, no serious axe finding,
and screenshots at 1280 and 768 in test-artifacts/."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from playwright.sync_api import expect

from benchmarks.pdfgen import text_pdf
from documents.models import Document
from engine.schemas import DocType
from review.corrections import correction_build
from review.models import AuditSample, Review, SecondReview
from review.roles import ADMINS, REVIEWERS, ensure_roles
from review.services import decisions
from tests.conftest import PASSWORD, run_burst_worker
from tests.e2e.conftest import ARTIFACTS, log_in
from tests.e2e.test_workspace_layout import serious_violations
from tests.review.conftest import GENOMIC_REPORT, PATHOLOGY_REPORT, make_packet, pdf_packet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"1280": (1280, 800), "768": (768, 1024)}


@pytest.fixture
def people(django_user_model):
    roles = ensure_roles()
    users = {}
    for name, role in (("rita", REVIEWERS), ("omar", REVIEWERS), ("ada", ADMINS)):
        user = django_user_model.objects.create_user(
            username=name, password=PASSWORD, first_name=name.title(), is_staff=role == ADMINS
        )
        user.groups.add(roles[role])
        users[name] = user
    return users


def as_user(browser, live_server, username, *, size: str = "1280") -> Any:
    width, height = SIZES[size]
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.context.set_default_timeout(15_000)
    log_in(page, live_server, username, PASSWORD)
    return page


def csp_watch(page) -> list[str]:
    """Every Content-Security-Policy violation the page reports, from now on."""
    found: list[str] = []
    page.on(
        "console",
        lambda m: found.append(m.text) if "Content Security Policy" in m.text else None,
    )
    return found


def in_view(page, selector: str) -> bool:
    """Whole within the window and within every scrolling parent (what review.js checks)."""
    return page.locator(selector).first.evaluate(
        """el => {
            const r = el.getBoundingClientRect();
            if (r.top < 0 || r.bottom > window.innerHeight + 1) return false;
            for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
                const o = getComputedStyle(p).overflowY;
                if (o === "auto" || o === "scroll") {
                    const b = p.getBoundingClientRect();
                    if (r.top < b.top - 1 || r.bottom > b.bottom + 1) return false;
                }
            }
            return true;
        }"""
    )


def test_the_evidence_reads_in_order_open_for_the_current_issue_and_e_toggles_it(
    browser, live_server, people
):
    packet = make_packet()
    page = as_user(browser, live_server, "rita")
    page.goto(f"{live_server.url}/review/packets/{packet.pk}/")
    first = page.locator("li.issue").first
    evidence = first.locator(".evidence").first
    order = evidence.evaluate(
        "ev => Array.from(ev.querySelectorAll('[data-ctx]')).map(p => [p.dataset.ctx,"
        " p.textContent.trim()])"
    )
    # 2 paragraphs before, the snippet's paragraph with the snippet marked in place, 3 after.
    assert [kind for kind, _ in order] == ["before", "before", "hit", "after", "after", "after"]
    assert [text for _, text in order] == [
        "History: breast mass.",
        "FINAL DIAGNOSIS",
        "Left breast, core biopsy: invasive ductal carcinoma, Nottingham grade 2.",
        "Comment: margins cannot be assessed on a core.",
        "ER positive (95%).",
        "HER2 negative.",
    ]
    assert "invasive ductal carcinoma" in evidence.locator("[data-ctx=hit] mark").inner_text()
    around = evidence.locator("[data-ctx=before]").first
    expect(around).to_be_visible()  # open for the first (current) issue on arrival
    page.keyboard.press("e")
    expect(around).to_be_hidden()
    expect(first.locator("[data-ctx-toggle]")).to_have_attribute("aria-expanded", "false")
    page.keyboard.press("e")
    expect(around).to_be_visible()
    page.keyboard.press("j")
    page.keyboard.press("j")  # the second issue: its context opens, the first one's closes
    expect(around).to_be_hidden()
    expect(page.locator("li.issue").nth(1)).to_have_class(re.compile(r"\bctx-open\b"))


def test_at_768_v_with_the_answer_out_of_view_records_nothing_and_brings_it_into_view(
    browser, live_server, people
):
    """Chosen: record nothing and bring it into view, rather than scroll and record in one
    press: a validation must follow seeing the answer, so the second V records."""
    bundle = pdf_packet(PATHOLOGY_REPORT + GENOMIC_REPORT, label="pathology", name="bundle.pdf")
    page = as_user(browser, live_server, "rita", size="768")
    csp = csp_watch(page)
    url = f"{live_server.url}/review/packets/{bundle.pk}/"
    page.goto(url)
    assert not in_view(page, ".classified")  # one column: the panel is below the document
    page.keyboard.press("v")
    page.wait_for_timeout(300)
    assert Review.objects.count() == 0 and page.url == url
    expect(page.locator("#panel-note")).to_contain_text("Nothing was recorded")
    for part in (".classified", "#segment-rows", "#will-record", "#panel-note"):
        assert in_view(page, part), part
    page.screenshot(path=str(ARTIFACTS / "workspace-768-v-brings-the-answer.png"))
    page.keyboard.press("v")
    page.wait_for_url(lambda u: u != url)
    assert Review.objects.get().outcome == Review.Outcome.VALIDATED
    assert csp == []


def test_at_768_enter_on_a_check_page_records_nothing_until_the_answer_is_in_view(
    browser, live_server, people, settings
):
    from tests.review.conftest import PAGES
    from tests.review.test_quality_checks import accept

    settings.AUDIT_SAMPLE_RATE = 1.0
    accept(1, pages=PAGES * 3)  # six pages: the panel is below them at 768 px
    sample = AuditSample.objects.get()
    page = as_user(browser, live_server, "rita", size="768")
    url = f"{live_server.url}/review/audits/{sample.pk}/"
    page.goto(url)
    page.keyboard.press("c")
    page.keyboard.press("4")
    page.evaluate("window.scrollTo(0, 0)")  # back up to read the document again
    assert not in_view(page, "#will-record")
    page.keyboard.press("Enter")
    page.wait_for_timeout(300)
    sample.refresh_from_db()
    assert sample.status == AuditSample.Status.PENDING and page.url == url
    assert in_view(page, "#segment-rows") and in_view(page, "#will-record")
    expect(page.locator("#panel-note")).to_contain_text("Nothing was recorded")
    page.keyboard.press("Enter")
    page.wait_for_url(lambda u: u != url)
    sample.refresh_from_db()
    assert sample.status != AuditSample.Status.PENDING


def test_the_document_list_fits_at_1280_and_768_and_an_escalated_document_never_looks_done(
    browser, live_server, people
):
    escalated = make_packet(sha="e")
    for n in range(3):
        pdf_packet(
            [*PATHOLOGY_REPORT, [f"Accession S26-{n}"]],
            label="pathology",
            name=f"a-rather-long-file-name-from-the-scanner-{n}-2026-11-25.pdf",
        )
    for size in SIZES:
        page = as_user(browser, live_server, "rita", size=size)
        csp = csp_watch(page)
        page.goto(f"{live_server.url}/documents/")
        fits = page.evaluate(
            """() => [document.documentElement.scrollWidth <= document.documentElement.clientWidth,
                      ...Array.from(document.querySelectorAll('#document-table, #document-table *'))
                         .filter(e => getComputedStyle(e).overflowX !== 'visible')
                         .map(e => e.scrollWidth <= e.clientWidth)]"""
        )
        assert all(fits), (size, fits)
        row = page.locator(f"tr[data-document='{escalated.document_id}']")
        outcome = row.locator("[data-outcome]")
        expect(outcome).to_have_attribute("data-outcome", "escalated")
        expect(outcome.locator(".badge")).to_have_text("Escalated")
        expect(outcome.locator(".badge")).not_to_have_class("badge status-ready")
        color = outcome.locator(".badge").evaluate("b => getComputedStyle(b).backgroundColor")
        assert color != "rgb(217, 242, 227)"  # not the green of a finished document
        expect(row.locator("[data-type]")).to_contain_text("Pathology Report")
        expect(outcome.get_by_role("link", name=f"open packet {escalated.pk}")).to_be_visible()
        for cell in ("[data-type]", "[data-outcome]"):
            assert in_view(page, f"tr[data-document='{escalated.document_id}'] {cell}")
        page.screenshot(path=str(ARTIFACTS / f"documents-list-{size}.png"), full_page=True)
        assert csp == []


def test_a_mixed_upload_answers_200_file_by_file_and_updates_live(
    browser, live_server, people, tmp_path, redis_url
):
    good = [tmp_path / "ct-chest.pdf", tmp_path / "biopsy.pdf"]
    good[0].write_bytes(text_pdf([["CT CHEST", "FINDINGS", "No nodules."]]))
    good[1].write_bytes(text_pdf(PATHOLOGY_REPORT))
    bad = tmp_path / "photo.pdf"
    bad.write_bytes(b"\xff\xd8\xff\xe0 JPEG data, not a PDF")
    page = as_user(browser, live_server, "rita")
    csp = csp_watch(page)
    page.goto(f"{live_server.url}/documents/upload/")
    page.get_by_label("Documents").set_input_files([str(p) for p in [*good, bad]])
    with page.expect_response(lambda r: r.url.endswith("/documents/upload/")) as answer:
        page.get_by_role("button", name="Upload").click()
    assert answer.value.status == 200
    expect(page.locator("#upload-summary")).to_contain_text("2 files stored, 1 refused")
    expect(page.locator("tr[data-file='photo.pdf'] [data-result]")).to_have_text("Refused")
    expect(page.locator("tr[data-file='photo.pdf']")).to_contain_text("is not a PDF file")
    stored = page.locator("tr[data-file='ct-chest.pdf'] [data-result]")
    expect(stored).to_have_attribute("data-result", "uploaded")  # queued: no worker yet
    page.screenshot(path=str(ARTIFACTS / "upload-result-1280.png"), full_page=True)
    worker = threading.Thread(target=run_burst_worker, args=(redis_url,))
    worker.start()
    # No reload: the rows poll while a file is being read.
    expect(stored).to_have_attribute("data-result", "ready", timeout=30_000)
    expect(stored).to_have_text("Stored and read")
    worker.join(timeout=60)
    assert Document.objects.count() == 2
    assert csp == []


def test_a_split_by_key_keeps_the_rows_in_view_and_the_zoom_is_remembered(
    browser, live_server, people
):
    bundle = pdf_packet(PATHOLOGY_REPORT + GENOMIC_REPORT, label="pathology", name="bundle.pdf")
    other = pdf_packet(PATHOLOGY_REPORT, label="pathology", name="report.pdf")
    page = as_user(browser, live_server, "rita")
    page.goto(f"{live_server.url}/review/packets/{bundle.pk}/")
    page.locator("a.thumb[data-goto='4']").click()
    page.wait_for_timeout(200)
    page.keyboard.press("b")
    page.keyboard.press("3")  # Genomic Report
    expect(page.locator("#will-record")).to_contain_text("pages 4\u20137 Genomic Report")
    expect(page.locator("#correction-preview")).to_contain_text("Will record", timeout=10_000)
    page.wait_for_timeout(300)
    for part in ("#segment-rows .segment-row:nth-child(2)", "#will-record"):
        assert in_view(page, part), part
    page.keyboard.press("Escape")

    # W: fit width, the printed area filling the viewer; remembered for this reviewer.
    page.keyboard.press("w")
    expect(page.locator("#pages")).to_have_class(re.compile(r"\bfit-width\b"))
    scale = page.locator(".page-frame").first.evaluate(
        "f => parseFloat(getComputedStyle(f).getPropertyValue('--fit-scale'))"
    )
    assert scale > 1.1  # the margins are cut away
    page.goto(f"{live_server.url}/review/packets/{other.pk}/")
    expect(page.locator("#pages")).to_have_class(re.compile(r"\bfit-width\b"))
    expect(page.locator("#zoom-level")).to_have_text("Fit")
    page.keyboard.press("+")
    page.reload()
    expect(page.locator("#zoom-level")).to_have_text("125%")
    saved = page.evaluate("() => localStorage.getItem('vetted.zoom.' + document.body.dataset.user)")
    assert saved == "125" and page.evaluate("document.body.dataset.user") == str(people["rita"].pk)


def test_every_page_of_the_day_has_no_csp_violation_or_serious_axe_finding_at_both_widths(
    browser, live_server, people, settings
):
    """The packet, audit, second review, adjudication, document list and document pages (and
    the rest a reviewer passes through), screenshotted at 1280 and 768."""
    from tests.review.test_quality_checks import accept

    settings.AUDIT_SAMPLE_RATE = 1.0
    accept(1)
    sample = AuditSample.objects.get()
    open_packet = pdf_packet(
        PATHOLOGY_REPORT + GENOMIC_REPORT, label="pathology", name="bundle.pdf"
    )
    decided = pdf_packet(
        [*PATHOLOGY_REPORT, ["Accession S26-1"]], label="pathology", name="second.pdf"
    )
    decisions.packet_open(packet=decided, user=people["rita"])
    decisions.review_submit(
        packet_id=decided.pk,
        reviewer=people["rita"],
        correction=correction_build(segments=[(1, 4, DocType.RADIOLOGY)]),
        notes="",
    )
    second = SecondReview.objects.get()
    adjudicate = pdf_packet(
        [*PATHOLOGY_REPORT, ["Accession S26-2"]], label="pathology", name="adjudicate.pdf"
    )
    decisions.packet_open(packet=adjudicate, user=people["rita"])
    decisions.review_submit(
        packet_id=adjudicate.pk,
        reviewer=people["rita"],
        correction=correction_build(segments=[(1, 4, DocType.RADIOLOGY)]),
        notes="",
    )
    from review.services import second_review

    disputed = SecondReview.objects.exclude(pk=second.pk).get()
    second_review.second_review_submit(
        second_id=disputed.pk,
        reviewer=people["omar"],
        segments=[(1, 4, DocType.PATHOLOGY)],
        note="",
    )
    run = open_packet.run
    pages = {
        "packet": ("omar", f"/review/packets/{open_packet.pk}/"),
        "audit": ("omar", f"/review/audits/{sample.pk}/"),
        "second-review": ("omar", f"/review/second/{second.pk}/"),
        "adjudication": ("ada", f"/review/second/{disputed.pk}/"),
        "documents-list": ("omar", "/documents/"),
        "document": ("omar", f"/documents/{open_packet.document_id}/"),
        "upload": ("omar", "/documents/upload/"),
        "queue": ("omar", "/review/"),
        "checks": ("ada", "/review/checks/"),
        "run": ("ada", f"/runs/{run.pk}/"),
        "packet-admin": ("ada", f"/review/packets/{open_packet.pk}/"),
    }
    found: dict[str, Any] = {}
    for size in SIZES:
        sessions = {
            name: as_user(browser, live_server, name, size=size) for name in ("omar", "ada")
        }
        watched = {name: csp_watch(page) for name, page in sessions.items()}
        for name, (who, path) in pages.items():
            page = sessions[who]
            page.goto(f"{live_server.url}{path}")
            page.wait_for_load_state("networkidle")
            if size == "1280":
                found[name] = serious_violations(page)
            page.screenshot(path=str(ARTIFACTS / f"day-{name}-{size}.png"), full_page=size == "768")
        for who, violations in watched.items():
            assert violations == [], (size, who, violations)
    # The listener hears a violation when there is one (an inline style, as htmx once made).
    sessions["omar"].evaluate("document.body.setAttribute('style', 'color: red')")
    sessions["omar"].wait_for_timeout(200)
    assert watched["omar"], "the CSP listener heard nothing"
    assert {name: v for name, v in found.items() if v} == {}
