"""Retention (RETENTION_DAYS): documents past the age are deleted with their file, pages,
page images, runs and review records, on disk and in a bucket; younger ones and documents
still under work are kept; the ground truth survives de-identified and exportable; every
deletion is in the audit log."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from benchmarks.pdfgen import text_pdf
from documents import retention, services, storage
from documents.models import Document, ImageRender, Page
from engine.schemas import ClassificationOutput, DocType
from reliability.models import Attempt, Extraction, Issue, Run
from review.models import AuditEvent, GroundTruth, Review, ReviewPacket, SecondReview
from review.services import decisions, second_review
from tests.conftest import ready_document

pytestmark = pytest.mark.django_db

# A report that names its patient, in text the classifier quotes and the fields read.
NAMED_REPORT = [
    [
        "SURGICAL PATHOLOGY REPORT",
        "Patient: Jane Doe. MRN: 00451234. Date of birth: 02/03/1961.",
        "Report date: 12 March 2024",
        "Specimen: Left breast, core needle biopsy.",
        "FINAL DIAGNOSIS",
        "Invasive ductal carcinoma, Nottingham grade 2.",
    ],
    ["MICROSCOPIC DESCRIPTION", "Nests of malignant epithelial cells in a desmoplastic stroma."],
    ["IMMUNOHISTOCHEMISTRY", "Estrogen receptor: positive, 90%.", "HER2 (IHC): 1+, negative."],
]
IDENTIFYING = ["Jane Doe", "00451234", "02/03/1961", "12 March", "desmoplastic", "Invasive ductal"]
OTHER_REPORT = [
    ["CT CHEST WITH CONTRAST", "FINDINGS", "A 4 mm nodule in the right upper lobe."],
    ["IMPRESSION", "No evidence of thoracic metastatic disease."],
]


@pytest.fixture(autouse=True)
def thirty_days(settings: Any) -> Any:
    settings.RETENTION_DAYS = 30
    settings.SECOND_REVIEW_ON_CORRECTION = True
    return settings


def aged(document: Document, days: int = 40) -> Document:
    Document.objects.filter(pk=document.pk).update(created_at=timezone.now() - timedelta(days=days))
    document.refresh_from_db()
    return document


def with_status(document: Document, status: str) -> Document:
    Document.objects.filter(pk=document.pk).update(status=status)
    return document


def decided(pages: list[list[str]], reviewer: Any, *, name: str, label: str = "pathology") -> Any:
    """A real PDF, ingested, classified, its fields extracted, its page images drawn, and
    validated by a clinician with a note that names the patient (``name``'s first words)."""
    from tests.review.conftest import pdf_packet

    packet = pdf_packet(pages, label=label, name=name)
    services.page_images_render(document=packet.document)
    decisions.packet_open(packet=packet, user=reviewer)
    decisions.review_submit(
        packet_id=packet.pk,
        reviewer=reviewer,
        correction=None,
        notes=f"Spoke to {' '.join(name.split()[:2]).removesuffix('.pdf')}.",
    )
    return packet


def stored_files(document: Document, media_root: Path) -> list[str]:
    found = [p for p in Path(media_root).rglob("*") if p.is_file()]
    return sorted(str(p.relative_to(media_root)) for p in found if str(document.pk) in str(p))


def export(fmt: str = "jsonl") -> str:
    out = StringIO()
    call_command(
        "export_ground_truth", "--format", fmt, "--all-versions", stdout=out, stderr=StringIO()
    )
    return out.getvalue()


# -- what goes, what stays ---------------------------------------------------------------------


def test_documents_past_the_age_are_deleted_and_their_ground_truth_survives_de_identified(
    reviewer, media_root
):
    old = decided(NAMED_REPORT, reviewer, name="Jane Doe - pathology.pdf")
    young = decided(OTHER_REPORT, reviewer, name="John Roe - CT.pdf", label="radiology")
    document = aged(old.document)
    before = list(GroundTruth.objects.filter(document=document).order_by("version"))
    assert before and any("Jane Doe" in json.dumps([t.note, t.fields]) for t in before)
    assert stored_files(document, media_root)  # the file and 6 page images
    young_files = stored_files(young.document, media_root)

    report = retention.retention_apply()

    assert report.deleted == [str(document.pk)] and not report.more and not report.errors
    assert (report.files, report.images) == (1, 6)
    document.refresh_from_db()
    assert document.status == Document.Status.DELETED and document.deleted_at is not None
    assert (document.original_filename, document.sha256, document.file.name) == ("", None, "")
    assert (document.page_count, document.mime_type) == (3, Document.MIME_PDF)  # the tombstone
    assert stored_files(document, media_root) == []
    assert not Page.objects.filter(document=document).exists()
    assert not ImageRender.objects.filter(document=document).exists()
    assert not Run.objects.filter(document=document).exists()
    assert not Attempt.objects.filter(run__document=document).exists()
    assert not Issue.objects.filter(attempt__run__document=document).exists()
    assert not Extraction.objects.filter(document=document).exists()
    assert not ReviewPacket.objects.filter(document=document).exists()
    assert not Review.objects.filter(packet__document=document).exists()

    # Every version survives: the same labels, versions, states, sources, reviewers, dates.
    after = list(GroundTruth.objects.filter(document=document).order_by("version"))
    keep = ("pk", "version", "source", "state", "dominant_type", "reviewer_id", "created_at")
    assert [[getattr(t, k) for k in keep] for t in after] == [
        [getattr(t, k) for k in keep] for t in before
    ]
    for was, truth in zip(before, after, strict=True):
        assert truth.run_id is None and truth.note == ""
        output = ClassificationOutput.model_validate(truth.classification)
        assert [(s.start_page, s.end_page, s.dominant_type) for s in output.segments] == [
            (s["start_page"], s["end_page"], s["dominant_type"])
            for s in was.classification["segments"]
        ]
        assert all(not t.top_evidence and not t.reasoning for s in output.segments for t in s.types)
        text = json.dumps([truth.classification, truth.fields, truth.note, truth.reason])
        assert not [words for words in IDENTIFYING if words in text]
    fields = after[-1].fields[0]["fields"]
    # Codes survive, and a date's year; the rest of a value, its snippet and page go.
    assert {name: fields[name]["value"] for name in fields if fields[name]["value"]} == {
        "er_status": "positive",
        "her2_status": "negative",
        "grade": "grade 2",
        "report_date": "2024",
    }
    assert fields["histology"] == {
        "status": "found",
        "confidence": fields["histology"]["confidence"],
        "value": None,
        "removed": True,
    }

    # The younger document is untouched.
    young.refresh_from_db()
    assert young.document.status == Document.Status.READY
    assert stored_files(young.document, media_root) == young_files
    assert young.document.pages.count() == 2 and young.status == ReviewPacket.Status.COMPLETED


def test_every_deletion_is_in_the_audit_log_without_patient_data(reviewer):
    document = aged(decided(NAMED_REPORT, reviewer, name="Jane Doe.pdf").document)

    retention.retention_apply()

    event = AuditEvent.objects.get(action=AuditEvent.Action.DELETED)
    assert (event.user, event.username) == (None, "system")
    assert (event.object_type, event.object_id) == ("Document", str(document.pk))
    detail = event.detail
    assert detail["reason"] == "retention" and detail["retention_days"] == 30
    assert detail["uploaded_at"] == document.created_at.isoformat()
    assert (detail["pages_deleted"], detail["packets"], detail["decisions"]) == (3, 1, 1)
    assert detail["runs"] == 1 and detail["extractions"] >= 1
    assert detail["ground_truth_versions_kept"] == 1
    assert not [words for words in [*IDENTIFYING, "Jane Doe.pdf"] if words in json.dumps(detail)]


def test_the_ground_truth_of_a_deleted_document_is_still_exported(reviewer, admin_user, client):
    kept = decided(OTHER_REPORT, reviewer, name="John Roe.pdf", label="radiology")
    document = aged(decided(NAMED_REPORT, reviewer, name="Jane Doe.pdf").document)
    rows_before = {r["document_id"]: r for r in map(json.loads, export().splitlines())}

    retention.retention_apply()

    rows = {r["document_id"]: r for r in map(json.loads, export().splitlines())}
    assert set(rows) == {str(document.pk), str(kept.document_id)}
    gone, was = rows[str(document.pk)], rows_before[str(document.pk)]
    assert (gone["filename"], gone["document_sha256"], gone["run_id"]) == (None, None, None)
    same = ("version", "source", "state", "dominant_type", "reviewer", "decided_at", "model")
    assert {k: gone[k] for k in same} == {k: was[k] for k in same}
    assert rows[str(kept.document_id)] == rows_before[str(kept.document_id)]
    assert "Jane Doe" not in export("csv")

    bundle = json.loads(export("fhir"))  # every resource checked against the R4B models
    references = {
        e["resource"]["identifier"][0]["value"]: e["resource"]
        for e in bundle["entry"]
        if e["resource"]["resourceType"] == "DocumentReference"
    }
    attachment = references[f"urn:uuid:{document.pk}"]["content"][0]["attachment"]
    assert "url" not in attachment and attachment["title"] == "Deleted under the retention policy"
    assert len(references[f"urn:uuid:{document.pk}"]["identifier"]) == 1  # no hash
    client.force_login(admin_user)
    assert client.get(reverse("review:export"), {"format": "csv"}).status_code == 200


def test_retention_is_off_by_default_and_at_zero(settings, reviewer):
    document = aged(ready_document("An old note.", sha="a"), days=3650)
    settings.RETENTION_DAYS = 0

    report = retention.retention_apply()

    assert report.cutoff is None and report.deleted == []
    document.refresh_from_db()
    assert document.status == Document.Status.READY


def test_a_document_just_inside_the_age_is_kept(settings):
    inside = aged(ready_document("Inside.", sha="a"), days=29)
    past = aged(ready_document("Past.", sha="b"), days=31)

    assert retention.retention_apply().deleted == [str(past.pk)]
    inside.refresh_from_db()
    assert inside.status == Document.Status.READY


def test_a_dry_run_says_what_would_go_and_changes_nothing(media_root):
    document = aged(ready_document("Old.", sha="a"))
    document.file.save("doc.pdf", ContentFile(text_pdf([["Old."]])))

    report = retention.retention_apply(dry_run=True)

    assert report.deleted == [str(document.pk)]
    document.refresh_from_db()
    assert document.status == Document.Status.READY and document.file
    assert Page.objects.filter(document=document).exists()
    assert not AuditEvent.objects.exists()


def test_a_pass_stops_at_its_limit_and_the_next_goes_on():
    documents = [aged(ready_document(f"Old {n}.", sha=str(n)), days=40 + n) for n in range(3)]

    first = retention.retention_apply(limit=2)
    second = retention.retention_apply(limit=2)

    oldest_first = [str(d.pk) for d in reversed(documents)]
    assert (first.deleted, first.more) == (oldest_first[:2], True)
    assert (second.deleted, second.more) == (oldest_first[2:], False)
    assert retention.retention_apply().deleted == []


# -- held while work is open ---------------------------------------------------------------------


def test_a_document_under_an_open_second_review_is_kept_until_it_ends(reviewer, other_reviewer):
    from review.corrections import correction_build
    from tests.review.conftest import make_packet

    packet = make_packet(sha="e")
    decisions.packet_open(packet=packet, user=reviewer)
    decisions.review_submit(
        packet_id=packet.pk,
        reviewer=reviewer,
        correction=correction_build(segments=[(1, 2, DocType.RADIOLOGY)]),
        notes="",
    )
    document = aged(packet.document)
    second = SecondReview.objects.get(document=document)

    report = retention.retention_apply()
    assert report.deleted == [] and report.held == {"second_review_open": 1}
    assert GroundTruth.objects.get(document=document).state == GroundTruth.State.PROVISIONAL

    second_review.second_review_submit(
        second_id=second.pk, reviewer=other_reviewer, segments=[(1, 2, DocType.RADIOLOGY)]
    )
    assert retention.retention_apply().deleted == [str(document.pk)]
    truth = GroundTruth.objects.get(document=document)  # final, as the check left it
    assert (truth.state, truth.dominant_type) == (GroundTruth.State.FINAL, "radiology")
    assert not SecondReview.objects.filter(document=document).exists()


def test_a_document_under_a_blind_audit_is_kept_until_it_is_audited(settings, reviewer):
    from review.models import AuditSample
    from review.services import audits
    from tests.review.test_quality_checks import accept, whole

    settings.AUDIT_SAMPLE_RATE = 1.0
    run = accept(1)
    document = aged(run.document)
    sample = AuditSample.objects.get(document=document)

    assert retention.retention_apply().held == {"audit_open": 1}
    audits.audit_submit(
        sample_id=sample.pk, auditor=reviewer, segments=whole(sample.pk, DocType.PATHOLOGY)
    )
    assert retention.retention_apply().deleted == [str(document.pk)]
    assert not AuditSample.objects.filter(document=document).exists()


def test_documents_still_being_read_classified_or_reviewed_are_kept(reviewer):
    from tests.review.conftest import make_packet

    ingesting = aged(with_status(ready_document("Reading.", sha="a"), Document.Status.INGESTING))
    running = aged(ready_document("Classifying.", sha="b"))
    Run.objects.create(document=running, preset="clinical", classifier="offline")
    escalated = aged(make_packet(sha="c").document)
    failed = aged(with_status(ready_document("Unreadable.", sha="d"), Document.Status.FAILED))

    report = retention.retention_apply()

    assert report.deleted == [str(failed.pk)]  # a failed upload is past the age too
    assert report.held == {"ingesting": 1, "run_open": 1, "review_open": 1}
    for document in (ingesting, running, escalated):
        document.refresh_from_db()
        assert document.status != Document.Status.DELETED


def test_held_documents_do_not_hold_up_the_younger_ones_behind_them():
    from tests.review.conftest import make_packet

    held = aged(make_packet(sha="c").document, days=50)
    behind = aged(ready_document("Behind.", sha="d"), days=40)

    report = retention.retention_apply(limit=1)

    assert report.deleted == [str(behind.pk)] and report.held == {"review_open": 1}
    held.refresh_from_db()
    assert held.status == Document.Status.READY


# -- files -----------------------------------------------------------------------------------------


def test_files_that_could_not_be_deleted_are_deleted_by_the_next_pass(media_root, monkeypatch):
    document = aged(ready_document("Old.", sha="a"))
    document.file.save("doc.pdf", ContentFile(text_pdf([["Old."]])))
    path = Path(document.file.path)
    real = storage.delete

    def unreachable(name: str) -> None:
        raise ConnectionError("the bucket did not answer")

    monkeypatch.setattr(storage, "delete", unreachable)
    report = retention.retention_apply()
    assert report.deleted == [str(document.pk)] and report.errors == 1
    document.refresh_from_db()
    assert document.status == Document.Status.DELETED and document.file.name and path.exists()

    monkeypatch.setattr(storage, "delete", real)
    again = retention.retention_apply()
    assert (again.deleted, again.files, again.errors) == ([], 1, 0)
    document.refresh_from_db()
    assert document.file.name == "" and not path.exists()


def test_a_page_drawn_while_its_document_is_deleted_leaves_no_image(monkeypatch, media_root):
    document = ready_document("PATHOLOGY", sha="a")
    document.file.save("doc.pdf", ContentFile(text_pdf([["PATHOLOGY"]])))
    real = services.run_sandboxed

    def deleted_meanwhile(*args: Any, **kwargs: Any) -> Any:
        drawn = real(*args, **kwargs)
        Page.objects.filter(document=document).delete()  # retention, between draw and write
        return drawn

    monkeypatch.setattr(services, "run_sandboxed", deleted_meanwhile)
    with pytest.raises(services.PageGone):
        services.page_image(document=document, number=1)
    assert storage.names_in(storage.page_images_folder(document.pk)) == set()
    with pytest.raises(services.PageGone):  # and it is not drawn again
        services.page_image(document=document, number=1)


def test_retention_deletes_the_file_and_page_images_from_the_bucket(bucket, reviewer):
    old = aged(decided(NAMED_REPORT, reviewer, name="Jane Doe.pdf").document)
    young = decided(OTHER_REPORT, reviewer, name="John Roe.pdf", label="radiology").document
    young_keys = [k for k in bucket.stored() if str(young.pk) in k]
    assert len([k for k in bucket.stored() if str(old.pk) in k]) == 7 and len(young_keys) == 5

    report = retention.retention_apply()

    assert report.deleted == [str(old.pk)] and (report.files, report.images) == (1, 6)
    assert bucket.stored() == young_keys


# -- where it runs -------------------------------------------------------------------------------


def test_the_recovery_pass_runs_retention_when_due(settings):
    from config.recovery import recover

    first = aged(ready_document("First.", sha="a"))
    assert recover()["retention"]["deleted"] == 1
    second = aged(ready_document("Second.", sha="b"))
    assert recover()["retention"] is None  # not due again yet
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (Document.Status.DELETED, Document.Status.READY)
    settings.RETENTION_DAYS = 0
    from django.core.cache import cache

    cache.clear()
    assert recover()["retention"] is None


def test_apply_retention_and_recover_report_what_they_did(settings):
    aged(ready_document("Old.", sha="a"))
    from tests.review.conftest import make_packet

    aged(make_packet(sha="c").document)

    dry = StringIO()
    call_command("apply_retention", "--dry-run", stdout=dry)
    said = dry.getvalue()
    assert "1 document(s) uploaded before" in said and "would be deleted" in said
    assert "1 kept for now: review_open" in said
    out = StringIO()
    call_command("apply_retention", stdout=out)
    assert "1 document(s) uploaded before" in out.getvalue() and " deleted (" in out.getvalue()
    assert Document.objects.filter(status=Document.Status.DELETED).count() == 1

    settings.RETENTION_DAYS = 0
    off = StringIO()
    call_command("apply_retention", stdout=off)
    assert "RETENTION_DAYS is 0" in off.getvalue()


def test_the_settings_read_retention_days_and_cap_the_answer_cache():
    from tests.test_settings import run_manage

    show = "from django.conf import settings as s; print(s.RETENTION_DAYS, s.LLM_CACHE_DAYS)"
    seven = run_manage("shell", "-c", show, env={"RETENTION_DAYS": "7"})
    assert seven.returncode == 0, seven.stderr
    # A cached model answer quotes the pages: it is kept no longer than the documents.
    assert seven.stdout.splitlines()[-1] == "7 7"
    assert run_manage("shell", "-c", show, env={}).stdout.splitlines()[-1] == "0 30"
    negative = run_manage("check", env={"RETENTION_DAYS": "-1"})
    assert negative.returncode != 0 and "RETENTION_DAYS=-1 must be at least 0" in negative.stderr


# -- the pages of a deleted document -------------------------------------------------------------


def test_a_deleted_document_says_so_and_its_file_is_gone(reviewer_client, reviewer):
    document = aged(decided(NAMED_REPORT, reviewer, name="Jane Doe.pdf").document)
    retention.retention_apply()

    page = reviewer_client.get(reverse("documents:detail", args=[document.pk]))
    html = page.content.decode()
    assert page.status_code == 200 and 'id="deleted-notice"' in html
    assert "Jane Doe" not in html and 'id="ground-truth"' in html  # the label is still shown
    assert reviewer_client.get(reverse("documents:file", args=[document.pk])).status_code == 404
    listed = reviewer_client.get(reverse("documents:list")).content.decode()
    assert str(document.pk) not in listed
    deleted = reviewer_client.get(reverse("documents:list"), {"status": "deleted"})
    assert str(document.pk) in deleted.content.decode()


@pytest.mark.django_db(transaction=True)  # ingestion is queued on commit
def test_a_file_uploaded_again_after_its_document_was_deleted_is_a_new_document(pathology_pdf):
    first = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)
    aged(first)
    retention.retention_apply()

    again = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)

    assert again.pk != first.pk
    again.refresh_from_db()
    assert again.status == Document.Status.READY and again.pages.count() == 3


