"""Files are what their content says (not their name), text encodings are decoded right,
uploads are private to the server's user, and OCR leaves no temporary files even when killed."""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import TestCase

from benchmarks.pdfgen import image_pdf
from documents import sandbox
from documents.models import Document
from documents.ocr import tesseract_available
from documents.services import document_create

pytestmark = pytest.mark.django_db


def create(name: str, data: bytes) -> Document:
    with TestCase.captureOnCommitCallbacks(execute=True):
        document = document_create(filename=name, content=data, user=None)
    document.refresh_from_db()
    return document


@pytest.fixture(autouse=True)
def no_classification(settings: Any) -> None:
    settings.AUTO_CLASSIFY = False


def test_a_pdf_named_txt_is_read_as_a_pdf_not_as_cp1252(pathology_pdf):
    document = create("Smith_report.txt", pathology_pdf)
    assert document.mime_type == Document.MIME_PDF
    assert document.status == Document.Status.READY, document.error
    text = document.pages.get(number=1).text
    assert text.startswith("SURGICAL PATHOLOGY REPORT")
    assert "%PDF" not in text and "endobj" not in "".join(p.text for p in document.pages.all())


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-16-le"])
def test_utf16_text_with_a_byte_order_mark_is_accepted_and_decoded(encoding):
    text = "FINAL DIAGNOSIS\n\nBenign naevus; margins clear (résumé, 5 µm)."
    data = text.encode(encoding)
    if encoding != "utf-16":  # the plain codec writes its own mark; the others need one
        data = "\ufeff".encode(encoding) + data
    document = create("note.txt", data)
    assert document.mime_type == Document.MIME_TEXT
    assert document.status == Document.Status.READY, document.error
    assert document.pages.get(number=1).paragraphs == [
        "FINAL DIAGNOSIS",
        "Benign naevus; margins clear (résumé, 5 µm).",
    ]


def test_utf8_text_with_a_byte_order_mark_loses_the_mark():
    document = create("note.txt", "\ufeffFINAL DIAGNOSIS\n\nBenign, é.".encode())
    assert document.status == Document.Status.READY, document.error
    assert document.pages.get(number=1).text == "FINAL DIAGNOSIS\n\nBenign, é."


def test_utf16_without_a_mark_is_still_refused_as_not_text():
    from documents.validation import UploadRefused

    with pytest.raises(UploadRefused) as refused:
        create("note.txt", "FINAL DIAGNOSIS: benign.".encode("utf-16-le"))
    assert refused.value.code == "not_text"


def test_uploaded_files_are_readable_by_the_server_user_only(pathology_pdf, media_root):
    document = create("report.pdf", pathology_pdf)
    path = Path(document.file.path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700


def _drawing_seconds(pdf: bytes, *, dpi: int) -> float:
    """Seconds to draw the first page at ``dpi`` and write it as PNG, as OCR does first."""
    import io

    import pypdfium2 as pdfium

    started = time.monotonic()
    document = pdfium.PdfDocument(pdf)
    try:
        image = document[0].render(scale=dpi / 72).to_pil()
        image.save(io.BytesIO(), format="PNG")
    finally:
        document.close()
    return time.monotonic() - started


@pytest.mark.skipif(not tesseract_available(), reason="needs tesseract")
def test_a_killed_ocr_child_leaves_no_temporary_files(settings, tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    # The child is killed at the page limit while tesseract works. The limit is set from how
    # long this machine takes to draw and write that page right now: a fixed one killed the
    # child before tesseract started on a loaded machine, or let tesseract finish on an idle one.
    settings.OCR_DPI = 600
    # 42 full lines. The child draws the page (at most at 600 dpi: less where the page would
    # pass PAGE_IMAGE_MAX_PIXELS) and writes it out, then tesseract reads it for about as long
    # again: the limit falls in tesseract's time, idle or loaded.
    scan = image_pdf(
        ["FINDINGS: " + "The lungs are clear and there is no pleural effusion. " * 6] * 7, dpi=300
    )
    settings.SANDBOX_PAGE_SECONDS = 1.4 * _drawing_seconds(scan, dpi=600)
    seen: set[str] = set()
    stop = threading.Event()

    def watch() -> None:  # what tesseract writes while it works
        while not stop.is_set():
            seen.update(p.name[:5] for p in scratch.glob("vetted-sandbox-*/*"))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.monotonic()
    document = create("scan.pdf", scan)
    stop.set()
    watcher.join()
    assert "tess_" in seen  # tesseract was at work when the child was killed
    assert document.status == Document.Status.FAILED
    assert "reading it took too long" in document.error
    report = sandbox.REPORTS[-1]
    assert (report.task, report.outcome) == ("ingest", "timeout")
    assert time.monotonic() - started < 10
    time.sleep(0.2)
    # The child's private directory, with tesseract's tess_* image and output, is gone.
    assert list(scratch.iterdir()) == []
