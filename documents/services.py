"""Document workflows: create from an upload, ingest into pages, retry a failed ingestion, draw
the page images."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import IO, Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from core import events, jobs
from core.bulk import bulk_insert
from documents import storage
from documents.images import THUMBNAIL_DPI
from documents.jobs import INGEST, RENDER
from documents.jobs import QUEUE_UNREACHABLE as QUEUE_UNREACHABLE
from documents.models import Document, ImageRender, Page
from documents.ocr import make_tesseract_engine
from documents.pages import OCR, PageContent, UnreadableDocument, throttled
from documents.sandbox import Limits, SandboxFailed, run_sandboxed
from documents.untrusted import extract_checked, render_checked
from documents.validation import (
    CheckLimits,
    UploadRefused,
    check_size,
    inspect_upload,
    inspect_uploads,
)

logger = logging.getLogger(__name__)


def _duplicate_message(*, name: str, existing: Document) -> str:
    when = timezone.localtime(existing.created_at).strftime("%d %b %Y %H:%M")
    return f"“{name}” was already uploaded on {when} as “{existing.original_filename}”."


class DuplicateUpload(UploadRefused):
    """The same file (by SHA-256) is stored already: ``existing`` is that document, for callers
    that may show it (its uploader); the message names it, so show it only to them too."""

    def __init__(self, message: str, *, existing: Document) -> None:
        super().__init__(message, code="duplicate")
        self.existing = existing


def _check_limits() -> CheckLimits:
    return CheckLimits(
        memory_mb=settings.SANDBOX_CHECK_MEMORY_MB,
        seconds=settings.SANDBOX_CHECK_SECONDS,
        max_page_points=settings.PAGE_MAX_POINTS,
        max_page_chars=settings.UPLOAD_MAX_PAGE_CHARS,
    )


def _stored(
    name: str, content: bytes, info: Any, *, user: Any, options: dict[str, Any] | None = None
) -> Document:
    """An unsaved document for a checked upload, its file already written to storage."""
    document = Document(
        original_filename=name[:255],
        sha256=info.sha256,
        mime_type=info.mime_type,
        size_bytes=info.size_bytes,
        page_count=info.page_count,
        uploaded_by=user if user is not None and user.is_authenticated else None,
        options=options or {},
    )
    document.file.save("upload", ContentFile(content), save=False)
    return document


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
        limits=_check_limits(),
    )
    existing = Document.objects.filter(sha256=info.sha256).first()
    if existing is not None:
        raise DuplicateUpload(
            _duplicate_message(name=filename, existing=existing), existing=existing
        )

    document = _stored(filename, content, info, user=user, options=options)
    try:
        with transaction.atomic():
            document.save(force_insert=True)
            logger.info("document created id=%s pages=%s", document.pk, document.page_count)
            jobs.submit(INGEST, [document.pk])
    except IntegrityError:
        # Lost a race with an identical upload: remove our copy of the file, keep theirs.
        document.file.delete(save=False)
        existing = Document.objects.filter(sha256=info.sha256).first()
        if existing is None:
            raise
        raise DuplicateUpload(
            _duplicate_message(name=filename, existing=existing), existing=existing
        ) from None
    except BaseException:
        document.file.delete(save=False)
        raise
    return document


def document_refusal_record(
    *, filename: str, size: int, user: Any | None, refused: UploadRefused
) -> Document:
    """A failed document that records an upload refused by its checks, for clients that
    follow every upload by its document (the JSON API): the file itself is not kept (no
    content, no hash), only its name, size, and why it was refused (``error_code`` is the
    check's code)."""
    return Document.objects.create(
        original_filename=filename[:255],
        mime_type="",
        size_bytes=size,
        status=Document.Status.FAILED,
        error=refused.message,
        error_code=refused.code[:32],
        uploaded_by=user if user is not None and user.is_authenticated else None,
    )


def document_upload(
    *, upload: Any, user: Any | None, options: dict[str, Any] | None = None
) -> Document:
    """``document_create`` of an uploaded file (a Django ``UploadedFile``, from the form or the
    API): its size is checked before it is read into memory. Raises UploadRefused
    (DuplicateUpload for a file stored already)."""
    name = upload.name or "unnamed"
    check_size(name=name, size=upload.size or 0, max_bytes=settings.UPLOAD_MAX_BYTES)
    document = document_create(filename=name, content=upload.read(), user=user, options=options)
    document.refresh_from_db(fields=["status", "error", "error_code"])
    return document


def documents_create_many(
    *, files: Sequence[tuple[str, bytes]], user: Any | None
) -> list[Document | UploadRefused]:
    """``document_create`` of each (filename, content), in order: its new document, or the
    refusal it would have met (DuplicateUpload for a file stored already). For the bulk
    ``ingest``: one query for duplicates, one sandboxed check for the PDFs
    (validation.inspect_uploads), one transaction and one round trip to the queue.

    A file stored already (same SHA-256) is refused as a duplicate before it is checked
    again, so running a folder again costs a hash per file. A second copy of a file in the
    same batch is a duplicate of the first. If an identical upload elsewhere wins a race, the
    batch is stored again file by file through ``document_create``.
    """
    results: list[Document | UploadRefused | None] = [None] * len(files)
    shas = [hashlib.sha256(content).hexdigest() for _, content in files]
    existing = {d.sha256: d for d in Document.objects.filter(sha256__in=set(shas))}
    first: dict[str, int] = {}
    copies: list[int] = []
    for index, ((name, _), sha) in enumerate(zip(files, shas, strict=True)):
        if sha in existing:
            results[index] = DuplicateUpload(
                _duplicate_message(name=name, existing=existing[sha]), existing=existing[sha]
            )
        elif sha in first:
            copies.append(index)
        else:
            first[sha] = index
    checked = inspect_uploads(
        files=[files[index] for index in first.values()],
        max_bytes=settings.UPLOAD_MAX_BYTES,
        max_pages=settings.UPLOAD_MAX_PAGES,
        limits=_check_limits(),
    )
    new: list[tuple[int, Document]] = []
    try:
        for index, info in zip(first.values(), checked, strict=True):
            if isinstance(info, UploadRefused):
                results[index] = info
                continue
            name, content = files[index]
            new.append((index, _stored(name, content, info, user=user)))
        with transaction.atomic():
            Document.objects.bulk_create([document for _, document in new])
            _enqueue_ingest_many([document.pk for _, document in new])
    except IntegrityError:
        # Lost a race with an identical upload: this batch again, one file at a time.
        for _, document in new:
            document.file.delete(save=False)
        for index, _ in new:
            results[index] = _create_alone(*files[index], user=user)
    except BaseException:
        for _, document in new:
            document.file.delete(save=False)
        raise
    else:
        for index, document in new:
            results[index] = document
        if new:
            logger.info("documents created n=%s", len(new))
    for index in copies:
        name, content = files[index]
        original = results[first[shas[index]]]
        if isinstance(original, Document):
            results[index] = DuplicateUpload(
                _duplicate_message(name=name, existing=original), existing=original
            )
        else:  # refused: refused again, in its own name
            results[index] = _create_alone(name, content, user=user)
    return [result for result in results if result is not None]


def _create_alone(name: str, content: bytes, *, user: Any | None) -> Document | UploadRefused:
    """``document_create`` of one file of a batch: its document or its refusal."""
    try:
        return document_create(filename=name, content=content, user=user)
    except UploadRefused as refused:
        return refused


class IngestSuperseded(Exception):
    """This job lost its claim (its heartbeat went stale and another job took the document
    over): its result is dropped so that the document is ingested, and classified, once."""


def _enqueue_ingest_many(document_ids: list[Any]) -> None:
    jobs.submit(INGEST, document_ids)


def _low_ocr_message(confidence: float) -> str:
    return (
        f"Text recognition on the scanned pages is unreliable (confidence {confidence:.0%}, "
        f"needed {settings.OCR_MIN_CONFIDENCE:.0%}). Upload a clearer scan: 300 dpi, "
        "straight, in good light, with dark text on a light background."
    )


def _unsafe_message(failed: SandboxFailed) -> str:
    return (
        f"The file could not be read safely: {failed.message}. Nothing else was affected. "
        "Print it to a new PDF (or split it) and upload that."
    )


def pages_extract(
    *,
    name: str,
    data: bytes,
    ocr: Any | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> list[PageContent]:
    """A file's pages with this deployment's OCR settings (tesseract unless ``ocr`` is given),
    read in the sandbox (documents.sandbox) under the SANDBOX_INGEST_* limits.

    Raises UnreadableDocument with a user-facing message, also when a limit stopped the read.
    """

    def progress(value: Any) -> None:
        if on_page is not None:
            on_page(*value)

    if ocr is None and name.lower().endswith(".pdf"):
        # Built here: pytesseract (and what it imports) loads before the child's limits apply.
        ocr = make_tesseract_engine(language=settings.OCR_LANGUAGE)

    try:
        pages: list[PageContent] = run_sandboxed(
            extract_checked,
            name,
            data,
            task="ingest",
            limits=Limits(
                memory_mb=settings.SANDBOX_INGEST_MEMORY_MB,
                cpu_seconds=settings.SANDBOX_INGEST_SECONDS,
                wall_seconds=settings.SANDBOX_INGEST_SECONDS,
                idle_seconds=settings.SANDBOX_PAGE_SECONDS,
            ),
            on_progress=progress,
            ocr=ocr,
            min_text_chars=settings.OCR_MIN_TEXT_CHARS,
            dpi=settings.OCR_DPI,
            max_points=settings.PAGE_MAX_POINTS,
            max_pixels=settings.PAGE_IMAGE_MAX_PIXELS,
        )
    except SandboxFailed as failed:
        raise UnreadableDocument(_unsafe_message(failed)) from None
    except UnreadableDocument:
        raise
    except Exception as exc:
        # Anything else the parse raised in the sandbox: the file fails its own document,
        # with a message, rather than the job crashing.
        raise UnreadableDocument(
            "The file could not be read: it is damaged. Upload the original file again, or "
            "print it to a new PDF and upload that."
        ) from exc
    return pages


PROGRESS_INTERVAL = 0.5  # seconds between two progress writes of one ingestion


def _record_progress(document_id: Any) -> Callable[[int, int], None]:
    """Write pages read so far on the row (outside any transaction, so lists see it live): at
    most one write per PROGRESS_INTERVAL, none in the first (a text page takes milliseconds;
    a write per page would cost more than reading it, and the ingestion's own save writes the
    last page)."""

    def record(done: int, _total: int) -> None:
        Document.objects.filter(pk=document_id).update(pages_done=done)

    return throttled(record, PROGRESS_INTERVAL)


def document_ingest(*, document: Document, ocr: Any | None = None) -> Document:
    """Extract the stored file into pages; replaces any pages from an earlier attempt.

    Raises UnreadableDocument with a user-facing message, and IngestSuperseded when the
    document is being ingested under a claim that is no longer this one's.
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
        if document.status == Document.Status.INGESTING and not jobs.holds(
            INGEST, document.pk, document.ingest_attempts
        ):
            raise IngestSuperseded(str(document.pk))
        Page.objects.filter(document=document).delete()
        bulk_insert(
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
                    hidden=p.hidden,
                    hidden_text=p.hidden_text,
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
        document.error_code = ""
        document.ingested_at = timezone.now()
        document.ingest_seconds = round(time.monotonic() - started, 3)
        if document.is_pdf and settings.PAGE_IMAGES_PRERENDER:
            page_images_queue(document_ids=[document.pk])
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
                "error_code",
                "ingested_at",
                "ingest_seconds",
                "updated_at",
            ]
        )
        events.publish(
            events.Event.DOCUMENT_READY,
            {
                "document_id": str(document.pk),
                "page_count": document.page_count,
                "quality": document.quality,
            },
        )
    logger.info(
        "document ingested id=%s pages=%s ocr_pages=%s hidden_text_pages=%s seconds=%s",
        document.pk,
        len(pages),
        len(ocr_pages),
        sum(1 for p in pages if p.hidden),  # how many, never what
        document.ingest_seconds,
    )
    return document


def document_fail(*, claim: jobs.Claim, message: str) -> None:
    """Fail the ingestion this job holds (a job that lost its claim changes nothing)."""
    claim.rows().update(
        status=Document.Status.FAILED, error=message, error_code="", updated_at=timezone.now()
    )


def document_retry(*, document: Document) -> bool:
    """Queue a failed (or abandoned) ingestion again. The stored file is reused."""
    if not document.can_retry:
        return False
    with transaction.atomic():
        updated = Document.objects.filter(pk=document.pk, status=document.status).update(
            status=Document.Status.UPLOADED, error="", error_code="", updated_at=timezone.now()
        )
        if updated != 1:
            return False
        jobs.submit(INGEST, [document.pk])
    logger.info("document retry queued id=%s", document.pk)
    return True


# -- page images ---------------------------------------------------------------------------------
#
# Each PDF page is drawn at two sizes (PAGE_SIZES) into the storage (documents.storage:
# MEDIA_ROOT or the bucket) under page-images/<document>/, both at once in one sandboxed child,
# by the render job after ingestion (RENDER) or, for a page it has not reached, by the first
# request that asks. A page is drawn by one process at a time on any machine (a lease on its
# row, page_lock); a page that cannot be drawn is remembered (Page.image_error) and not drawn
# again.

PAGE_SIZES = ("page", "thumb")  # the viewer's (PAGE_IMAGE_DPI) and the page strip's
# How often a process waiting for another's drawing of a page asks again (a query each time).
LOCK_POLL_SECONDS = 0.05
# A lease outlives the drawing it covers: the sandbox stops a drawing after
# SANDBOX_RENDER_SECONDS; reading the file and writing the images get this much more.
LEASE_MARGIN_SECONDS = 30


class PageGone(FileNotFoundError):
    """The page's row is gone: its document was deleted (documents.retention)."""


@dataclass(frozen=True)
class PageImage:
    """A page image as a request gets it: ``name`` (in the storage) when it is drawn;
    ``error`` (a Page.ImageError code) when the page cannot be drawn; neither when another
    process is still drawing it (ask again shortly)."""

    name: str | None = None
    error: str = ""

    def open(self) -> IO[bytes]:
        """The PNG, for reading (FileNotFoundError if it was deleted meanwhile)."""
        if self.name is None:
            raise FileNotFoundError("no image")
        return storage.open_file(self.name)


def _size_dpi(size: str) -> int:
    if size == "thumb":
        return THUMBNAIL_DPI
    if size == "page":
        return int(settings.PAGE_IMAGE_DPI)
    raise ValueError(f"unknown page image size {size!r}")


def _image_names(document: Document, number: int) -> dict[str, str]:
    """Where page ``number``'s images are kept, by size (the name carries the resolution, so
    a new PAGE_IMAGE_DPI draws anew)."""
    folder = storage.page_images_folder(document.pk)
    return {size: f"{folder}/{number}-{_size_dpi(size)}.png" for size in PAGE_SIZES}


def _image_error(document: Document, number: int) -> str:
    """The page's remembered failure ("" when none). Raises PageGone when the page is gone."""
    rows = Page.objects.filter(document=document, number=number)
    found: str | None = rows.values_list("image_error", flat=True).first()
    if found is None:
        raise PageGone(f"page {number} of {document.pk}")
    return found


@contextlib.contextmanager
def page_lock(document: Document, number: int, *, wait: float | None) -> Iterator[bool]:
    """The right to draw page ``number``, across every process and thread on every machine:
    a lease on the page's row (``Page.drawing_until``), taken by a conditional update when it
    is free or has run out. The database is the one thing every web process and worker
    shares, whether the images are on each machine's disk or in a bucket; a holder that dies
    leaves a lease that runs out (SANDBOX_RENDER_SECONDS + LEASE_MARGIN_SECONDS) rather than a
    page nobody may draw. Yields whether it was taken within ``wait`` seconds (None: however
    long the holder takes). Raises PageGone when the page's row is gone."""
    rows = Page.objects.filter(document=document, number=number)
    lease = timedelta(seconds=settings.SANDBOX_RENDER_SECONDS + LEASE_MARGIN_SECONDS)
    deadline = None if wait is None else time.monotonic() + wait
    while True:
        now = timezone.now()
        until = now + lease
        free = Q(drawing_until__isnull=True) | Q(drawing_until__lt=now)
        if rows.filter(free).update(drawing_until=until):
            break
        if not rows.exists():
            raise PageGone(f"page {number} of {document.pk}")
        if deadline is not None and time.monotonic() >= deadline:
            yield False
            return
        time.sleep(LOCK_POLL_SECONDS)
    try:
        yield True
    finally:
        rows.filter(drawing_until=until).update(drawing_until=None)  # ours only


# Drawing ahead yields the CPU to requests (an upload still being classified, a reviewer's page).
BACKGROUND_NICE = 10


def _read_file(document: Document) -> bytes:
    """The document's stored file. Raises FileNotFoundError when it is missing."""
    if not document.file:
        raise FileNotFoundError(f"document {document.pk} has no file")
    with document.file.open("rb") as handle:
        data: bytes = handle.read()
    return data


def _draw(
    document: Document,
    number: int,
    names: dict[str, str],
    data: bytes | None,
    *,
    background: bool = False,
) -> str:
    """Draw page ``number`` at every size in the sandbox (SANDBOX_RENDER_* limits; niced when
    ``background``) and store the images; the caller holds the page's lock. Returns "" or the
    failure's code, which is recorded on the page; except a background drawing's timeout,
    which may be the machine's load rather than the page: that page is left to the first
    request that asks for it, drawn then at the request's priority."""
    if data is None:
        data = _read_file(document)
    started = time.monotonic()
    try:
        pngs: list[bytes] = run_sandboxed(
            render_checked,
            data,
            number,
            task="render",
            limits=Limits(
                memory_mb=settings.SANDBOX_RENDER_MEMORY_MB,
                cpu_seconds=settings.SANDBOX_RENDER_SECONDS,
                wall_seconds=settings.SANDBOX_RENDER_SECONDS,
                nice=BACKGROUND_NICE if background else 0,
            ),
            dpis=[_size_dpi(size) for size in names],
            max_pixels=settings.PAGE_IMAGE_MAX_PIXELS,
        )
    except SandboxFailed as failed:
        code = failed.reason
    except Exception as exc:  # raised by the renderer in the child: PDFium refused the page
        logger.warning("page image id=%s page=%s: %s", document.pk, number, type(exc).__name__)
        code = Page.ImageError.DAMAGED
    else:
        for name, png in zip(names.values(), pngs, strict=True):
            storage.write_private(name, png)
        if not Page.objects.filter(document=document, number=number).exists():
            # Deleted while it was being drawn (documents.retention deletes the rows, then the
            # images): whichever of us comes second removes them.
            for name in names.values():
                storage.delete(name)
            raise PageGone(f"page {number} of {document.pk}")
        logger.info(
            "page image drawn id=%s page=%s seconds=%.3f",
            document.pk,
            number,
            time.monotonic() - started,
        )
        return ""
    if code not in Page.ImageError.values:
        code = Page.ImageError.CRASHED
    if background and code == Page.ImageError.TIMEOUT:
        logger.warning("page image id=%s page=%s: timed out in the background", document.pk, number)
        return code
    Page.objects.filter(document=document, number=number).update(image_error=code)
    logger.warning("page image failed id=%s page=%s code=%s", document.pk, number, code)
    return code


def page_image(
    *, document: Document, number: int, size: str = "page", wait: float | None = None
) -> PageImage:
    """Page ``number``'s image at ``size`` ("page" or "thumb") for a request: the stored
    image; else the page's remembered failure; else drawn now (both sizes, in the sandbox) by
    the first caller to take the page's lock, while the others wait for that one drawing, at
    most ``wait`` seconds each: after that they get PageImage() (still being drawn).

    Raises FileNotFoundError when the document's file is missing, PageGone (one) when the
    page is gone."""
    names = _image_names(document, number)
    if storage.exists(names[size]):
        return PageImage(name=names[size])
    error = _image_error(document, number)
    if error:
        return PageImage(error=error)
    with page_lock(document, number, wait=wait) as locked:
        if not locked:
            return PageImage()
        # Whoever held the lock before may have drawn the page, or found it cannot be drawn.
        if storage.exists(names[size]):
            return PageImage(name=names[size])
        error = _image_error(document, number) or _draw(document, number, names, None)
    return PageImage(error=error) if error else PageImage(name=names[size])


def page_images_render(*, document: Document) -> tuple[int, int]:
    """Draw every page of a PDF that lacks an image at some size and has no remembered
    failure, each under its lock (a page a request is drawing is waited for, not drawn
    twice), in the background (niced). Returns (pages drawn, pages that cannot be drawn). The
    render job's work. Stops when the document is deleted meanwhile.

    Raises FileNotFoundError when the document's file is missing."""
    if not document.is_pdf:
        return 0, 0
    errors = dict(Page.objects.filter(document=document).values_list("number", "image_error"))
    stored = storage.names_in(storage.page_images_folder(document.pk))  # one listing
    data: bytes | None = None
    drawn = failed = 0
    try:
        for number in range(1, document.page_count + 1):
            names = _image_names(document, number)
            if errors.get(number):
                failed += 1
                continue
            if all(name.rsplit("/", 1)[1] in stored for name in names.values()):
                continue
            with page_lock(document, number, wait=None):
                if all(storage.exists(name) for name in names.values()):
                    continue
                if _image_error(document, number):
                    failed += 1
                    continue
                if data is None:
                    data = _read_file(document)
                code = _draw(document, number, names, data, background=True)
                if not code:
                    drawn += 1
                elif code != Page.ImageError.TIMEOUT:  # not remembered: see _draw
                    failed += 1
    except PageGone:
        logger.info("page images id=%s: the document was deleted meanwhile", document.pk)
    return drawn, failed


def page_images_delete(*, document: Document) -> int:
    """Delete every stored image of the document's pages (at any size drawn so far).
    Returns how many there were."""
    return storage.delete_folder(storage.page_images_folder(document.pk))


def page_images_queue(*, document_ids: Sequence[Any]) -> None:
    """Queue the drawing of these PDFs' page images (RENDER), after the surrounding
    transaction commits. A document being drawn already is left to its job."""
    ids = list(document_ids)
    if not ids:
        return
    now = timezone.now()
    rows = ImageRender.objects.filter(document_id__in=ids)
    present = set(rows.values_list("document_id", flat=True))
    rows.exclude(status=ImageRender.Status.RUNNING).update(
        status=ImageRender.Status.QUEUED, error_code="", attempts=0, queued_at=now
    )
    ImageRender.objects.bulk_create(
        [
            ImageRender(document_id=pk, status=ImageRender.Status.QUEUED, queued_at=now)
            for pk in ids
            if pk not in present
        ],
        ignore_conflicts=True,
    )
    jobs.submit(RENDER, ids)


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
