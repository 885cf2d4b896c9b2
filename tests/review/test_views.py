"""Access rules, partials, locking, decisions, corrections, export and metrics."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from review.models import AuditEvent, GroundTruth, Review, ReviewPacket
from tests.review.conftest import make_packet

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("page_panel")]


@pytest.fixture
def packet():
    return make_packet()


def login(user):
    client = Client()
    client.force_login(user)
    return client


PAGES = [
    "queue",
    "next",
    "packet",
    "page_image",
    "validate",
    "correct",
    "release",
    "export",
    "metrics",
]


def urls(packet):
    return {
        "queue": ("get", reverse("review:queue")),
        "next": ("get", reverse("review:next")),
        "packet": ("get", reverse("review:packet", args=[packet.pk])),
        "page_image": ("get", reverse("review:page_image", args=[packet.pk, 1])),
        "validate": ("post", reverse("review:validate", args=[packet.pk])),
        "correct": ("post", reverse("review:correct", args=[packet.pk])),
        "release": ("post", reverse("review:release", args=[packet.pk])),
        "export": ("get", reverse("review:export")),
        "metrics": ("get", reverse("review:metrics")),
    }


@pytest.mark.parametrize("name", PAGES)
def test_anonymous_visitors_are_sent_to_log_in(client, packet, name):
    method, url = urls(packet)[name]
    response = getattr(client, method)(url)
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


@pytest.mark.parametrize("name", PAGES)
def test_a_user_without_a_role_is_forbidden(outsider, packet, name):
    method, url = urls(packet)[name]
    assert getattr(login(outsider), method)(url).status_code == 403
    assert not Review.objects.exists()


@pytest.mark.parametrize("name", ["export", "metrics"])
def test_reviewers_may_not_export_or_see_metrics(reviewer, packet, name):
    method, url = urls(packet)[name]
    assert getattr(login(reviewer), method)(url).status_code == 403


@pytest.mark.parametrize("name", ["validate", "correct", "release"])
def test_post_only_actions_refuse_get(reviewer, packet, name):
    _, url = urls(packet)[name]
    assert login(reviewer).get(url).status_code == 405


def test_the_queue_lists_open_packets_blockers_first_then_oldest(reviewer):
    minor_old = make_packet(
        sha="1",
        fabricate=False,
        pages=["CT CHEST\n\nFINDINGS\n\nNo nodules are seen in either lung."],
    )
    blocker_new = make_packet(sha="2")
    blocker_old = make_packet(sha="3")
    ReviewPacket.objects.filter(pk=blocker_old.pk).update(
        created_at=timezone.now() - timedelta(days=2)
    )
    ReviewPacket.objects.filter(pk=minor_old.pk).update(
        created_at=timezone.now() - timedelta(days=3)
    )
    response = login(reviewer).get(reverse("review:queue"))
    assert response.status_code == 200
    order = [p.pk for p in response.context["page"].packets]
    assert order == [blocker_old.pk, blocker_new.pk, minor_old.pk]
    assert response.context["counts"]["pending"] == 3
    assert response.context["counts"]["blockers"] == 2


def test_queue_filters_by_type_severity_and_status(reviewer):
    make_packet(sha="1")
    radiology = make_packet(sha="2", fabricate=True, label="radiology")
    client = login(reviewer)
    by_type = client.get(reverse("review:queue"), {"type": "radiology"}).context["page"]
    assert [p.pk for p in by_type.packets] == [radiology.pk]
    none_completed = client.get(reverse("review:queue"), {"status": "completed"})
    assert list(none_completed.context["page"].packets) == []
    blockers = client.get(reverse("review:queue"), {"severity": "BLOCKER"}).context["page"]
    assert blockers.total == 2


def test_the_queue_pages_by_cursor_in_queue_order_even_when_times_tie(reviewer, settings):
    settings.REVIEW_PAGE_SIZE = 5
    packets = [make_packet(sha=f"{i}") for i in range(7)]
    # Same priority and the same instant: the id alone orders them, and no page repeats or
    # skips a packet.
    ReviewPacket.objects.update(priority=1, created_at=timezone.now() - timedelta(hours=1))
    client = login(reviewer)
    first = client.get(reverse("review:queue")).context["page"]
    assert [p.pk for p in first.packets] == [p.pk for p in packets[:5]]
    assert first.first and first.total == 7 and first.after and not first.before
    second = client.get(reverse("review:queue"), {"after": first.after}).context["page"]
    assert [p.pk for p in second.packets] == [p.pk for p in packets[5:]]
    assert not second.first and not second.after and second.before
    back = client.get(reverse("review:queue"), {"before": second.before}).context["page"]
    assert [p.pk for p in back.packets] == [p.pk for p in packets[:5]]
    html = client.get(reverse("review:queue"), {"after": first.after}).content.decode()
    assert f"before={second.before}" in html and ">First<" in html and ">Next<" not in html


def test_a_damaged_cursor_gives_the_first_page(reviewer):
    packet = make_packet(sha="1")
    client = login(reviewer)
    for cursor in ("x", "1.2", "1.99999999999999999999.3", "-1.5.5", "1.5.5.5"):
        page = client.get(reverse("review:queue"), {"after": cursor}).context["page"]
        assert [p.pk for p in page.packets] == [packet.pk] and page.first


def test_queue_counts_follow_decisions_made_in_the_app(reviewer):
    """Counts are kept between changes; a decision starts a new count at once."""
    make_packet(sha="1")
    decided = make_packet(sha="2")
    client = login(reviewer)
    partial = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "queue-counts"}
    before = client.get(reverse("review:queue"), **partial).content.decode()
    assert 'data-count="pending">2<' in before
    client.get(reverse("review:packet", args=[decided.pk]))
    opened = client.get(reverse("review:queue"), **partial).content.decode()
    assert 'data-count="pending">1<' in opened and 'data-count="in_review">1<' in opened
    response = client.post(reverse("review:validate", args=[decided.pk]))
    assert response.status_code in (200, 302)
    after = client.get(reverse("review:queue"), **partial).content.decode()
    assert 'data-count="pending">1<' in after and 'data-count="in_review">0<' in after
    assert 'data-count="completed_today">1<' in after


def test_htmx_requests_get_the_table_or_the_counts_partial(reviewer, packet):
    client = login(reviewer)
    table = client.get(
        reverse("review:queue"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="queue-table"
    ).content.decode()
    assert table.lstrip().startswith('<div id="queue-table"') and "<html" not in table
    counts = client.get(
        reverse("review:queue"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="queue-counts"
    ).content.decode()
    assert counts.lstrip().startswith('<div id="queue-counts"')
    assert 'data-count="pending">1<' in counts
    issues = client.get(reverse("review:packet", args=[packet.pk]), HTTP_HX_REQUEST="true")
    assert issues.content.decode().lstrip().startswith('<div id="packet-issues"')


def test_next_packet_opens_the_highest_priority_unlocked_one(reviewer, other_reviewer):
    first = make_packet(sha="1")
    second = make_packet(sha="2")
    login(other_reviewer).get(reverse("review:packet", args=[first.pk]))  # omar holds it
    response = login(reviewer).get(reverse("review:next"))
    assert response.url == reverse("review:packet", args=[second.pk])


def test_opening_a_packet_locks_it_and_is_audited(reviewer, packet):
    response = login(reviewer).get(reverse("review:packet", args=[packet.pk]))
    assert response.status_code == 200
    packet.refresh_from_db()
    assert packet.locked_by == reviewer and packet.status == "in_review"
    assert packet.lock_expires_at > timezone.now() + timedelta(minutes=14)
    event = AuditEvent.objects.get(action="viewed_packet")
    assert (event.user, event.object_id) == (reviewer, str(packet.pk))
    assert "melanoma" not in str(event.detail)  # no document text in the audit log


def test_the_packet_shows_blocker_issues_with_context_and_says_when_text_is_invented(
    reviewer, packet
):
    body = login(reviewer).get(reverse("review:packet", args=[packet.pk])).content.decode()
    assert body.index("BLOCKER") < body.index("MINOR") if "MINOR" in body else True
    assert "Not found in the document." in body
    assert "Claimed: “Metastatic melanoma in four of nine lymph nodes”" in body
    assert '<mark data-evidence="e1">' in body  # the grounded evidence, highlighted in context
    assert "TEST REQUISITION" in body  # page 2 as it starts, shown for the invented snippet


def test_the_context_is_two_paragraphs_before_and_three_after(reviewer, packet):
    response = login(reviewer).get(reverse("review:packet", args=[packet.pk]))
    item = next(e for e in response.context["evidence"] if e["found"])
    context = item["context"]
    assert context.highlight.startswith("Left breast, core biopsy")
    assert context.before == ["History: breast mass.", "FINAL DIAGNOSIS"]
    assert context.after == [
        "Comment: margins cannot be assessed on a core.",
        "ER positive (95%).",
        "HER2 negative.",
    ]


def test_a_second_reviewer_sees_the_lock_and_cannot_decide(reviewer, other_reviewer, packet):
    login(reviewer).get(reverse("review:packet", args=[packet.pk]))
    omar = login(other_reviewer)
    page = omar.get(reverse("review:packet", args=[packet.pk])).content.decode()
    assert "Rita is reviewing this packet" in page
    response = omar.post(reverse("review:validate", args=[packet.pk]))
    assert response.status_code == 409
    assert "Rita is reviewing this packet until" in response.content.decode()
    assert not Review.objects.exists()


def test_a_stale_lock_expires(reviewer, other_reviewer, packet):
    login(reviewer).get(reverse("review:packet", args=[packet.pk]))
    ReviewPacket.objects.filter(pk=packet.pk).update(
        lock_expires_at=timezone.now() - timedelta(seconds=1)
    )
    omar = login(other_reviewer)
    omar.get(reverse("review:packet", args=[packet.pk]))  # the expired lock is his now
    response = omar.post(reverse("review:validate", args=[packet.pk]))
    assert response.status_code == 302
    assert Review.objects.get().reviewer == other_reviewer


def test_validating_records_a_review_ground_truth_and_an_audit_event(reviewer, packet):
    client = login(reviewer)
    client.get(reverse("review:packet", args=[packet.pk]))
    response = client.post(reverse("review:validate", args=[packet.pk]), {"notes": "Agree."})
    assert response.status_code == 302
    review = Review.objects.get()
    assert (review.outcome, review.notes, review.reviewer) == ("validated", "Agree.", reviewer)
    truth = GroundTruth.objects.get()
    assert (truth.source, truth.dominant_type, truth.version) == ("SME_VALIDATED", "pathology", 1)
    assert truth.classification == packet.classification
    packet.refresh_from_db()
    assert packet.status == "completed" and packet.locked_by is None
    assert AuditEvent.objects.filter(action="decided", object_id=str(packet.pk)).count() == 1
    again = client.post(reverse("review:validate", args=[packet.pk]))
    assert again.status_code == 409 and Review.objects.count() == 1


def correction(**overrides):
    """A split of the two-page packet: page 1 pathology, page 2 other (the requisition)."""
    data = {
        "start": ["1", "2"],
        "type": ["pathology", "other"],
        "present": ["radiology"],
        "notes": "Page 2 is the requisition.",
    }
    data.update(overrides)
    return data


def test_a_correction_supersedes_earlier_ground_truth_without_overwriting(reviewer, packet):
    from engine.schemas import ClassificationOutput
    from review.services.ground_truth import ground_truth_record

    earlier = ground_truth_record(
        document=packet.document,
        run=packet.run,
        source="AUTO_ACCEPTED",
        output=ClassificationOutput.model_validate(packet.classification),
    )
    client = login(reviewer)
    client.get(reverse("review:packet", args=[packet.pk]))
    response = client.post(reverse("review:correct", args=[packet.pk]), correction())
    assert response.status_code == 302
    latest = GroundTruth.objects.get(version=2)
    assert latest.source == "SME_CORRECTED" and latest.supersedes == earlier
    segments = [
        (s["start_page"], s["end_page"], s["dominant_type"])
        for s in latest.classification["segments"]
    ]
    assert segments == [(1, 1, "pathology"), (2, 2, "other")]
    mixture = {m["type"]: m for m in latest.classification["document_mixture"]}
    assert mixture["radiology"]["presence_level"] == "MENTION_ONLY"
    # The shares follow the page counts; the dominant type follows the shares (a tie goes
    # to the first segment's type).
    assert (mixture["pathology"]["overall_share"], mixture["other"]["overall_share"]) == (0.5, 0.5)
    assert latest.dominant_type == "pathology"
    assert latest.reason == (
        "Split pages 1-2 (Pathology Report) into 1-1 Pathology Report, 2-2 Other; "
        "Also present: Radiology Report."
    )
    assert latest.note == "Page 2 is the requisition."
    earlier.refresh_from_db()
    assert earlier.classification == packet.classification  # untouched
    review = Review.objects.get()
    assert review.corrected_segments == [[1, 1, "pathology"], [2, 2, "other"]]
    assert review.reason == latest.reason


def test_a_note_is_optional_the_reason_comes_from_what_changed(reviewer, packet):
    client = login(reviewer)
    client.get(reverse("review:packet", args=[packet.pk]))
    response = client.post(
        reverse("review:correct", args=[packet.pk]), {"start": ["1"], "type": ["other"]}
    )
    assert response.status_code == 302
    truth = GroundTruth.objects.get()
    assert (truth.dominant_type, truth.note) == ("other", "")
    assert truth.reason == "Type changed from Pathology Report to Other."
    assert [m["overall_share"] for m in truth.classification["document_mixture"]] == [
        0.0,
        0.0,
        0.0,
        0.0,
        1.0,
    ]


@pytest.mark.parametrize(
    "overrides,message",
    [
        (
            {"start": ["1", "2", "2"], "type": ["pathology", "other", "genomic"]},
            "Two segments start on page 2: remove one of them.",
        ),
        ({"start": ["1", "3"]}, "Segment 2 starts on page 3, outside the document (pages 1-2)."),
        ({"type": ["histology", "other"]}, "Segment 1: choose its type."),
        ({"start": ["1", ""]}, "Segment 2: give the page it starts on."),
        (
            {"share_pathology": "0.5", "share_other": "0.7"},
            "The shares add up to 1.20; they must add up to 1.",
        ),
        # Contradictory ground truth: every page "other", the mixture all clinical note.
        (
            {"start": ["1"], "type": ["other"], "share_clinical_note": "1"},
            "The mixture gives Clinical Note a share of 1.00, but no segment is Clinical Note.",
        ),
        (
            {"start": ["1"], "type": ["other"], "share_clinical_note": "1"},
            "Other has a segment but no share in the mixture.",
        ),
        (
            {"dominant_type": "genomic"},
            "The dominant type must be the type of one of the segments.",
        ),
        (
            {"dominant_type": "other", "share_pathology": "0.6", "share_other": "0.4"},
            "The dominant type Other has a share of 0.40, less than Pathology Report (0.60).",
        ),
        (
            {"start": ["1"], "type": ["pathology"], "present": []},
            "The correction changes nothing: validate the classification instead (V).",
        ),
    ],
)
def test_an_invalid_or_contradictory_correction_is_refused_with_the_reason(
    reviewer, packet, overrides, message
):
    client = login(reviewer)
    client.get(reverse("review:packet", args=[packet.pk]))
    response = client.post(reverse("review:correct", args=[packet.pk]), correction(**overrides))
    assert response.status_code == 400
    form = response.context["correction_form"]
    errors = [*form.non_field_errors(), *form.errors.get("dominant_type", [])]
    assert message in errors, errors
    assert message.split("“")[0] in response.content.decode().replace("&#x27;", "'")
    assert not Review.objects.exists() and not GroundTruth.objects.exists()


def test_the_service_refuses_contradictory_ground_truth_whatever_the_caller(reviewer, packet):
    from engine.schemas import DocType
    from review.corrections import Correction
    from review.services import ReviewRefused
    from review.services.decisions import review_submit

    contradictory = Correction(
        segments=((1, 2, DocType.OTHER),),
        mixture={t: (1.0 if t == DocType.CLINICAL_NOTE else 0.0) for t in DocType},
        dominant_type=DocType.OTHER,
    )
    with pytest.raises(ReviewRefused, match="no segment is Clinical Note"):
        review_submit(packet_id=packet.pk, reviewer=reviewer, correction=contradictory, notes="")
    assert not GroundTruth.objects.exists()


@pytest.mark.postgres  # row locks: SQLite serialises whole transactions instead
@pytest.mark.django_db(transaction=True)
def test_two_racing_submissions_produce_exactly_one_decision(roles, django_user_model):
    from review.roles import REVIEWERS

    user = django_user_model.objects.create_user(username="rita", password="x")
    user.groups.add(roles[REVIEWERS])
    packet = make_packet()
    clients = [login(user), login(user)]
    clients[0].get(reverse("review:packet", args=[packet.pk]))
    barrier = threading.Barrier(2)
    statuses = []

    def submit(client):
        from django.db import connection

        try:
            barrier.wait()
            statuses.append(client.post(reverse("review:validate", args=[packet.pk])).status_code)
        finally:
            connection.close()  # each thread has its own connection

    threads = [threading.Thread(target=submit, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [302, 409]
    assert Review.objects.count() == 1
    assert GroundTruth.objects.count() == 1


def test_releasing_puts_the_packet_back(reviewer, packet):
    client = login(reviewer)
    client.get(reverse("review:packet", args=[packet.pk]))
    client.post(reverse("review:release", args=[packet.pk]))
    packet.refresh_from_db()
    assert (packet.status, packet.locked_by) == ("pending", None)


def test_the_page_image_is_rendered_with_highlights_and_cached(reviewer, tmp_path):
    from django.core.files.base import ContentFile

    from benchmarks.pdfgen import text_pdf

    packet = make_packet()
    pdf = text_pdf(
        [
            [
                "SURGICAL PATHOLOGY REPORT",
                "Left breast, core biopsy: invasive ductal carcinoma, Nottingham grade 2.",
            ],
            ["TEST REQUISITION"],
        ]
    )
    packet.document.file.save("doc.pdf", ContentFile(pdf))
    client = login(reviewer)
    first = client.get(reverse("review:page_image", args=[packet.pk, 1]))
    assert first.status_code == 200 and first["Content-Type"] == "image/png"
    body = b"".join(first.streaming_content)
    assert body.startswith(b"\x89PNG")
    # Drawn once at both sizes: the viewer's and the page strip's.
    cached = sorted((tmp_path / "media" / "page-images").rglob("*.png"))
    assert [p.name for p in cached] == ["1-150.png", "1-18.png"]
    mtime = cached[0].stat().st_mtime_ns
    client.get(reverse("review:page_image", args=[packet.pk, 1]))
    assert cached[0].stat().st_mtime_ns == mtime
    assert client.get(reverse("review:page_image", args=[packet.pk, 9])).status_code == 404


def test_a_page_that_cannot_be_rendered_within_the_limits_answers_422_once(reviewer, settings):
    from django.core.files.base import ContentFile

    from benchmarks.hostile import content_stream_bomb

    settings.SANDBOX_RENDER_MEMORY_MB = 64
    settings.SANDBOX_RENDER_SECONDS = 3
    packet = make_packet()
    packet.document.file.save("doc.pdf", ContentFile(content_stream_bomb(expanded_bytes=256 << 20)))
    client = login(reviewer)
    response = client.get(reverse("review:page_image", args=[packet.pk, 1]))
    assert response.status_code == 422
    assert response["Content-Type"] == "image/svg+xml"
    assert response["X-Page-Image"] in {
        f"failed:{c}" for c in ("memory", "crashed", "cpu", "timeout")
    }
    assert "Page 1 cannot be shown as an image." in response.content.decode()
    assert "Its text is in the Text view." in response.content.decode()
    # Nothing half-rendered is cached, and the failure is remembered: not drawn again.
    assert not list((settings.MEDIA_ROOT / "page-images").rglob("*.png"))
    from documents import sandbox

    drawn = len(sandbox.REPORTS)
    again = client.get(reverse("review:page_image", args=[packet.pk, 1]), {"size": "thumb"})
    assert again.status_code == 422 and again["X-Page-Image"] == response["X-Page-Image"]
    assert len(sandbox.REPORTS) == drawn


def test_admins_export_ground_truth_byte_identically_with_provenance(admin_user, reviewer):
    import json

    packet = make_packet()
    reviewer_client = login(reviewer)
    reviewer_client.get(reverse("review:packet", args=[packet.pk]))
    reviewer_client.post(reverse("review:validate", args=[packet.pk]))
    client = login(admin_user)
    params = {
        "format": "jsonl",
        "source": "SME_VALIDATED",
        "type": "pathology",
        "start": timezone.localdate().isoformat(),
    }
    first = client.get(reverse("review:export"), params)
    second = client.get(reverse("review:export"), params)
    body = first.getvalue()  # a streamed response is read once
    assert first.status_code == 200 and body == second.getvalue()
    [record] = [json.loads(line) for line in body.decode().splitlines()]
    assert record["document_sha256"] == packet.document.sha256
    assert (record["run_id"], record["model"], record["prompt_version"]) == (
        packet.run_id,
        "test",
        "test",
    )
    assert record["reviewer"] == "rita" and record["decided_at"]
    assert client.get(reverse("review:export"), {**params, "type": "radiology"}).getvalue() == b""
    csv = client.get(reverse("review:export"), {**params, "format": "csv"}).getvalue().decode()
    assert csv.splitlines()[0].startswith("document_id,document_sha256,filename,version")
    assert AuditEvent.objects.filter(action="exported").count() == 4


def test_the_export_command_writes_the_same_bytes_as_the_page(admin_user, tmp_path, reviewer):
    from django.core.management import call_command

    packet = make_packet()
    decider = login(reviewer)
    decider.get(reverse("review:packet", args=[packet.pk]))  # deciding holds the lock
    decider.post(reverse("review:validate", args=[packet.pk]))
    out = tmp_path / "gt.jsonl"
    call_command("export_ground_truth", "--format", "jsonl", "--out", str(out))
    page = login(admin_user).get(reverse("review:export"), {"format": "jsonl"})
    body = page.getvalue()
    assert out.read_bytes() == body and body


def test_the_metrics_page_shows_the_figures(admin_user, reviewer):
    packet = make_packet()
    decider = login(reviewer)
    decider.get(reverse("review:packet", args=[packet.pk]))  # deciding holds the lock
    decider.post(reverse("review:validate", args=[packet.pk]))
    response = login(admin_user).get(reverse("review:metrics"))
    assert response.status_code == 200
    body = response.content.decode()
    assert "Escalation rate" in body and "<svg" in body
    assert response.context["decided"]["escalated"] == 1
    assert response.context["agreement"][0]["rate"] == 1.0


@pytest.mark.postgres
def test_metrics_medians_are_computed_by_the_database(admin_user, reviewer, other_reviewer):
    first, second = make_packet(sha="1"), make_packet(sha="2")
    decider = login(reviewer)
    decider.get(reverse("review:packet", args=[first.pk]))  # deciding holds the lock
    decider.post(reverse("review:validate", args=[first.pk]))
    omar = login(other_reviewer)
    omar.get(reverse("review:packet", args=[second.pk]))
    assert omar.post(reverse("review:correct", args=[second.pk]), correction()).status_code == 302
    now = timezone.now()
    for packet, hours in ((first, 2), (second, 4)):
        # The decision keeps when its packet was escalated (metrics read reviews alone).
        assert Review.objects.get(packet=packet).escalated_at == packet.created_at
        Review.objects.filter(packet=packet).update(
            escalated_at=now - timedelta(hours=hours), finished_at=now
        )
    response = login(admin_user).get(reverse("review:metrics"))
    assert response.context["turnaround_hours"] == pytest.approx(3.0)
    assert [(a["reviews"], a["agreed"]) for a in response.context["agreement"]] == [(2, 1)]


def test_metrics_are_shared_for_a_minute_then_computed_again(admin_user, reviewer, settings):
    """Aggregates over every run are computed once for all admins, then again when they are
    older than METRICS_MAX_AGE_SECONDS (the page says when they were computed)."""
    from django.core.cache import cache

    first = make_packet(sha="1")
    decider = login(reviewer)
    decider.get(reverse("review:packet", args=[first.pk]))  # deciding holds the lock
    decider.post(reverse("review:validate", args=[first.pk]))
    admin = login(admin_user)
    before = admin.get(reverse("review:metrics"))
    assert before.context["decided"]["escalated"] == 1 and 'id="metrics-as-of"' in before.text
    make_packet(sha="2")
    assert admin.get(reverse("review:metrics")).context["decided"]["escalated"] == 1
    cache.delete("review:metrics")  # as when the minute is over
    assert admin.get(reverse("review:metrics")).context["decided"]["escalated"] == 2
