"""Ground truth a clinician can stand behind, in a real Chromium: blind checks are blind on
every page and endpoint, a decision records exactly what the panel shows, an audit that
disagrees is checked before it changes anything, and a second review covers segments."""

from __future__ import annotations

import hashlib
import json
import os
import random
import urllib.error
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import expect

from benchmarks.faults import clean_output
from documents.models import Document, Page
from engine.schemas import DISPLAY_NAMES, DocType
from reliability.services import api_token_create
from review.corrections import correction_build, segmentation_of
from review.models import AuditSample, GroundTruth, Review, ReviewPacket, SecondReview
from review.roles import ADMINS, REVIEWERS, ensure_roles
from review.services import decisions
from tests.conftest import PASSWORD
from tests.e2e.conftest import ARTIFACTS, log_in
from tests.review.conftest import PAGES, escalate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RADIOLOGY = (
    "CT CHEST WITH CONTRAST\n\nCLINICAL HISTORY\n\nPersistent cough for six weeks.\n\n"
    "FINDINGS\n\nThe lungs are clear without focal consolidation, nodule or pleural effusion. "
    "The heart size is normal.\n\nIMPRESSION\n\nNormal contrast-enhanced CT of the chest."
)


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


def as_user(browser, live_server, username, *, width=1280, height=900):
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = context.new_page()
    log_in(page, live_server, username, PASSWORD)
    return page


def document(texts: list[str], *, key: str, uploaded_by: Any = None) -> Document:
    doc = Document.objects.create(
        original_filename=f"doc-{key}.txt",
        sha256=hashlib.sha256(key.encode()).hexdigest(),
        mime_type=Document.MIME_TEXT,
        size_bytes=1,
        page_count=len(texts),
        status=Document.Status.READY,
        uploaded_by=uploaded_by,
    )
    for number, text in enumerate(texts, start=1):
        Page.objects.create(document=doc, number=number, text=text, paragraphs=text.split("\n\n"))
    return doc


def packet_for(texts: list[str], *, key: str, label: str = "pathology", **extra: Any):
    doc = document(texts, key=key, **extra)
    output = clean_output(texts, label)
    assert output is not None
    return escalate(doc, texts, output)


