"""Bulk ingestion: the batched upload check refuses what the single check refuses, `ingest`
is idempotent and resumable, and `bench_bulk_ingest` loses and duplicates nothing with real
RQ workers."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from benchmarks import hostile
from benchmarks.pdfgen import text_pdf, zero_page_pdf
from core.jobs import jobs_missing
from documents import sandbox, services
from documents.models import Document
from documents.validation import (
    CheckLimits,
    UploadInfo,
    UploadRefused,
    inspect_upload,
    inspect_uploads,
)
from tests.conftest import run_burst_worker

pytestmark = pytest.mark.django_db(transaction=True)

LIMITS = CheckLimits(memory_mb=128, seconds=3, max_page_points=3600)


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Where the files to ingest are (apart from MEDIA_ROOT, which is below tmp_path too)."""
    path = tmp_path / "incoming"
    path.mkdir()
    return path


def report(n: int) -> bytes:
    return text_pdf([[f"PATHOLOGY REPORT {n}", f"Specimen {n}: core biopsy, benign."]])


def mixed_files(pathology_pdf: bytes) -> list[tuple[str, bytes]]:
    return [
        ("clean.pdf", pathology_pdf),
        ("locked.pdf", text_pdf([["secret"]], password="pw")),
        ("huge.pdf", hostile.huge_media_box()),
        ("objstm.pdf", hostile.object_stream_bomb(expanded_bytes=200 << 20)),
        ("none.pdf", zero_page_pdf()),
        ("fake.pdf", b"hello, not a pdf"),
        ("cut.pdf", pathology_pdf[:-200]),
        ("note.txt", b"ASSESSMENT AND PLAN\nFollow up in 3 months."),
        ("other.pdf", report(1)),
    ]


def outcome(result: UploadInfo | UploadRefused) -> tuple[str, str]:
    if isinstance(result, UploadRefused):
        return result.code, result.message
    return "ok", f"{result.mime_type} {result.page_count} {result.sha256}"


def alone(files: list[tuple[str, bytes]]) -> list[tuple[str, str]]:
    found = []
    for name, data in files:
        try:
            found.append(outcome(inspect_upload(name=name, data=data, **kwargs())))
        except UploadRefused as refused:
            found.append(outcome(refused))
    return found


def kwargs() -> dict[str, Any]:
    return {"max_bytes": 25 << 20, "max_pages": 300, "limits": LIMITS}


def test_a_batch_gives_every_file_the_answer_it_gets_alone(pathology_pdf):
    files = mixed_files(pathology_pdf)
    sandbox.REPORTS.clear()

    batched = [outcome(r) for r in inspect_uploads(files=files, **kwargs())]

    assert batched == alone(files)
    assert [code for code, _ in batched] == [
        "ok", "encrypted", "page_too_large", batched[3][0], "no_pages", "not_pdf", "truncated",
        "ok", "ok",
    ]  # fmt: skip
    assert batched[3][0] in {"unsafe", "corrupt"}


def test_clean_pdfs_of_a_batch_are_checked_by_one_child(pathology_pdf):
    files = [(f"r{n}.pdf", report(n)) for n in range(6)]
    sandbox.REPORTS.clear()
    results = inspect_uploads(files=files, **kwargs())
    assert all(isinstance(r, UploadInfo) and r.page_count == 1 for r in results)
    assert [r.task for r in sandbox.REPORTS] == ["upload_check_batch"]


def test_when_a_limit_stops_the_batch_child_each_file_is_checked_alone(pathology_pdf, monkeypatch):
    def stuck(*args: Any, **kwargs: Any) -> None:
        while True:
            pass

    monkeypatch.setattr("documents.validation.pdf_facts_many", stuck)
    files = mixed_files(pathology_pdf)
    sandbox.REPORTS.clear()

    batched = [outcome(r) for r in inspect_uploads(files=files, **kwargs())]

    assert batched == alone(files)
    # Text files are checked in a child of their own each (upload_check_text) before it.
    first = next(r for r in sandbox.REPORTS if r.task != "upload_check_text")
    assert (first.task, first.outcome) in {
        ("upload_check_batch", "cpu"),
        ("upload_check_batch", "timeout"),
    }
    assert sum(r.task == "upload_check" for r in sandbox.REPORTS) >= 6


def test_ingest_reports_a_second_copy_in_the_same_batch_as_already_present(folder):
    (folder / "a.pdf").write_bytes(report(1))
    (folder / "b.pdf").write_bytes(report(1))
    (folder / "c.pdf").write_bytes(report(2))
    out, _ = run("ingest", str(folder), "--verbose")
    assert "3 file(s): 2 uploaded, 1 already present, 0 refused, 0 failed to ingest." in out
    assert "skipped  " in out and "was already uploaded" in out
    assert sorted(Document.objects.values_list("original_filename", flat=True)) == [
        "a.pdf",
        "c.pdf",
    ]


