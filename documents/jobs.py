"""Documents' background work (core.jobs).

- Ingestion: a document is queued while uploaded, running while ingesting, and fails for good
  when reading it keeps killing its worker.
- Page images: after ingestion commits, a job draws every page of a PDF at the viewer's size
  and as a thumbnail (documents.services.page_images_render), so that the review pages find
  them ready. Without Redis it runs in a background thread of the process that queued it
  (``background_inline``): an upload does not wait for it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings

from core.jobs import Work
from documents.models import Document, ImageRender

QUEUE_UNREACHABLE = (
    "The file is stored, but it could not be queued for reading because the job queue is "
    "unreachable. It is queued again automatically when the queue is back; nothing to do."
)
INGEST_LOST = (
    "Reading this file stopped the worker {n} time(s) (it was killed or ran out of memory or "
    "time); it is not tried again. Check the file, then retry or upload a repaired copy."
)


def _given_up(document: Document, now: datetime) -> dict[str, Any]:
    return {"error": INGEST_LOST.format(n=document.ingest_attempts), "updated_at": now}


def _long_pdfs(pks: list[Any]) -> bool:
    """Without Redis, a PDF of more than INGEST_INLINE_MAX_PAGES pages is read in the
    process's background thread (its page count shows progress), not in the upload request:
    OCR of 250 scanned pages held a request for 87 s."""
    return Document.objects.filter(
        pk__in=pks, mime_type=Document.MIME_PDF, page_count__gt=settings.INGEST_INLINE_MAX_PAGES
    ).exists()


INGEST = Work(
    name="ingest",
    label="document(s)",
    func="documents.tasks.ingest_document",
    model=Document,
    queued=Document.Status.UPLOADED,
    running=Document.Status.INGESTING,
    failed=Document.Status.FAILED,
    attempts="ingest_attempts",
    heartbeat="heartbeat_at",
    queued_since="updated_at",
    max_attempts=lambda: int(settings.INGEST_MAX_ATTEMPTS),
    give_up=_given_up,
    unreachable=lambda now: {"error": QUEUE_UNREACHABLE, "updated_at": now},
    unreachable_fails=True,
    on_claim=lambda now: {"ingest_started_at": now, "pages_done": 0, "updated_at": now},
    on_requeue=lambda now: {"error": ""},
    background_inline=_long_pdfs,
)


RENDER = Work(
    name="render",
    label="document(s) to draw",
    func="documents.tasks.render_page_images",
    model=ImageRender,
    queued=ImageRender.Status.QUEUED,
    running=ImageRender.Status.RUNNING,
    failed=ImageRender.Status.FAILED,
    attempts="attempts",
    heartbeat="heartbeat_at",
    queued_since="queued_at",
    # A page that kills its worker is drawn in a sandboxed child, so a lost worker is the
    # machine's doing, not the file's: the same budget as ingestion.
    max_attempts=lambda: int(settings.INGEST_MAX_ATTEMPTS),
    give_up=lambda _row, now: {"finished_at": now},
    # Not drawn ahead while Redis is away: the rows stay queued (the review pages draw a page
    # on first request meanwhile) and are sent when it answers again.
    unreachable=lambda now: {},
    unreachable_fails=False,
    on_claim=lambda now: {"started_at": now, "finished_at": None},
    background_inline=True,
)