def api(live_server, path: str, key: str) -> tuple[int, Any]:
    request = urllib.request.Request(
        live_server.url + path, headers={"Authorization": f"Bearer {key}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            body = response.read()
            return response.status, json.loads(body) if body[:1] in (b"{", b"[") else body
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def no_trace(page, *words: str) -> None:
    """None of ``words`` anywhere in the page (its HTML: hidden elements count too)."""
    html = page.content()
    for word in words:
        assert word not in html, f"{word!r} is in {page.url}"


# -- blind checks are blind everywhere -----------------------------------------------------------


def test_a_second_reviewer_finds_no_trace_of_the_first_answer(browser, live_server, people):
    # Omar uploaded the document (his API token may read it); Rita reviews it and corrects the
    # machine's pathology to radiology; Omar is then the second reviewer.
    packet = packet_for(PAGES, key="second", uploaded_by=people["omar"])
    decisions.packet_open(packet=packet, user=people["rita"])
    decisions.review_submit(
        packet_id=packet.pk,
        reviewer=people["rita"],
        correction=correction_build(segments=[(1, 2, DocType.RADIOLOGY)]),
        notes="Rita's reasons",
    )
    second = SecondReview.objects.get()
    truth = GroundTruth.objects.get(document=packet.document)
    assert truth.state == GroundTruth.State.PROVISIONAL
    # Rita's answer: its type (the machine's own table lists every type, so the word alone
    # says nothing), that it is a correction, her name and her note.
    hidden = ("Radiology Report", "Corrected", "Rita", "rita", "Rita's reasons")

    omar = as_user(browser, live_server, "omar")
    omar.goto(f"{live_server.url}/documents/")
    expect(omar.locator("tbody")).to_contain_text(packet.document.original_filename)
    expect(omar.locator("tbody")).to_contain_text("Being checked")
    no_trace(omar, *hidden)
    omar.goto(f"{live_server.url}/documents/{packet.document.pk}/")
    expect(omar.locator("#labels-hidden")).to_be_visible()
    no_trace(omar, *hidden)
    omar.goto(f"{live_server.url}/runs/{packet.run_id}/")
    no_trace(omar, *hidden)
    omar.goto(f"{live_server.url}/review/packets/{packet.pk}/")
    no_trace(omar, *hidden)
    _, key = api_token_create(user=people["omar"], name="omar's lab system")
    status, body = api(live_server, f"/api/v1/documents/{packet.document.pk}/result/", key)
    assert (status, body["state"]) == (409, "checking")
    status, body = api(live_server, f"/api/v1/documents/{packet.document.pk}/fhir/", key)
    assert (status, body["state"]) == (409, "checking")
    status, body = api(live_server, "/api/v1/ground-truth/?format=jsonl", key)
    assert status == 200 and str(packet.document.pk).encode() not in body

    # Omar answers blind, by keys: C, 4 (Radiology Report), Enter. They agree: it is final,
    # and now he sees it.
    omar.goto(f"{live_server.url}/review/second/{second.pk}/")
    no_trace(omar, *hidden[1:])
    for pressed in ("c", "4", "Enter"):
        omar.keyboard.press(pressed)
    omar.wait_for_url(f"{live_server.url}/review/checks/")
    expect(omar.locator(".messages")).to_contain_text("agrees with the first answer")
    truth.refresh_from_db()
    assert truth.state == GroundTruth.State.FINAL
    omar.goto(f"{live_server.url}/documents/")
    expect(omar.locator("tbody")).to_contain_text("Radiology Report")
    status, body = api(live_server, f"/api/v1/documents/{packet.document.pk}/result/", key)
    assert status == 200, body
    assert body["type"] == "radiology"


def test_an_auditor_and_everyone_else_find_no_trace_of_the_machines_answer(
    browser, live_server, people, settings
):
    from tests.review.test_quality_checks import accept

    settings.AUDIT_SAMPLE_RATE = 1.0
    run = accept(1)
    Document.objects.filter(pk=run.document_id).update(uploaded_by=people["omar"])
    sample = AuditSample.objects.get()
    machine = ("Pathology Report", "pathology")
    _, key = api_token_create(user=people["omar"], name="omar's lab system")
    for name in ("rita", "omar"):
        page = as_user(browser, live_server, name)
        page.goto(f"{live_server.url}/documents/")
        expect(page.locator("tbody")).to_contain_text("Being checked")
        no_trace(page, *machine)
        page.goto(f"{live_server.url}/documents/{run.document_id}/")
        no_trace(page, *machine)
        page.goto(f"{live_server.url}/runs/{run.pk}/")
        expect(page.locator("#labels-hidden")).to_be_visible()
        no_trace(page, *machine)
        page.goto(f"{live_server.url}/review/audits/{sample.pk}/")
        names = [page.content().count(DISPLAY_NAMES[t]) for t in DocType]
        assert len(set(names)) == 1, names  # every type offered alike, none chosen
        page.context.close()
    status, body = api(live_server, f"/api/v1/documents/{run.document_id}/result/", key)
    assert (status, body["state"]) == (409, "checking")
    # Admins see everything.
    ada = as_user(browser, live_server, "ada")
    ada.goto(f"{live_server.url}/documents/")
    expect(ada.locator("tbody")).to_contain_text("Pathology Report")


# -- a decision records exactly what the panel shows ---------------------------------------------


def test_c_2_v_never_records_the_machines_type(browser, live_server, people):
    packet = packet_for(PAGES, key="cv", label="genomic")
    assert packet.dominant_type == "genomic"
    rita = as_user(browser, live_server, "rita")
    rita.goto(f"{live_server.url}/review/packets/{packet.pk}/")
    rita.keyboard.press("c")
    rita.keyboard.press("2")
    expect(rita.locator("#will-record")).to_have_attribute("data-action", "correct")
    expect(rita.locator("#will-record")).to_contain_text("Pathology Report")
    rita.keyboard.press("v")
    expect(rita.locator("#packet-status")).to_contain_text("Nothing was recorded")
    assert not Review.objects.exists() and not GroundTruth.objects.exists()
    # The validation is refused by the server too, whatever sends it.
    rita.locator("#validate-button").click()
    rita.wait_for_load_state()
    expect(rita.locator("#packet-status")).to_contain_text("Nothing was recorded")
    assert not GroundTruth.objects.exists()
    rita.keyboard.press("c")
    rita.keyboard.press("2")
    rita.keyboard.press("Enter")
    rita.wait_for_url(f"{live_server.url}/review/")
    expect(rita.locator(".messages")).to_contain_text("as Pathology Report, corrected by you")
    truth = GroundTruth.objects.get()
    assert (truth.source, truth.dominant_type) == ("SME_CORRECTED", "pathology")


# -- an audit that disagrees is a correction like any other --------------------------------------


def test_an_audit_disagreement_goes_to_a_second_review_and_the_export_marks_it_provisional(
    browser, live_server, people, settings
):
    from review.exports import ExportFilter, export_bytes
    from review.selectors import ground_truth_selection
    from tests.review.test_quality_checks import accept

    settings.AUDIT_SAMPLE_RATE = 1.0
    run = accept(1)
    sample = AuditSample.objects.get()

    def exported() -> dict[str, Any]:
        body = export_bytes(
            ground_truth_selection(), fmt="jsonl", export_filter=ExportFilter(), site_url="x"
        )
        [row] = [json.loads(line) for line in body.decode().splitlines()]
        return row

    assert exported()["state"] == "provisional"  # drawn for an audit: not settled yet
    rita = as_user(browser, live_server, "rita")
    rita.goto(f"{live_server.url}/review/checks/")
    rita.locator(f"[data-audit='{sample.pk}'] a").click()
    rita.wait_for_load_state()
    for key in ("c", "4", "Enter"):  # Radiology Report: the machine said pathology
        rita.keyboard.press(key)
    expect(rita.locator(".messages")).to_contain_text("second review checks it")
    second = SecondReview.objects.get()
    assert (second.kind, second.first_type) == ("audit", "radiology")
    row = exported()
    assert (row["state"], row["dominant_type"], row["source"]) == (
        "provisional",
        "pathology",
        "AUTO_ACCEPTED",
    )
    omar = as_user(browser, live_server, "omar")
    omar.goto(f"{live_server.url}/review/checks/")
    omar.locator(f"[data-second='{second.pk}'] a").click()
    omar.wait_for_load_state()
    no_trace(omar, "Pathology Report (", "Radiology Report (", "Rita")
    for key in ("c", "4", "Enter"):
        omar.keyboard.press(key)
    expect(omar.locator(".messages")).to_contain_text("agrees with the first answer")
    row = exported()
    assert (row["state"], row["dominant_type"], row["source"], row["reviewer"]) == (
        "final",
        "radiology",
        "SME_CORRECTED",
        "rita",
    )
    assert run.document.ground_truth.count() == 2


# -- a second review covers segments -------------------------------------------------------------


def test_a_three_way_split_second_reviewed_with_one_boundary_moved_goes_to_adjudication(
    browser, live_server, people
):
    texts = [PAGES[0], RADIOLOGY, RADIOLOGY, *[PAGES[0]] * 4]
    packet = packet_for(texts, key="bundle")
    decisions.packet_open(packet=packet, user=people["rita"])
    decisions.review_submit(
        packet_id=packet.pk,
        reviewer=people["rita"],
        correction=correction_build(
            segments=[
                (1, 1, DocType.PATHOLOGY),
                (2, 3, DocType.RADIOLOGY),
                (4, 7, DocType.PATHOLOGY),
            ]
        ),
        notes="",
    )
    second = SecondReview.objects.get()
    omar = as_user(browser, live_server, "omar")
    omar.goto(f"{live_server.url}/review/second/{second.pk}/")
    # Blind, from nothing: one document with no type. Omar cuts at pages 2 and 5 (one page
    # later than Rita), gives the types, and records.
    omar.locator("[data-split='2']").click()
    omar.locator("[data-split='5']").click()
    rows = omar.locator("#segment-rows .seg-type")
    expect(rows).to_have_count(3)
    for index, value in enumerate(("pathology", "radiology", "pathology")):
        rows.nth(index).select_option(value)
    expect(omar.locator("#will-record")).to_contain_text("pages 2\u20134 Radiology Report")
    omar.locator("#correct-button").click()
    expect(omar.locator(".messages")).to_contain_text("disagrees with the first answer")
    second.refresh_from_db()
    assert second.status == SecondReview.Status.ADJUDICATION
    assert second.second_segments == [[1, 1, "pathology"], [2, 4, "radiology"], [5, 7, "pathology"]]

    ada = as_user(browser, live_server, "ada")
    ada.goto(f"{live_server.url}/review/checks/")
    ada.locator(f"[data-adjudication='{second.pk}'] a").click()
    ada.wait_for_load_state()
    answers = ada.locator("#answers [data-answer-index]")
    expect(answers).to_have_count(2)  # side by side
    expect(answers.nth(0)).to_contain_text("pages 2\u20133 Radiology Report")
    expect(answers.nth(1)).to_contain_text("pages 2\u20134 Radiology Report")
    ARTIFACTS.mkdir(exist_ok=True)
    ada.screenshot(path=str(ARTIFACTS / "adjudication-1280.png"))
    ada.keyboard.press("1")  # take Rita's
    ada.keyboard.press("Enter")
    expect(ada.locator(".messages")).to_contain_text("Adjudicated")
    second.refresh_from_db()
    truth = GroundTruth.objects.filter(document=packet.document).order_by("-version").first()
    assert second.status == SecondReview.Status.ADJUDICATED and truth.state == "final"
    assert [list(s) for s in segmentation_of(truth.classification)] == [
        [1, 1, DocType.PATHOLOGY],
        [2, 3, DocType.RADIOLOGY],
        [4, 7, DocType.PATHOLOGY],
    ]


# -- property: whatever keys a clinician presses -------------------------------------------------

KEYS = [
    *["v"] * 3,
    *["c"] * 3,
    "1",
    "2",
    "3",
    "4",
    "5",
    *["Enter"] * 3,
    "s",
    "u",
    "n",
    "j",
    "k",
    "Escape",
    "Tab",
    "r",
    "b",
    "x",
    "q",
    "a",
    "z",
]
# How long a key may take to send the page request it sends (seconds): saving keys longest,
# so that a decision is never counted against the next key.
PATIENCE = {"v": 0.6, "Enter": 0.6, "s": 0.3, "u": 0.3, "n": 0.3}
# How many random sequences: 16 in CI (about a minute: each waits for the page to be read
# before its keys act); the nightly run (scripts/test.sh --long) sets KEY_SEQUENCES=300.
SEQUENCES = int(os.environ.get("KEY_SEQUENCES", "16"))


def test_random_key_sequences_record_exactly_what_the_panel_showed(
    browser, live_server, people, settings
):
    settings.SECOND_REVIEW_ON_CORRECTION = False  # decisions stay visible to their decider
    texts = {
        "pathology": PAGES,
        "radiology": [RADIOLOGY],
        "bundle": [PAGES[0], RADIOLOGY, PAGES[1]],
    }
    for n in range(24):
        kind = ("pathology", "radiology", "bundle")[n % 3]
        label = "radiology" if kind == "radiology" else "pathology"
        packet_for(texts[kind], key=f"p{n}", label=label)
    rita = as_user(browser, live_server, "rita")
    rng = random.Random(23)

    documents: list[Any] = []
    loads: list[Any] = []
    rita.on(
        "request",
        lambda r: (
            documents.append(r)
            if r.resource_type == "document" and r.frame == rita.main_frame
            else None
        ),
    )
    rita.on("load", lambda page: loads.append(page))

    def settle(requests_before: int, loads_before: int, *, patience: float) -> None:
        """When the key sent a page request (a form, a link), wait until that page loaded.
        A key that may send one is given ``patience`` seconds to do so (the request reaches
        this process a moment after the key)."""
        waited = 0.0
        while len(documents) == requests_before:
            if waited >= patience:
                return
            rita.wait_for_timeout(20)
            waited += 0.02
        for _ in range(500):
            if len(loads) > loads_before:
                return
            rita.wait_for_timeout(20)
        raise AssertionError("a page took more than ten seconds to load")

    def panel() -> dict[str, str] | None:
        for _ in range(5):
            try:
                return rita.evaluate(
                    "() => { const w = document.querySelector('#will-record');"
                    " return w ? {action: w.dataset.action, segments: w.dataset.segments}"
                    " : null; }"
                )
            except Exception:  # a navigation was still under way: wait for its page
                rita.wait_for_timeout(100)
                rita.wait_for_load_state()
        raise AssertionError("the page never settled")

    checked = recorded = 0
    for _ in range(SEQUENCES):
        open_packet = (
            ReviewPacket.objects.filter(status__in=ReviewPacket.OPEN_STATUSES).order_by("?").first()
        )
        if open_packet is None:  # every packet decided: reopen them all (as an admin would)
            for done in ReviewPacket.objects.filter(status=ReviewPacket.Status.COMPLETED):
                decisions.packet_reopen(packet=done, user=people["ada"])
            continue
        rita.goto(f"{live_server.url}/review/packets/{open_packet.pk}/")
        pressed: list[str] = []
        for key in rng.choices(KEYS, k=rng.randint(1, 8)):
            pressed.append(key)
            before = Review.objects.count()
            shown = panel() if key in ("v", "Enter") else None
            requests_before, loads_before = len(documents), len(loads)
            rita.keyboard.press(key)
            settle(requests_before, loads_before, patience=PATIENCE.get(key, 0.05))
            after = Review.objects.count()
            if after == before:
                continue
            # A decision was recorded: by a saving key, of exactly what the panel showed.
            assert after == before + 1 and shown is not None, (pressed, shown, rita.url)
            review = Review.objects.select_related("ground_truth").latest("finished_at")
            recorded_segments = [
                [a, b, t.value] for a, b, t in segmentation_of(review.ground_truth.classification)
            ]
            assert recorded_segments == json.loads(shown["segments"]), (key, shown, review)
            expected = {"validate": "validated", "correct": "corrected"}[shown["action"]]
            assert review.outcome == expected, (key, shown, review.outcome)
            recorded += 1
        checked += 1
    # At least one recorded decision in 15 sequences (20 in the nightly 300).
    assert checked >= SEQUENCES * 0.9 and recorded > SEQUENCES // 15, (checked, recorded)
