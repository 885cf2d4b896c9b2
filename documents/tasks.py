"""RQ entry points for documents. Jobs take ids; Postgres is the source of truth."""

from __future__ import annotations

import logging

from core import jobs
from documents import hooks, services
from documents.jobs import INGEST
from documents.models import Document
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
