"""RQ entry points for documents. Jobs take ids; Postgres is the source of truth."""

from __future__ import annotations

import logging
import time

from django.utils import timezone

from core import jobs
from documents import hooks, services
from documents.jobs import INGEST, RENDER
from documents.models import Document, ImageRender
from documents.pages import UnreadableDocument

logger = logging.getLogger(__name__)

UNEXPECTED_FAILURE = (
    "Ingestion failed unexpectedly. The file is kept: retry it, and if it fails again "
    "ask an administrator to look at the server log (document {id})."
)


def ingest_document(document_id: str) -> str:
    """Ingest one uploaded document. Safe to run twice: only the first claim does work."""
    claim = jobs.claim(INGEST, document_id)
    if claim is None:
        logger.info("ingest skipped id=%s: not in uploaded state", document_id)
        return "skipped"
    document = Document.objects.get(pk=document_id)
    try:
        with claim.heartbeat():
            services.document_ingest(document=document)
    except services.IngestSuperseded:
        logger.warning("ingest id=%s superseded: another job took it over", document_id)
        return "superseded"
    except UnreadableDocument as exc:
        logger.warning("ingest failed id=%s: %s", document_id, exc.message)
        services.document_fail(claim=claim, message=exc.message)
        return "failed"
    except Exception:
        # Exception text from PDF parsers never carries page text, but keep the log to the type.
        logger.exception("ingest crashed id=%s", document_id)
        services.document_fail(claim=claim, message=UNEXPECTED_FAILURE.format(id=document_id))
        return "failed"
    hooks.document_ready(document)
    return "ready"


# ImageRender.error_code of a render job that stopped (core.jobs writes its own codes too).
FILE_MISSING = "file_missing"
RENDER_CRASHED = "crashed"


def render_page_images(document_id: str) -> str:
    """Draw the page images of one ingested PDF (services.page_images_render). Safe to run
    twice: only the first claim does work, and pages already drawn are skipped."""
    claim = jobs.claim(RENDER, document_id)
    if claim is None:
        logger.info("page images skipped id=%s: not queued", document_id)
        return "skipped"
    started = time.monotonic()
    try:
        document = Document.objects.get(pk=document_id)
        with claim.heartbeat():
            drawn, failed = services.page_images_render(document=document)
    except Exception as exc:
        missing = isinstance(exc, FileNotFoundError)
        if missing:
            logger.warning("page images id=%s: the file is missing", document_id)
        else:
            logger.exception("page images crashed id=%s", document_id)
        claim.rows().update(
            status=ImageRender.Status.FAILED,
            error_code=FILE_MISSING if missing else RENDER_CRASHED,
            finished_at=timezone.now(),
        )
        return "failed"
    seconds = round(time.monotonic() - started, 3)
    claim.rows().update(
        status=ImageRender.Status.DONE,
        pages_drawn=drawn,
        pages_failed=failed,
        finished_at=timezone.now(),
        seconds=seconds,
    )
    logger.info(
        "page images id=%s drawn=%s failed=%s seconds=%s", document_id, drawn, failed, seconds
    )
    return "done"
