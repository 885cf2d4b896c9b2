"""The review workspace's rules, below the browser: corrections stay consistent and carry their
fields, reason and note into the export; skip, next, undo and reopen; the queue's filters and
progress; audit names; constant queries."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from engine.fields.library import find_template, load_packs
from engine.schemas import ClassificationOutput, DocType
from review import selectors
from review.corrections import Correction, corrected_output, correction_build, correction_reason
from review.models import AuditEvent, GroundTruth, Review, ReviewPacket, ReviewSkip
from review.services import audit_log, ground_truth
from tests.review.conftest import (
    GENOMIC_REPORT,
    PATHOLOGY_REPORT,
    RADIOLOGY_REPORT,
    make_packet,
    pdf_packet,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("page_panel")]


def login(user):
    client = Client()
    client.force_login(user)
    return client


def opened(user, packet):
    client = login(user)
    assert client.get(reverse("review:packet", args=[packet.pk])).status_code == 200
    return client


def export(client, **params):
    response = client.get(reverse("review:export"), {"format": "jsonl", **params})
    assert response.status_code == 200
    return [json.loads(line) for line in response.getvalue().decode().splitlines()]


def template_fields(doc_type):
    template = find_template(load_packs(("clinical",)), doc_type)
    assert template is not None
    return {f.name for f in template.fields}


# -- corrections: fields, reason, note ------------------------------------------------------------


def test_a_type_correction_exports_the_fields_of_the_new_type_and_the_reason(reviewer, admin_user):
    packet = pdf_packet(RADIOLOGY_REPORT, label="pathology", name="ct.pdf")
    assert {f for e in packet.run.extractions.all() for f in e.fields} == template_fields(
        "pathology"
    )
    client = opened(reviewer, packet)
    response = client.post(
        reverse("review:correct", args=[packet.pk]),
        {"start": ["1"], "type": ["radiology"], "notes": "A CT report."},
    )
    assert response.status_code == 302
    [row] = export(login(admin_user))
    assert row["dominant_type"] == "radiology"
    assert row["reason"] == "Type changed from Pathology Report to Radiology Report."
    assert (row["note"], row["reviewer"]) == ("A CT report.", "rita")
    [record] = row["fields"]
    assert (record["doc_type"], record["pages"], record["re_extracted"]) == (
        "radiology",
        [1, 1],
        True,
    )
    assert set(record["fields"]) == template_fields("radiology")
    impression = record["fields"]["impression"]
    assert impression["status"] == "found" and "metastatic" in impression["value"]


def test_segments_left_as_they_were_keep_the_runs_fields_and_the_reviewers_field_edits(
    reviewer,
):
    packet = pdf_packet(PATHOLOGY_REPORT, label="pathology", name="path.pdf")
    client = opened(reviewer, packet)
    client.post(reverse("review:fields", args=[packet.pk]), {"field-0:histology": "IDC"})
    response = client.post(
        reverse("review:correct", args=[packet.pk]),
        {"start": ["1"], "type": ["pathology"], "present": ["genomic"]},
    )
    assert response.status_code == 302
    truth = GroundTruth.objects.get()
    assert truth.reason == "Also present: Genomic Report."
    [record] = truth.fields
    assert "re_extracted" not in record
    assert record["fields"]["histology"]["value"] == "IDC"
    assert record["fields"]["histology"]["corrected"] is True


def test_the_preview_shows_the_reason_and_fields_and_saving_reuses_them(reviewer, monkeypatch):
    from review import corrections

    calls = []
    real = corrections.extract_segment
    monkeypatch.setattr(
        corrections, "extract_segment", lambda **kw: calls.append(kw["doc_type"]) or real(**kw)
    )
    packet = pdf_packet(PATHOLOGY_REPORT + GENOMIC_REPORT, label="pathology", name="b.pdf")
    client = opened(reviewer, packet)
    split = {"start": ["1", "4"], "type": ["pathology", "genomic"]}
    preview = client.post(reverse("review:preview", args=[packet.pk]), split)
    body = preview.content.decode()
    assert preview.status_code == 200 and "<html" not in body
    assert "Split pages 1-7 (Pathology Report) into 1-3 Pathology Report, 4-7 Genomic" in body
    assert "MSI status" in body and "extracted again" in body
    assert calls == ["pathology", "genomic"]
    assert client.post(reverse("review:correct", args=[packet.pk]), split).status_code == 302
    assert calls == ["pathology", "genomic"]  # saved without extracting again
    assert [r["doc_type"] for r in GroundTruth.objects.get().fields] == ["pathology", "genomic"]


def test_only_the_lock_holder_may_preview(reviewer, other_reviewer):
    packet = make_packet()
    opened(reviewer, packet)
    response = login(other_reviewer).post(
        reverse("review:preview", args=[packet.pk]), {"start": ["1"], "type": ["other"]}
    )
    assert response.status_code == 409


def test_the_reason_says_what_changed():
    output = ClassificationOutput.model_validate(make_packet().classification)  # 1-2 pathology
    merged = correction_build(segments=[(1, 2, DocType.OTHER)])
    assert correction_reason(output, merged) == "Type changed from Pathology Report to Other."
    split = correction_build(segments=[(1, 1, DocType.OTHER), (2, 2, DocType.PATHOLOGY)])
    assert correction_reason(output, split) == (
        "Split pages 1-2 (Pathology Report) into 1-1 Other, 2-2 Pathology Report; "
        "Pages 1-1 are Other, not Pathology Report; "
        "Dominant type changed from Pathology Report to Other."  # a tie goes to the first
    )
    shares = correction_build(segments=[(1, 2, DocType.PATHOLOGY)], shares={DocType.PATHOLOGY: 1.0})
    assert correction_reason(output, shares) == ""  # the same shares: nothing changed
    merged_back = Correction(
        segments=((1, 2, DocType.PATHOLOGY),),
        mixture={t: 1.0 if t == DocType.PATHOLOGY else 0.0 for t in DocType},
        dominant_type=DocType.PATHOLOGY,
    )
    two = ClassificationOutput.model_validate(
        corrected_output(
            correction_build(segments=[(1, 1, DocType.PATHOLOGY), (2, 2, DocType.PATHOLOGY)])
        ).model_dump(mode="json")
    )
    assert correction_reason(two, merged_back) == (
        "Merged 1-1 Pathology Report, 2-2 Pathology Report into 1-2 Pathology Report."
    )


# -- skip and next --------------------------------------------------------------------------------


def test_skip_releases_the_packet_and_next_brings_it_after_the_reviewers_other_work(
    reviewer, other_reviewer
):
    first, second = make_packet(sha="1"), make_packet(sha="2")
    client = opened(reviewer, first)
    response = client.post(reverse("review:skip", args=[first.pk]))
    assert response.url == reverse("review:packet", args=[second.pk])
    first.refresh_from_db()
    assert (first.status, first.locked_by) == ("pending", None)
    assert selectors.next_packet_for(reviewer) == second
    assert selectors.next_packet_for(other_reviewer) == first  # only rita skipped it
    ReviewSkip.objects.filter(packet=first).update(skipped_at=timezone.now())
    client.post(reverse("review:skip", args=[first.pk]))  # skipping twice is one record
    assert ReviewSkip.objects.count() == 1
    assert AuditEvent.objects.filter(action="skipped").count() == 2


def test_next_from_a_packet_releases_it_and_opens_another(reviewer):
    first, second = make_packet(sha="1"), make_packet(sha="2")
    client = opened(reviewer, first)
    response = client.get(reverse("review:next"), {"from": first.pk})
    assert response.url == reverse("review:packet", args=[second.pk])
    first.refresh_from_db()
    assert (first.status, first.locked_by) == ("pending", None)
    client.get(response.url)
    alone = client.get(reverse("review:next"), {"from": second.pk})
    assert alone.url == reverse("review:packet", args=[first.pk])
    client.get(alone.url)
    nothing_else = client.get(reverse("review:next"), {"from": first.pk}, follow=True)
    assert nothing_else.redirect_chain[-1][0] == reverse("review:packet", args=[second.pk])


def test_next_says_when_nothing_else_is_waiting(reviewer):
    only = make_packet()
    client = opened(reviewer, only)
    response = client.get(reverse("review:next"), {"from": only.pk}, follow=True)
    assert response.redirect_chain == [(reverse("review:queue"), 302)]
    assert "No other packet is waiting" in response.content.decode()


def test_skip_refuses_a_decided_packet_and_get(reviewer):
    packet = make_packet()
    client = opened(reviewer, packet)
    assert client.get(reverse("review:skip", args=[packet.pk])).status_code == 405
    client.post(reverse("review:validate", args=[packet.pk]))
    assert client.post(reverse("review:skip", args=[packet.pk])).status_code == 409


# -- undo and reopen ------------------------------------------------------------------------------


def test_undo_withdraws_the_last_decision_as_a_new_version_and_reopens_the_packet(reviewer):
    packet = make_packet()
    client = opened(reviewer, packet)
    client.post(reverse("review:validate", args=[packet.pk]))
    response = client.post(reverse("review:undo"))
    assert response.url == reverse("review:packet", args=[packet.pk])
    decided, withdrawn = GroundTruth.objects.order_by("version")
    assert (withdrawn.version, withdrawn.source, withdrawn.supersedes) == (2, "WITHDRAWN", decided)
    assert withdrawn.reason == "Version 1 undone by Rita; the packet is open again."
    packet.refresh_from_db()
    assert (packet.status, packet.locked_by) == ("in_review", reviewer)
    event = AuditEvent.objects.get(action="undone")
    assert event.detail["withdrawn_version"] == 1 and event.object_id == str(packet.pk)
    # Decided again: a third version; the withdrawn decision stays on record.
    client.post(reverse("review:validate", args=[packet.pk]))
    assert GroundTruth.objects.latest("version").version == 3
    assert Review.objects.filter(packet=packet).count() == 2
    assert Review.objects.filter(packet=packet, withdrawn_at__isnull=True).count() == 1


def test_undo_returns_to_the_version_before_the_decision_when_there_was_one(reviewer):
    packet = make_packet()
    earlier = ground_truth.ground_truth_record(
        document=packet.document,
        run=packet.run,
        source="AUTO_ACCEPTED",
        output=ClassificationOutput.model_validate(packet.classification),
    )
    client = opened(reviewer, packet)
    client.post(reverse("review:correct", args=[packet.pk]), {"start": ["1"], "type": ["other"]})
    client.post(reverse("review:undo"))
    restored = GroundTruth.objects.latest("version")
    assert (restored.version, restored.source, restored.dominant_type) == (
        3,
        "AUTO_ACCEPTED",
        "pathology",
    )
    assert restored.classification == earlier.classification
    assert restored.reason == "Version 2 undone by Rita; version 1 stands again."


def test_undo_is_only_for_the_reviewers_own_recent_decision(reviewer, other_reviewer):
    packet = make_packet()
    opened(reviewer, packet).post(reverse("review:validate", args=[packet.pk]))
    omar = login(other_reviewer)
    refused = omar.post(reverse("review:undo"), follow=True)
    assert "Nothing to undo" in refused.content.decode()
    Review.objects.update(finished_at=timezone.now() - timedelta(minutes=5, seconds=1))
    late = login(reviewer).post(reverse("review:undo"), follow=True)
    assert "Nothing to undo" in late.content.decode()
    assert GroundTruth.objects.count() == 1
    assert login(reviewer).get(reverse("review:undo")).status_code == 405


def test_admins_reopen_a_decided_packet_and_reviewers_may_not(reviewer, admin_user):
    packet = make_packet()
    opened(reviewer, packet).post(reverse("review:validate", args=[packet.pk]))
    assert login(reviewer).post(reverse("review:reopen", args=[packet.pk])).status_code == 403
    page = login(admin_user).get(reverse("review:packet", args=[packet.pk])).content.decode()
    assert "Validated by Rita" in page and 'id="reopen-button"' in page
    response = login(admin_user).post(reverse("review:reopen", args=[packet.pk]))
    assert response.url == reverse("review:queue")
    packet.refresh_from_db()
    assert (packet.status, packet.locked_by) == ("pending", None)
    assert GroundTruth.objects.latest("version").source == "WITHDRAWN"
    review = Review.objects.get()
    assert (review.withdrawn_how, review.withdrawn_by) == ("reopened", admin_user)
    assert AuditEvent.objects.filter(action="reopened", user=admin_user).count() == 1
    again = login(admin_user).post(reverse("review:reopen", args=[packet.pk]))
    assert again.status_code == 409  # nothing left to reopen


def test_a_decision_superseded_by_newer_ground_truth_cannot_be_taken_back(
    reviewer, other_reviewer, admin_user
):
    from review.models import SecondReview
    from review.services import second_review

    packet = make_packet()
    opened(reviewer, packet).post(reverse("review:validate", args=[packet.pk]))
    # The learning loop doubts the label; the second reviewer disagrees; an Admin adjudicates
    # a third answer: version 2, which no decision on this packet made.
    second_review.label_issue_recheck([(str(packet.document_id), "", "", 0.9)])
    second = SecondReview.objects.get()
    second_review.second_review_submit(
        second_id=second.pk, reviewer=other_reviewer, segments=[(1, 2, DocType.GENOMIC)]
    )
    second_review.adjudicate(
        second_id=second.pk, user=admin_user, segments=[(1, 2, DocType.RADIOLOGY)]
    )
    response = login(admin_user).post(reverse("review:reopen", args=[packet.pk]))
    assert response.status_code == 409
    assert "version 2 is newer" in response.content.decode()


# -- export ---------------------------------------------------------------------------------------


def test_a_withdrawn_decision_leaves_no_current_ground_truth_to_export(reviewer, admin_user):
    packet = make_packet()
    client = opened(reviewer, packet)
    client.post(reverse("review:validate", args=[packet.pk]))
    client.post(reverse("review:undo"))
    admin = login(admin_user)
    assert export(admin) == []
    assert selectors.current_ground_truth(packet.document) is None  # the JSON API's view too
    assert [r["source"] for r in export(admin, all_versions="on")] == [
        "SME_VALIDATED",
        "WITHDRAWN",
    ]


def test_the_export_carries_page_text_only_on_request_and_the_command_matches(
    reviewer, admin_user, tmp_path
):
    packet = make_packet()
    opened(reviewer, packet).post(reverse("review:validate", args=[packet.pk]))
    admin = login(admin_user)
    [plain] = export(admin)
    assert "pages" not in plain
    [with_text] = export(admin, with_text="on")
    assert [p["number"] for p in with_text["pages"]] == [1, 2]
    assert with_text["pages"][1]["text"].startswith("TEST REQUISITION")
    csv = admin.get(reverse("review:export"), {"format": "csv", "with_text": "on"})
    assert csv.getvalue().decode().splitlines()[0].endswith(",reason,note,pages")
    out = tmp_path / "gt.jsonl"
    call_command("export_ground_truth", "--with-text", "--out", str(out))
    page = admin.get(reverse("review:export"), {"format": "jsonl", "with_text": "on"})
    assert out.read_bytes() == page.getvalue()
    call_command("export_ground_truth", "--out", str(out))
    assert out.read_bytes() == admin.get(reverse("review:export"), {"format": "jsonl"}).getvalue()


def test_export_audit_events_name_the_file_they_produced(reviewer, admin_user):
    import hashlib

    packet = make_packet()
    opened(reviewer, packet).post(reverse("review:validate", args=[packet.pk]))
    body = login(admin_user).get(reverse("review:export"), {"format": "jsonl"}).getvalue()
    event = AuditEvent.objects.get(action="exported")
    digest = hashlib.sha256(body).hexdigest()
    assert (event.object_type, event.object_id) == ("GroundTruth", f"export:{digest[:16]}")
    assert (event.detail["records"], event.detail["sha256"], event.username) == (1, digest, "ada")
    assert not AuditEvent.objects.filter(object_type="SimpleLazyObject").exists()


def test_audit_records_name_a_lazy_request_user_by_its_model(reviewer):
    from django.utils.functional import SimpleLazyObject

    audit_log.audit_record(
        user=reviewer, action=AuditEvent.Action.LOCKED, obj=SimpleLazyObject(lambda: reviewer)
    )
    assert AuditEvent.objects.get().object_type == "User"


# -- the packet page ------------------------------------------------------------------------------


def test_a_packet_without_evidence_still_shows_the_document(reviewer):
    packet = pdf_packet(RADIOLOGY_REPORT, label="radiology", name="ct.pdf")
    ReviewPacket.objects.filter(pk=packet.pk).update(grounding=[], issues=[])
    body = opened(reviewer, packet).get(reverse("review:packet", args=[packet.pk]))
    html = body.content.decode()
    assert "The classifier gave no evidence" in html
    assert reverse("review:page_image", args=[packet.pk, 1]) in html
    assert "No evidence of thoracic metastatic disease." in html  # the text view


def test_evidence_is_placed_on_the_page_image_from_the_word_boxes(reviewer):
    packet = pdf_packet(PATHOLOGY_REPORT, label="pathology", name="p.pdf")
    response = opened(reviewer, packet).get(reverse("review:packet", args=[packet.pk]))
    evidence = response.context["evidence"]
    assert evidence and all(item["rects"] for item in evidence)
    html = response.content.decode()
    assert '<rect class="mark" data-evidence="e1"' in html  # on the image
    assert html.count('<mark class="mark" data-evidence="e1">') == 1  # once in the text
    assert html.count('id="ev-e1"') == 1  # and its context once in the list


def test_evidence_on_a_scanned_page_is_boxed_from_the_ocr_words(reviewer):
    from benchmarks.pdfgen import image_pdf

    scan = image_pdf(
        ["RADIOLOGY REPORT", "FINDINGS: The lungs are clear.", "IMPRESSION: No acute disease."]
    )
    packet = pdf_packet([], label="radiology", name="scan.pdf", data=scan, extract=False)
    assert packet.document.pages.get().extraction_method == "ocr"
    response = opened(reviewer, packet).get(reverse("review:packet", args=[packet.pk]))
    found = [e for e in response.context["evidence"] if e["found"]]
    assert found and all(e["rects"] for e in found)


def test_a_fuzzily_grounded_snippet_is_boxed_from_its_span(reviewer):
    from engine.grounding import find_snippet

    packet = pdf_packet(RADIOLOGY_REPORT, label="radiology", name="ct.pdf", extract=False)
    text = packet.document.pages.get().text
    noisy = "No evidence of thoracic metastatlc disease."  # an OCR-style slip
    match = find_snippet(noisy, text)
    assert match is not None and match.method == "fuzzy"
    entry = {
        "location": "segments[0].types.radiology.top_evidence[0]",
        "page": 1,
        "snippet": noisy,
        "found": True,
        "found_page": 1,
        "start": match.start,
        "end": match.end,
        "score": match.score,
        "method": match.method,
    }
    ReviewPacket.objects.filter(pk=packet.pk).update(grounding=[entry])
    response = opened(reviewer, packet).get(reverse("review:packet", args=[packet.pk]))
    [item] = response.context["evidence"]
    [rect] = item["rects"]  # one line
    assert rect["w"] > 0 and rect["h"] > 0
    assert "matched with small differences" in response.content.decode()


def test_a_snippet_cited_twice_appears_once(reviewer):
    packet = make_packet(fabricate=False)
    grounding = packet.grounding
    again = {**grounding[0], "location": "segments[0].types.genomic.top_evidence[0]"}
    ReviewPacket.objects.filter(pk=packet.pk).update(grounding=[*grounding, again])
    client = opened(reviewer, packet)
    response = client.get(reverse("review:packet", args=[packet.pk]))
    [item] = [e for e in response.context["evidence"] if e["snippet"] == grounding[0]["snippet"]]
    assert item["locations"] == [grounding[0]["location"], again["location"]]
    assert item["types"] == ["Genomic Report", "Pathology Report"]
    issues = client.get(reverse("review:packet", args=[packet.pk]), HTTP_HX_REQUEST="true")
    listing = issues.content.decode()
    assert listing.count(f'<mark data-evidence="{item["id"]}">') == 1


def test_page_images_come_full_size_and_as_thumbnails_cached_apart(reviewer, settings):
    packet = pdf_packet(RADIOLOGY_REPORT, label="radiology", name="ct.pdf")
    client = opened(reviewer, packet)
    full = client.get(reverse("review:page_image", args=[packet.pk, 1]))
    thumb = client.get(reverse("review:page_image", args=[packet.pk, 1]), {"size": "thumb"})
    full_png, thumb_png = b"".join(full.streaming_content), b"".join(thumb.streaming_content)
    assert full_png.startswith(b"\x89PNG") and len(thumb_png) < len(full_png)
    width = int.from_bytes(full_png[16:20], "big")
    assert width == round(8.5 * settings.PAGE_IMAGE_DPI)  # a letter page
    assert int.from_bytes(thumb_png[16:20], "big") < 200


def test_the_packet_page_takes_the_same_queries_for_one_page_or_seven(
    reviewer, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for pages, name in (
        (RADIOLOGY_REPORT, "one.pdf"),
        (PATHOLOGY_REPORT + GENOMIC_REPORT, "b.pdf"),
    ):
        packet = pdf_packet(pages, label="pathology", name=name)
        client = opened(reviewer, packet)
        with CaptureQueriesContext(connection) as queries:
            client.get(reverse("review:packet", args=[packet.pk]))
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


# -- the queue ------------------------------------------------------------------------------------


def test_the_queue_searches_file_names_and_filters_by_issue_code(reviewer):
    fabricated = make_packet(sha="1")
    plain = make_packet(
        sha="2",
        fabricate=False,
        pages=["CT CHEST\n\nFINDINGS\n\nNo nodules are seen in either lung."],
    )
    client = login(reviewer)
    by_code = client.get(reverse("review:queue"), {"code": "fabricated_evidence"})
    assert [p.pk for p in by_code.context["page"].packets] == [fabricated.pk]
    assert "fabricated_evidence" in by_code.context["code_choices"]
    by_name = client.get(reverse("review:queue"), {"q": "DOC-2"})
    assert [p.pk for p in by_name.context["page"].packets] == [plain.pk]


def test_the_queue_shows_the_reviewers_own_progress(reviewer, other_reviewer):
    first, second, third = (make_packet(sha=s) for s in "123")
    opened(reviewer, first).post(reverse("review:validate", args=[first.pk]))
    opened(other_reviewer, second)  # omar holds it: not waiting for rita
    response = login(reviewer).get(reverse("review:queue"))
    assert response.context["mine"] == {"decided_today": 1, "waiting": 1}
    assert 'data-count="my_decided_today">1<' in response.content.decode()
    assert response.context["undo_available"] is True
    assert third.pk  # the one waiting
