"""The bulk `ingest`, `load_demo` and `bench_ingest` management commands."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from documents.models import Document

pytestmark = pytest.mark.django_db(transaction=True)


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_ingest_walks_folders_and_reports_each_file(tmp_path, pathology_pdf, reviewer):
    folder = tmp_path / "incoming"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.pdf").write_bytes(pathology_pdf)
    (folder / "sub" / "note.TXT").write_text("ASSESSMENT AND PLAN\nFollow up in 3 months.")
    (folder / "ignored.docx").write_bytes(b"PK")

    out, _ = run("ingest", str(folder), "--user", reviewer.username)

    assert "2 file(s): 2 uploaded, 0 already present, 0 refused, 0 failed to ingest." in out
    assert set(Document.objects.values_list("status", flat=True)) == {"ready"}
    assert set(Document.objects.values_list("uploaded_by__username", flat=True)) == {"rita"}

    again, _ = run("ingest", str(folder))
    assert "2 file(s): 0 uploaded, 2 already present, 0 refused, 0 failed to ingest." in again
    assert Document.objects.count() == 2


def test_ingest_exits_with_an_error_when_a_file_is_refused(tmp_path):
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 nothing else")
    with pytest.raises(CommandError, match="Some files were not ingested"):
        run("ingest", str(tmp_path))
    assert Document.objects.count() == 0


def test_ingest_rejects_a_missing_path():
    with pytest.raises(CommandError, match="no such file or folder"):
        run("ingest", "/nonexistent/folder")


def test_load_demo_creates_the_reviewer_and_processes_every_demo_document():
    out, _ = run("load_demo", "--password", "demo-pass-123")

    user = get_user_model().objects.get(username="reviewer")
    assert user.check_password("demo-pass-123")
    assert user.groups.filter(name="Reviewers").exists()
    assert "username: reviewer" in out and "password: demo-pass-123" in out
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_staff and admin.has_perm("review.export_ground_truth")
    assert user.has_perm("review.review_packets") and not user.has_perm(
        "review.export_ground_truth"
    )
    documents = Document.objects.all()
    assert documents.count() == 6
    assert {d.status for d in documents} == {Document.Status.READY}
    assert {d.mime_type for d in documents} == {Document.MIME_PDF, Document.MIME_TEXT}

    out, _ = run("load_demo", "--password", "demo-pass-123")  # running it again is harmless
    assert Document.objects.count() == 6


def test_bench_ingest_prints_pages_per_second_for_both_methods_and_peak_memory():
    out, _ = run("bench_ingest", "--pages", "4", "--repeat", "1")
    assert "Generated text PDF: 4 pages" in out
    assert re.search(r"PDF reader: PDFium through pypdfium2 \d+\.\d+", out)
    for label in ("pdfplumber extract_text() (plain)", "vetted extraction (pdfium)"):
        line = next(line for line in out.splitlines() if line.startswith(label))
        numbers = [float(n) for n in re.findall(r"\d+\.\d+", line[len(label) :])]
        assert len(numbers) == 4 and all(n > 0 for n in numbers)
    assert re.search(r"Process peak RSS: \d+ MiB", out)
    ratio = r"Full ingest / plain pdfplumber \(best runs\): \d+\.\dx \(target >= 5x\)"
    assert re.search(ratio, out)
    assert Document.objects.count() == 0  # the benchmark leaves nothing behind


def test_bench_ingest_writes_its_best_rates_to_json(tmp_path):
    target = tmp_path / "ingest.json"
    run("bench_ingest", "--pages", "3", "--repeat", "1", "--json", str(target))
    figures = json.loads(target.read_text())
    assert figures["reader"] == "pdfium"
    assert "compiled_reader" not in figures  # there is no compiled loop any more
    assert figures["pdfplumber_pages_per_second"] > 0
    assert figures["ingest_pages_per_second"] > 0
    assert figures["ingest_over_pdfplumber"] == pytest.approx(
        figures["ingest_pages_per_second"] / figures["pdfplumber_pages_per_second"], rel=0.02
    )