def test_an_interrupted_ingest_leaves_whole_batches_and_a_rerun_finishes(
    folder, media_root, monkeypatch
):
    for n in range(5):
        (folder / f"{n}.pdf").write_bytes(report(n))
    real = services._enqueue_ingest_many
    calls = []

    def interrupted(ids: list[str]) -> None:
        calls.append(ids)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(ids)

    monkeypatch.setattr(services, "_enqueue_ingest_many", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run("ingest", str(folder), "--batch-size", "2")
    assert Document.objects.count() == 2  # the second batch was rolled back as a whole
    assert len([p for p in media_root.rglob("*") if p.is_file()]) == 2  # and its files removed

    monkeypatch.setattr(services, "_enqueue_ingest_many", real)
    out, _ = run("ingest", str(folder), "--batch-size", "2")
    assert "5 file(s): 3 uploaded, 2 already present, 0 refused, 0 failed to ingest." in out
    assert Document.objects.filter(status=Document.Status.READY).count() == 5


def test_a_rerun_queues_again_what_lost_its_job_and_a_worker_finishes_it(folder, redis_url):
    from redis import Redis

    for n in range(3):
        (folder / f"{n}.pdf").write_bytes(report(n))
    out, _ = run("ingest", str(folder))
    assert "3 ingestion job(s) queued for the RQ workers." in out
    Redis.from_url(redis_url).flushdb()  # the jobs are lost (Redis restarted without its data)

    out, _ = run("ingest", str(folder))

    assert "3 document(s) stored by an earlier run had lost their ingestion job" in out
    assert "3 file(s): 0 uploaded, 3 already present" in out
    ids = [f"ingest-{pk}-0" for pk in Document.objects.values_list("pk", flat=True)]
    assert jobs_missing(ids) == set()
    run_burst_worker(redis_url)
    assert set(Document.objects.values_list("status", flat=True)) == {"ready"}
    out, _ = run("ingest", str(folder))  # nothing lost now: nothing queued again
    assert "queued again" not in out


def test_ingest_prints_progress_not_a_line_per_file(folder):
    for n in range(4):
        (folder / f"{n}.pdf").write_bytes(report(n))
    out, _ = run("ingest", str(folder), "--batch-size", "2")
    assert "uploaded " not in out
    assert "4/4 file(s) in" in out


@pytest.mark.postgres  # the benchmark checks for PostgreSQL before Redis
def test_bench_bulk_ingest_needs_redis():
    with pytest.raises(CommandError, match="needs Redis"):
        run("bench_bulk_ingest", "--documents", "2")


def test_bench_bulk_ingest_with_real_workers_loses_and_duplicates_nothing(
    tmp_path: Path, redis_url
):
    target = tmp_path / "bulk.json"
    out, _ = run(
        "bench_bulk_ingest",
        "--documents", "12", "--workers", "2", "--copies", "2", "--timeout", "60",
        "--json", str(target),
    )  # fmt: skip

    figures = json.loads(target.read_text())
    assert figures["finished"] is True
    assert (figures["files"], figures["documents"], figures["ready"]) == (14, 12, 12)
    assert (figures["lost"], figures["duplicated"], figures["failed"]) == (0, 0, 0)
    assert figures["copies_reported_present"] is True
    assert figures["pages"] == figures["pages_expected"] > 12
    assert figures["documents_per_minute"] > 0 and figures["workers"] == 2
    assert figures["rerun"] == {
        "seconds": figures["rerun"]["seconds"],
        "uploaded": 0,
        "already_present": 14,
    }
    assert figures["rq_failed_jobs"] == 0
    assert "documents/minute" in out
    assert not Document.objects.exists()  # removed afterwards


def test_a_work_horse_reads_a_pdf_with_nothing_left_to_import(pathology_pdf, tmp_path):
    """The worker imports before it forks what ingestion needs (pytesseract pulls in pandas:
    half a second, in every job, when it was imported in the horse)."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    (tmp_path / "report.pdf").write_bytes(pathology_pdf)
    script = f"""
import sys, django
django.setup()
from config.worker import preload
preload()
before = set(sys.modules)
from documents.services import pages_extract
pages = pages_extract(name="document.pdf", data=open({str(tmp_path / "report.pdf")!r}, "rb").read())
assert len(pages) == 3, pages
print(sorted({{m.split(".")[0] for m in set(sys.modules) - before}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def test_a_batch_that_loses_a_race_with_an_identical_upload_is_stored_file_by_file(
    media_root, monkeypatch
):
    real = services.inspect_uploads

    def racing(**kwargs: Any) -> Any:
        found = real(**kwargs)
        services.document_create(filename="elsewhere.pdf", content=report(1), user=None)
        return found

    monkeypatch.setattr(services, "inspect_uploads", racing)
    first, second = services.documents_create_many(
        files=[("mine.pdf", report(1)), ("other.pdf", report(2))], user=None
    )

    assert isinstance(first, services.DuplicateUpload)
    assert first.existing.original_filename == "elsewhere.pdf"
    assert isinstance(second, Document) and second.original_filename == "other.pdf"
    assert Document.objects.count() == 2
    assert len([p for p in media_root.rglob("*") if p.is_file()]) == 2  # no orphan copy
