"""Document workflows: create from an upload, ingest into pages, retry a failed ingestion."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from config.jobs import enqueue_on_commit
from documents.images import render_page_png
from documents.models import Document, Page
from documents.ocr import make_tesseract_engine
from documents.pages import OCR, PageContent, extract_file
from documents.validation import UploadRefused, inspect_upload
from integrations.models import Event
from integrations.services import event_emit

logger = logging.getLogger(__name__)

INGEST_JOB = "documents.tasks.ingest_document"


def _duplicate_message(*, name: str, existing: Document) -> str:
    when = timezone.localtime(existing.created_at).strftime("%d %b %Y %H:%M")
    return f"“{name}” was already uploaded on {when} as “{existing.original_filename}”."


def document_create(
    *, filename: str, content: bytes, user: Any | None, options: dict[str, Any] | None = None
) -> Document:
    """Validate and store one upload, then queue its ingestion.

    Raises UploadRefused with the user-facing message; on refusal nothing is stored.
    """
    info = inspect_upload(
        name=filename,
        data=content,
        max_bytes=settings.UPLOAD_MAX_BYTES,
        max_pages=settings.UPLOAD_MAX_PAGES,
    )
    existing = Document.objects.filter(sha256=info.sha256).first()
    if existing is not None:
        raise UploadRefused(
            code="duplicate", message=_duplicate_message(name=filename, existing=existing)
        )

    document = Document(
        original_filename=filename[:255],
        sha256=info.sha256,
        mime_type=info.mime_type,
        size_bytes=info.size_bytes,
        page_count=info.page_count,
        uploaded_by=user if user is not None and user.is_authenticated else None,
        options=options or {},
    )
    document.file.save("upload", ContentFile(content), save=False)
    try:
        with transaction.atomic():
            document.save(force_insert=True)
            logger.info("document created id=%s pages=%s", document.pk, document.page_count)
            _enqueue_ingest(document_id=str(document.pk), attempt=0)
    except IntegrityError:
        # Lost a race with an identical upload: remove our copy of the file, keep theirs.
        document.file.delete(save=False)
        existing = Document.objects.filter(sha256=info.sha256).first()
        if existing is None:
            raise
        raise UploadRefused(
            code="duplicate", message=_duplicate_message(name=filename, existing=existing)
        ) from None
    except BaseException:
        document.file.delete(save=False)
        raise
    return document


QUEUE_UNREACHABLE = (
    "The file is stored, but ingestion could not be queued because the job queue is "
    "unreachable. Retry in a few minutes; if it keeps failing, tell an administrator."
)


def _enqueue_ingest(*, document_id: str, attempt: int) -> None:
    enqueue_on_commit(
        INGEST_JOB,
        document_id,
        job_id=f"ingest-{document_id}-{attempt}",
        on_queue_error=lambda: document_fail(document_id=document_id, message=QUEUE_UNREACHABLE),
    )


def _low_ocr_message(confidence: float) -> str:
    return (
        f"Text recognition on the scanned pages is unreliable (confidence {confidence:.0%}, "
        f"needed {settings.OCR_MIN_CONFIDENCE:.0%}). Upload a clearer scan: 300 dpi, "
        "straight, in good light, with dark text on a light background."
    )


def pages_extract(
    *,
    name: str,
    data: bytes,
    ocr: Any | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> list[PageContent]:
    """A file's pages with this deployment's OCR settings (tesseract unless ``ocr`` is given)."""
    if ocr is None and name.lower().endswith(".pdf"):
        ocr = make_tesseract_engine(language=settings.OCR_LANGUAGE)
    return extract_file(
        name,
        data,
        ocr=ocr,
        min_text_chars=settings.OCR_MIN_TEXT_CHARS,
        dpi=settings.OCR_DPI,
        on_page=on_page,
        reader=settings.PDF_TEXT_READER,
    )


def _record_progress(document_id: Any) -> Callable[[int, int], None]:
    """Write pages read so far on the row (outside any transaction, so lists see it live)."""

    def record(done: int, total: int) -> None:
        Document.objects.filter(pk=document_id).update(pages_done=done)

    return record


def document_ingest(*, document: Document, ocr: Any | None = None) -> Document:
    """Extract the stored file into pages; replaces any pages from an earlier attempt.

    Raises UnreadableDocument with a user-facing message.
    """
    started = time.monotonic()
    with document.file.open("rb") as handle:
        data = handle.read()
    pages = pages_extract(
        name="document.pdf" if document.is_pdf else "document.txt",
        data=data,
        ocr=ocr,
        on_page=_record_progress(document.pk),
    )

    ocr_pages = [p for p in pages if p.method == OCR]
    words = sum(p.ocr_word_count for p in ocr_pages)
    ocr_confidence = (
        sum((p.ocr_confidence or 0.0) * p.ocr_word_count for p in ocr_pages) / words
        if words
        else (0.0 if ocr_pages else None)
    )
    low_ocr = ocr_confidence is not None and ocr_confidence < settings.OCR_MIN_CONFIDENCE

    with transaction.atomic():
        Page.objects.filter(document=document).delete()
        Page.objects.bulk_create(
            [
                Page(
                    document=document,
                    number=p.number,
                    text=p.text,
                    paragraphs=p.paragraphs,
                    block_types=p.block_types,
                    has_tables=p.has_tables,
                    extraction_method=p.method,
                    ocr_confidence=p.ocr_confidence,
                    boxes=p.boxes,
                    width=p.width,
                    height=p.height,
                )
                for p in pages
            ]
        )
        document.page_count = len(pages)
        document.pages_done = len(pages)
        document.ocr_page_count = len(ocr_pages)
        document.ocr_confidence = ocr_confidence
        document.quality = Document.Quality.LOW_OCR if low_ocr else Document.Quality.OK
        document.quality_message = _low_ocr_message(ocr_confidence or 0.0) if low_ocr else ""
        document.status = Document.Status.READY
        document.error = ""
        document.ingested_at = timezone.now()
        document.ingest_seconds = round(time.monotonic() - started, 3)
        document.save(
            update_fields=[
                "page_count",
                "pages_done",
                "ocr_page_count",
                "ocr_confidence",
                "quality",
                "quality_message",
                "status",
                "error",
                "ingested_at",
                "ingest_seconds",
                "updated_at",
            ]
        )
        event_emit(
            kind=Event.DOCUMENT_READY,
            data={
                "document_id": str(document.pk),
                "page_count": document.page_count,
                "quality": document.quality,
            },
        )
    logger.info(
        "document ingested id=%s pages=%s ocr_pages=%s seconds=%s",
        document.pk,
        len(pages),
        len(ocr_pages),
        document.ingest_seconds,
    )
    return document


def document_claim_for_ingest(*, document_id: str) -> bool:
    """Atomically move an uploaded document to ingesting; False if another worker has it."""
    return (
        Document.objects.filter(pk=document_id, status=Document.Status.UPLOADED).update(
            status=Document.Status.INGESTING,
            ingest_started_at=timezone.now(),
            pages_done=0,
            ingest_attempts=F("ingest_attempts") + 1,
            updated_at=timezone.now(),
        )
        == 1
    )


def document_fail(*, document_id: str, message: str) -> None:
    Document.objects.filter(pk=document_id).update(
        status=Document.Status.FAILED, error=message, updated_at=timezone.now()
    )


def document_retry(*, document: Document) -> bool:
    """Queue a failed (or abandoned) ingestion again. The stored file is reused."""
    if not document.can_retry:
        return False
    with transaction.atomic():
        updated = Document.objects.filter(pk=document.pk, status=document.status).update(
            status=Document.Status.UPLOADED, error="", updated_at=timezone.now()
        )
        if updated != 1:
            return False
        _enqueue_ingest(document_id=str(document.pk), attempt=document.ingest_attempts)
    logger.info("document retry queued id=%s", document.pk)
    return True


def page_image_path(*, document: Document, number: int, dpi: int) -> Path:
    """The cached PNG of one PDF page at ``dpi``, rendered on first use under
    MEDIA_ROOT/page-images/<document>/."""
    cache = Path(settings.MEDIA_ROOT) / "page-images" / str(document.pk)
    path = cache / f"{number}-{dpi}.png"
    if not path.exists():
        with document.file.open("rb") as handle:
            data = handle.read()
        png = render_page_png(data, number, dpi=dpi)
        cache.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.part")
        partial.write_bytes(png)
        partial.replace(path)  # atomic: a concurrent request never reads half an image
    return path


def document_boxes_backfill(*, document: Document, ocr: Any | None = None) -> int:
    """Fill the word boxes of pages ingested before boxes were kept. The file is read again;
    a page gets boxes only when its text reads exactly as stored (so offsets still hold).
    Returns the number of pages filled."""
    stored = {p.number: p for p in document.pages.filter(boxes=[]).order_by("number")}
    if not document.is_pdf or not stored:
        return 0
    with document.file.open("rb") as handle:
        data = handle.read()
    filled = []
    for content in pages_extract(name="document.pdf", data=data, ocr=ocr):
        page = stored.get(content.number)
        if page is not None and page.text == content.text and content.boxes:
            page.boxes, page.width, page.height = content.boxes, content.width, content.height
            filled.append(page)
    Page.objects.bulk_update(filled, ["boxes", "width", "height"])
    return len(filled)
