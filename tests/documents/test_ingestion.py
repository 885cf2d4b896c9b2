"""Ingestion through both job paths, its failure handling and retries."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from rq import Queue

from benchmarks.pdfgen import image_pdf, text_pdf
from core import jobs
from core.jobs import get_queue
from documents import pages, services, tasks, untrusted
from documents.jobs import INGEST
from documents.models import Document, Page
from documents.pages import UnreadableDocument
from tests.conftest import run_burst_worker, use_redis

# Real commits: ingestion is queued with transaction.on_commit, as in production.
pytestmark = pytest.mark.django_db(transaction=True)


def test_inline_path_ingests_during_the_upload_request(reviewer_client, pathology_pdf, reviewer):
    response = reviewer_client.post(
        reverse("documents:upload"), {"documents": [SimpleUploadedFile("path.pdf", pathology_pdf)]}
    )

    assert response.status_code == 302
    document = Document.objects.get()
    assert document.status == Document.Status.READY
    assert document.uploaded_by == reviewer
    assert document.page_count == 3
    assert document.ingest_attempts == 1
    assert list(document.pages.values_list("number", flat=True)) == [1, 2, 3]
    assert document.pages.get(number=1).paragraphs[0] == "SURGICAL PATHOLOGY REPORT"


def test_rq_path_queues_after_commit_and_a_burst_worker_ingests(pathology_pdf, redis_url):
    document = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)

    queue: Queue = get_queue()
    assert queue.count == 1
    assert queue.jobs[0].func_name == "documents.tasks.ingest_document"
    assert queue.jobs[0].args == (str(document.pk),)
    document.refresh_from_db()
    assert document.status == Document.Status.UPLOADED
    assert Page.objects.count() == 0

    run_burst_worker(redis_url)

    document.refresh_from_db()
    assert document.status == Document.Status.READY
    assert document.pages.count() == 3
    assert queue.count == 0


def test_the_same_ingest_job_run_twice_does_the_work_once(pathology_pdf, redis_url):
    document = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)
    job = get_queue().jobs[0]
    get_queue().enqueue(job.func_name, *job.args)  # a duplicate delivery

    run_burst_worker(redis_url)

    document.refresh_from_db()
    assert document.status == Document.Status.READY
    assert document.ingest_attempts == 1
    assert document.pages.count() == 3
    assert tasks.ingest_document(str(document.pk)) == "skipped"


def test_a_failed_ingestion_keeps_the_file_and_can_be_retried(
    pathology_pdf, monkeypatch, reviewer_client
):
    real_ingest = services.document_ingest

    def broken(**kwargs):
        raise UnreadableDocument("Page 2 of the PDF could not be read (it may be damaged).")

    monkeypatch.setattr(services, "document_ingest", broken)
    document = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert document.error == "Page 2 of the PDF could not be read (it may be damaged)."
    assert Page.objects.count() == 0
    with document.file.open("rb") as handle:
        assert handle.read() == pathology_pdf

    detail = reviewer_client.get(reverse("documents:detail", args=[document.pk]))
    assert "Page 2 of the PDF could not be read" in detail.content.decode()
    assert "Retry ingestion" in detail.content.decode()

    monkeypatch.setattr(services, "document_ingest", real_ingest)
    response = reviewer_client.post(reverse("documents:retry", args=[document.pk]))

    assert response.status_code == 302
    document.refresh_from_db()
    assert document.status == Document.Status.READY
    assert document.error == ""
    assert document.ingest_attempts == 2
    assert document.pages.count() == 3


def test_an_unexpected_crash_is_recorded_as_a_failure_not_left_running(pathology_pdf, monkeypatch):
    def crash(**kwargs):
        raise RuntimeError("parser bug")

    monkeypatch.setattr(services, "document_ingest", crash)
    document = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert document.error == tasks.UNEXPECTED_FAILURE.format(id=document.pk)


def test_an_ingestion_abandoned_by_a_dead_worker_can_be_retried(pathology_pdf, settings, redis_url):
    document = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)
    assert jobs.claim(INGEST, document.pk)
    document.refresh_from_db()
    assert not document.can_retry  # still fresh: a worker may be on it

    long_ago = timezone.now() - timedelta(seconds=settings.JOB_STALE_SECONDS + 1)
    # Its heartbeat stopped: the lease ran out.
    Document.objects.filter(pk=document.pk).update(
        ingest_started_at=long_ago, heartbeat_at=long_ago
    )
    document.refresh_from_db()
    assert document.can_retry

    settings.REDIS_URL = ""
    assert services.document_retry(document=document)
    document.refresh_from_db()
    assert document.status == Document.Status.READY


def test_an_unreachable_queue_fails_the_document_visibly_and_keeps_the_file(
    pathology_pdf, settings, reviewer_client
):
    use_redis(settings, "redis://127.0.0.1:1/0")  # nothing listens on port 1
    response = reviewer_client.post(
        reverse("documents:upload"), {"documents": [SimpleUploadedFile("path.pdf", pathology_pdf)]}
    )

    assert response.status_code == 302
    document = Document.objects.get()
    assert document.status == Document.Status.FAILED
    assert document.error == services.QUEUE_UNREACHABLE
    assert document.can_retry
    with document.file.open("rb") as handle:
        assert handle.read() == pathology_pdf


def test_a_queue_failure_is_marked_and_read_by_the_recovery_pass_once_the_queue_is_back(
    pathology_pdf, settings
):
    use_redis(settings, "redis://127.0.0.1:1/0")
    document = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)
    document.refresh_from_db()
    assert document.error_code == Document.QUEUE_UNREACHABLE

    assert jobs.recover()["ingest"]["resumed"] == 0  # still unreachable: still marked
    document.refresh_from_db()
    assert (document.status, document.error_code) == ("failed", Document.QUEUE_UNREACHABLE)

    settings.REDIS_URL = ""  # the queue is back (inline here)
    assert jobs.recover()["ingest"]["resumed"] == 1
    document.refresh_from_db()
    assert document.status == Document.Status.READY and document.error_code == ""


def test_an_ingestion_that_kills_its_worker_every_time_fails_for_good(pathology_pdf, settings):
    document = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)
    long_ago = timezone.now() - timedelta(seconds=settings.JOB_STALE_SECONDS + 1)
    Document.objects.filter(pk=document.pk).update(
        status=Document.Status.INGESTING,
        ingest_attempts=settings.INGEST_MAX_ATTEMPTS,
        heartbeat_at=long_ago,
    )
    assert jobs.recover()["ingest"]["failed"] == 1
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED and document.error_code == "worker_lost"
    assert f"{settings.INGEST_MAX_ATTEMPTS} time(s)" in document.error


def test_an_ingestion_that_lost_its_claim_drops_its_result(pathology_pdf, settings, redis_url):
    document = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)
    assert jobs.claim(INGEST, document.pk)
    document.refresh_from_db()
    # Meanwhile its lease ran out and another job claimed the document (attempt 2).
    Document.objects.filter(pk=document.pk).update(ingest_attempts=2)
    with pytest.raises(services.IngestSuperseded):
        services.document_ingest(document=document)
    assert Page.objects.filter(document=document).count() == 0


def test_a_ready_document_cannot_be_retried(pathology_pdf, reviewer_client):
    document = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)
    response = reviewer_client.post(reverse("documents:retry", args=[document.pk]), follow=True)
    assert "This document is not waiting for a retry." in response.content.decode()
    document.refresh_from_db()
    assert document.ingest_attempts == 1


def test_a_scanned_document_is_ocred_and_keeps_its_confidence():
    scan = image_pdf(["PATHOLOGY REPORT", "FINAL DIAGNOSIS: Benign breast tissue."], pages=2)
    document = services.document_create(filename="scan.pdf", content=scan, user=None)
    document.refresh_from_db()

    assert document.status == Document.Status.READY
    assert document.quality == Document.Quality.OK
    assert document.ocr_page_count == 2
    assert document.ocr_confidence is not None and document.ocr_confidence > 0.8
    methods = set(document.pages.values_list("extraction_method", flat=True))
    assert methods == {Page.Method.OCR}
    assert "FINAL DIAGNOSIS: Benign breast tissue." in document.pages.get(number=2).text


def test_a_poor_scan_is_marked_and_the_user_told_to_upload_a_clearer_one(reviewer_client):
    scan = image_pdf(["PATHOLOGY REPORT", "FINAL DIAGNOSIS: Benign."], noise=0.25)
    document = services.document_create(filename="fax.pdf", content=scan, user=None)
    document.refresh_from_db()

    assert document.status == Document.Status.READY
    assert document.quality == Document.Quality.LOW_OCR
    assert document.ocr_confidence is not None and document.ocr_confidence < 0.6
    assert document.quality_message.startswith(
        "Text recognition on the scanned pages is unreliable (confidence "
    )
    assert document.quality_message.endswith(
        "Upload a clearer scan: 300 dpi, straight, in good light, with dark text on a light "
        "background."
    )
    listing = reviewer_client.get(reverse("documents:list")).content.decode()
    assert "Needs a clearer scan" in listing


def test_without_tesseract_a_scan_fails_with_an_operator_message(monkeypatch):
    monkeypatch.setattr(services, "make_tesseract_engine", lambda **kwargs: None)
    document = services.document_create(
        filename="scan.pdf", content=image_pdf(["SCANNED PAGE"]), user=None
    )
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert "OCR is not available on this server" in document.error


def test_ingestion_records_pages_read_and_keeps_word_boxes(monkeypatch):
    seen = []
    real = services._record_progress

    def watch(document_id):
        record = real(document_id)

        def both(done, total):
            record(done, total)
            seen.append(Document.objects.get(pk=document_id).pages_done)

        return both

    monkeypatch.setattr(services, "_record_progress", watch)
    # Every page reported and written, as for pages that each take longer than the intervals.
    monkeypatch.setattr(services, "PROGRESS_INTERVAL", 0.0)
    monkeypatch.setattr(untrusted, "PROGRESS_INTERVAL", 0.0)
    pdf = text_pdf([["FIRST PAGE", "Alpha beta."], ["SECOND PAGE", "Gamma delta."]])
    document = services.document_create(filename="two.pdf", content=pdf, user=None)
    document.refresh_from_db()
    assert seen == [1, 2]  # written page by page, visible to other connections as it goes
    assert (document.status, document.pages_done, document.progress_percent) == ("ready", 2, 100)
    page = document.pages.get(number=2)
    assert [page.text[a:b] for a, b, *_ in page.boxes] == page.text.split()
    assert (page.width, page.height) == (612.0, 792.0)


def test_progress_is_reported_once_per_interval_and_never_for_a_quick_read(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(pages, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    seen: list[int] = []
    report = pages.throttled(lambda done, _total: seen.append(done), 0.5)
    for done, at in [(1, 100.1), (2, 100.4), (3, 100.6), (4, 100.9), (5, 101.2)]:
        clock[0] = at
        report(done, 5)
    assert seen == [3, 5]  # 0.6 s after the start, then 0.6 s after that report
    quick: list[int] = []
    report = pages.throttled(lambda done, _total: quick.append(done), 0.5)
    for done in (1, 2, 3):
        clock[0] += 0.01
        report(done, 3)
    assert quick == []  # read within the interval: the ingestion's own save says it is done


def test_backfill_gives_older_pages_their_word_boxes():
    from django.core.management import call_command

    pdf = text_pdf([["ONLY PAGE", "Some words here."]])
    document = services.document_create(filename="one.pdf", content=pdf, user=None)
    Page.objects.filter(document=document).update(boxes=[], width=None, height=None)
    call_command("backfill_word_boxes", verbosity=0)
    page = Page.objects.get(document=document)
    assert [page.text[a:b] for a, b, *_ in page.boxes] == page.text.split()
    Page.objects.filter(document=document).update(boxes=[], text="changed since")
    call_command("backfill_word_boxes", verbosity=0)
    assert Page.objects.get(document=document).boxes == []  # offsets would not hold: left alone


@pytest.mark.postgres
def test_pages_written_by_copy_read_back_as_bulk_create_writes_them():
    from django.db import connection
    from django.db.models import Value

    from core.bulk import bulk_insert

    assert connection.vendor == "postgresql"  # the COPY path
    pdf = text_pdf([["ONLY PAGE", "Some words here."]])
    document = services.document_create(filename="one.pdf", content=pdf, user=None)
    awkward = 'tab\there, "quoted" \\ backslash,\nnew line, é, \\N, ☤'
    rows = {
        7: dict(text=awkward, paragraphs=[awkward, "x"], boxes=[[0, 3, 0.1, 0.25, 0.5, 0.3333]]),
        8: dict(text="", paragraphs=[], boxes=[], ocr_confidence=None, width=None),
    }
    bulk_insert(
        [
            Page(
                **{
                    "document": document,
                    "number": number,
                    "has_tables": True,
                    "extraction_method": "ocr",
                    "ocr_confidence": 71.5,
                    "width": 612.0,
                    "height": 792.0,
                    **fields,
                }
            )
            for number, fields in rows.items()
        ]
    )
    for number, fields in rows.items():
        page = Page.objects.get(document=document, number=number)
        for name, value in fields.items():
            assert getattr(page, name) == value
        assert (page.has_tables, page.extraction_method, page.height) == (True, "ocr", 792.0)
        assert page.block_types == []  # the model's default, filled as bulk_create fills it
    assert Page.objects.get(document=document, number=7).ocr_confidence == 71.5
    # A value that is an SQL expression cannot go through COPY: bulk_create writes it.
    bulk_insert([Page(document=document, number=9, text=Value("from an expression"))])
    assert Page.objects.get(document=document, number=9).text == "from an expression"