# -- what a field value reduces to ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "code"),
    [
        ("er_status", "Positive (90%), Allred 8", "positive"),
        ("her2_status", "1+, negative", "negative"),
        ("her2_status", "2+, equivocal; FISH to follow", "equivocal"),
        ("pr_status", "positive in 5%, negative elsewhere", None),  # says two things
        ("msi_status", "MSS (microsatellite stable)", "MSS"),
        ("msi_status", "MSI-High", "MSI-H"),
        ("tmb", "4 mutations/Mb", "4 mutations/Mb"),
        ("ki67", "18% (hot spot)", "18%"),
        ("grade", "Nottingham grade II (of III)", "grade 2"),
        ("grade", "grade 2, focally grade 3", None),  # two grades named
        ("grade", "Nottingham grade 2", "grade 2"),
        ("report_date", "12 March 2024", "2024"),
        ("visit_date", "03/04/2023 seen by Dr Smith", "2023"),
        ("histology", "Invasive ductal carcinoma in Jane Doe", None),
        ("institution", "St Mary's Hospital", None),
        ("employee_ssn", "123-45-6789", None),
        ("er_status", "", None),
    ],
)
def test_a_field_value_survives_only_as_a_code(name, value, code):
    from review.retained import coded_value

    assert coded_value(name, value) == code


def test_fields_the_retention_does_not_know_are_dropped_not_kept():
    from review.retained import classification_retained, fields_retained

    kept = fields_retained(
        [
            {
                "segment": 0,
                "doc_type": "other",
                "pages": [1, 1],
                "patient": "Jane Doe",
                "fields": {
                    "title": {
                        "value": "Letter to Jane Doe",
                        "status": "found",
                        "new_text": "Jane Doe",
                        "extracted": "Jane",
                    }
                },
            }
        ]
    )
    assert "Jane" not in json.dumps(kept)
    assert kept[0]["fields"]["title"] == {
        "status": "found",
        "confidence": None,
        "value": None,
        "removed": True,
    }
    assert "Jane" not in json.dumps(
        classification_retained({"dominant_type_overall": "other", "summary": "Jane Doe"})
    )
