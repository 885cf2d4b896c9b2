from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import JSONField, Value
from django.utils import timezone

from core import jobs


def document_upload_path(instance: Document, filename: str) -> str:
    # The stored name carries no part of the original filename, which may hold patient names.
    suffix = ".pdf" if instance.mime_type == Document.MIME_PDF else ".txt"
    return f"documents/{timezone.now():%Y/%m}/{instance.pk}{suffix}"


class Document(models.Model):
    MIME_PDF = "application/pdf"
    MIME_TEXT = "text/plain"
    QUEUE_UNREACHABLE = jobs.QUEUE_UNREACHABLE  # error_code: nothing wrong with the file

    class Status(models.TextChoices):
        UPLOADED = "uploaded", "Uploaded"
        INGESTING = "ingesting", "Ingesting"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"
        # Past RETENTION_DAYS (documents.retention): the file, pages and page images are
        # gone, and so are the filename and the file's hash; the row stays, so that the
        # document's ground truth (de-identified) keeps the id it was exported under.
        DELETED = "deleted", "Deleted (retention)"

    class Quality(models.TextChoices):
        OK = "ok", "OK"
        LOW_OCR = "low_ocr", "Low OCR confidence"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    file = models.FileField(upload_to=document_upload_path, max_length=255)
    original_filename = models.CharField(max_length=255)
    # None once the document is deleted: a file's hash could still tell whether a given file
    # was held, and a new upload of the same file is a new document.
    sha256 = models.CharField(max_length=64, unique=True, null=True, blank=True)
    mime_type = models.CharField(max_length=64)
    size_bytes = models.PositiveBigIntegerField()
    page_count = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.UPLOADED)
    error = models.TextField(blank=True)
    # Why it failed, for machines (core.jobs codes: queue_unreachable failures are resumed by
    # the recovery pass; worker_lost ones are not).
    error_code = models.CharField(max_length=32, blank=True)
    quality = models.CharField(max_length=16, choices=Quality.choices, default=Quality.OK)
    quality_message = models.TextField(blank=True)
    ocr_confidence = models.FloatField(null=True, blank=True)
    ocr_page_count = models.PositiveIntegerField(default=0)
    ingest_attempts = models.PositiveIntegerField(default=0)
    pages_done = models.PositiveIntegerField(default=0)  # ingestion progress, page by page
    ingest_started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)  # renewed while a job ingests
    ingested_at = models.DateTimeField(null=True, blank=True)
    ingest_seconds = models.FloatField(null=True, blank=True)
    options = models.JSONField(default=dict, blank=True)  # processing options (JSON API)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)  # when retention deleted it

    class Meta:
        ordering = ["-created_at"]
        # Also retention's: documents of a status uploaded before a day.
        indexes = [models.Index(fields=["status", "-created_at"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(
                    status__in=["uploaded", "ingesting", "ready", "failed", "deleted"]
                ),
                name="document_status_valid",
            ),
            # A deleted document keeps nothing that names the patient or the file.
            models.CheckConstraint(
                condition=~models.Q(status="deleted")
                | models.Q(original_filename="", sha256__isnull=True, deleted_at__isnull=False),
                name="document_deleted_is_emptied",
            ),
        ]

    def __str__(self) -> str:
        return self.original_filename or f"Deleted document {self.pk}"

    @property
    def is_deleted(self) -> bool:
        return self.status == self.Status.DELETED

    @property
    def is_pdf(self) -> bool:
        return self.mime_type == self.MIME_PDF

    @property
    def is_working(self) -> bool:
        return self.status in {self.Status.UPLOADED, self.Status.INGESTING}

    def ingest_is_stale(self, *, now: datetime | None = None) -> bool:
        """An ingestion whose heartbeat stopped: its worker died."""
        return self.status == self.Status.INGESTING and jobs.is_stale(self.heartbeat_at, now=now)

    @property
    def can_retry(self) -> bool:
        return self.status == self.Status.FAILED or self.ingest_is_stale()

    @property
    def progress_percent(self) -> int:
        if not self.page_count:
            return 0
        return min(100, round(100 * self.pages_done / self.page_count))


class Page(models.Model):
    class Method(models.TextChoices):
        TEXT_LAYER = "text_layer", "Text layer"
        OCR = "ocr", "OCR"

    class ImageError(models.TextChoices):
        # The sandbox's reasons (documents.sandbox.SandboxFailed.reason), and the renderer's.
        MEMORY = "memory", "Needs more memory than a page may use"
        CPU = "cpu", "Takes more processing time than a page may use"
        TIMEOUT = "timeout", "Took too long to draw"
        CRASHED = "crashed", "The PDF renderer stopped on it"
        TOO_LARGE = "too_large", "Produces more data than a page may"
        DAMAGED = "damaged", "The page is damaged"

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="pages")
    number = models.PositiveIntegerField()
    text = models.TextField(blank=True)
    paragraphs = models.JSONField(default=list)
    block_types = models.JSONField(default=list)
    has_tables = models.BooleanField(default=False)
    extraction_method = models.CharField(
        max_length=16, choices=Method.choices, default=Method.TEXT_LAYER
    )
    ocr_confidence = models.FloatField(null=True, blank=True)
    # Word boxes aligned with ``text``: [[start, end, x0, top, x1, bottom], ...], offsets into
    # the text and the box in fractions of the page (see documents.boxes). Empty for text
    # files and for pages ingested before boxes were kept.
    boxes = models.JSONField(default=list, blank=True)
    width = models.FloatField(null=True, blank=True)  # PDF points; None for text files
    height = models.FloatField(null=True, blank=True)
    # Text on the page that a reader cannot see (documents.hidden), left out of ``text``,
    # paragraphs and boxes, so out of classification and evidence: one entry per way it was
    # hidden, [{"kind": "render_mode", "words": 41, "boxes": [[x0, top, x1, bottom], ...]}]
    # with boxes in fractions of the page; and that text, kept for an auditor (admin only:
    # never shown to a model, a reviewer's page, an export or a log).
    # Database defaults too: a worker still running the code before these fields can insert.
    hidden = models.JSONField(default=list, blank=True, db_default=Value([], JSONField()))
    hidden_text = models.TextField(blank=True, default="", db_default="")
    # Why the page could not be drawn as an image ("" while nothing failed). Remembered, so
    # that a page that fails is not drawn again on every request (documents.services.page_image).
    image_error = models.CharField(
        max_length=16, choices=ImageError.choices, blank=True, default="", db_default=""
    )
    # The lease of the process drawing this page's images (documents.services.page_lock):
    # one drawing per page at a time across every process and machine; a lease whose holder
    # died runs out by itself.
    drawing_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["document", "number"]
        constraints = [
            models.UniqueConstraint(fields=["document", "number"], name="page_unique_number"),
            models.CheckConstraint(condition=models.Q(number__gte=1), name="page_number_from_1"),
        ]

    def __str__(self) -> str:
        return f"{self.document} p.{self.number}"

    @property
    def blocks(self) -> list[tuple[str, str]]:
        """(paragraph, block type) pairs in reading order."""
        types = list(self.block_types) + ["paragraph"] * (
            len(self.paragraphs) - len(self.block_types)
        )
        return list(zip(self.paragraphs, types, strict=False))


class ImageRender(models.Model):
    """Drawing a PDF's page images ahead of the review pages (documents.jobs.RENDER): queued
    when its ingestion commits, running while a job draws page after page, done when every
    page has its images or a remembered failure (Page.image_error)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    document = models.OneToOneField(
        Document, primary_key=True, on_delete=models.CASCADE, related_name="image_render"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error_code = models.CharField(max_length=32, blank=True)  # core.jobs codes
    attempts = models.PositiveIntegerField(default=0)
    queued_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    pages_drawn = models.PositiveIntegerField(default=0)  # by this job (not found cached)
    pages_failed = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "queued_at"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=["queued", "running", "done", "failed"]),
                name="image_render_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"page images of {self.document_id}: {self.status}"
