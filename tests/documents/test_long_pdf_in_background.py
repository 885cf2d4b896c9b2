"""Without Redis, a long PDF (which may need OCR of every page) is read in the process's
background thread, never in the upload request; a short one is read before the answer."""

from __future__ import annotations

import pytest

from benchmarks.pdfgen import text_pdf
from core import jobs
from documents.models import Document
from documents.services import document_create

# Real commits: ingestion is sent with transaction.on_commit, and the background thread reads
# what the test wrote.
pytestmark = pytest.mark.django_db(transaction=True)


def pdf(pages: int, tag: str) -> bytes:
    return text_pdf([[f"CLINIC NOTE {tag} page {n}", "Patient seen today."] for n in range(pages)])


def test_a_long_pdf_is_read_in_the_background_and_a_short_one_at_once(settings):
    settings.INGEST_INLINE_MAX_PAGES = 3
    short = document_create(filename="short.pdf", content=pdf(3, "a"), user=None)
    short.refresh_from_db()
    assert short.status == Document.Status.READY  # read before the answer

    long = document_create(filename="long.pdf", content=pdf(4, "b"), user=None)
    long.refresh_from_db()
    assert long.status in (Document.Status.UPLOADED, Document.Status.INGESTING)
    assert jobs.drain_background(60)
    long.refresh_from_db()
    assert long.status == Document.Status.READY and long.pages.count() == 4
