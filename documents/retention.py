"""Retention: documents uploaded more than RETENTION_DAYS ago are deleted (0 keeps them for
ever), while their ground truth survives de-identified and the audit log records each
deletion.

What goes: the stored file, the pages (text, word boxes, tables), the page images at every
size, the page-image job's row, the original filename and the file's SHA-256; and, through
``hooks.document_erasing`` (config.wiring), what the apps above hold of the document: its
runs (attempts, issues, extracted fields), its packets, decisions and checks. What stays: the
``Document`` row as a tombstone (id, status ``deleted``, ``deleted_at``, type, size, page
count, upload time and uploader), so that its ground truth keeps the document id it was
exported under; the ground truth itself, de-identified by review (labels, versions, states,
sources, reviewers, dates; coded field values only); and the audit log.

A document something still works on is kept past the age until that work ends
(``hooks.retention_holds``): its ingestion (here), a run (reliability), an open packet, blind
audit or second review (review). Each pass reports what it held and why.

Each document is deleted in two steps, both safe to repeat, so that a pass that stops part way
(a worker killed, the bucket unreachable) loses nothing and leaves nothing behind:

1. one short transaction, its row locked: checked again (still past the age, nothing holds
   it), the apps above erase their part, the pages and the render row are deleted and the row
   becomes a tombstone; its ``file`` name is kept;
2. after the commit, the file and the page images are deleted from the storage (MEDIA_ROOT or
   the bucket), then the tombstone's ``file`` is emptied. A tombstone whose file is not
   emptied yet is finished by the next pass.

A page drawn while its document is deleted is removed by whichever comes second (the drawing
looks for its page once its images are written: documents.services._draw).

The pass runs from the recovery pass (config.recovery: every RQ worker, at most every
RETENTION_CHECK_SECONDS; without Redis, ``manage.py recover`` from cron) and on demand
(``manage.py apply_retention``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from documents import hooks, storage
from documents.models import Document, ImageRender, Page

logger = logging.getLogger(__name__)

BATCH = 200  # documents deleted by one pass at most (the next pass goes on)
CHUNK = 500  # candidates whose holds are asked at once
# Hold codes of this app (the apps above add their own through hooks.retention_holds).
HOLD_INGESTING = "ingesting"


@dataclass
class RetentionReport:
    """What one pass did: ``deleted`` the ids of the documents it deleted, ``held`` how many
    documents past the age it kept, by reason code, ``files`` and ``images`` how many stored
    files it removed, ``more`` whether it stopped at its batch limit with documents left."""

    cutoff: datetime | None = None
    deleted: list[str] = field(default_factory=list)
    held: Counter[str] = field(default_factory=Counter)
    files: int = 0
    images: int = 0
    more: bool = False
    errors: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "cutoff": self.cutoff.isoformat() if self.cutoff else None,
            "deleted": len(self.deleted),
            "held": dict(self.held),
            "files": self.files,
            "images": self.images,
            "more": self.more,
            "errors": self.errors,
        }


def retention_cutoff(now: datetime | None = None) -> datetime | None:
    """Documents uploaded before this are past the retention age; None: kept for ever."""
    days = int(settings.RETENTION_DAYS)
    if days <= 0:
        return None
    return (now or timezone.now()) - timedelta(days=days)


def _expired(cutoff: datetime) -> Any:
    return (
        Document.objects.filter(created_at__lt=cutoff)
        .exclude(status=Document.Status.DELETED)
        .order_by("created_at", "pk")
    )


def retention_holds(document_ids: Sequence[Any]) -> dict[Any, str]:
    """Which of ``document_ids`` must be kept for now, with the reason's code: still being
    ingested (here), or held by an app above (hooks.retention_holds); the first reason found
    is given."""
    ids = list(document_ids)
    held: dict[Any, str] = dict.fromkeys(
        Document.objects.filter(
            pk__in=ids, status__in=[Document.Status.UPLOADED, Document.Status.INGESTING]
        ).values_list("pk", flat=True),
        HOLD_INGESTING,
    )
    for answer in hooks.retention_holds(ids):
        for pk, code in answer.items():
            held.setdefault(pk, code)
    return held


def document_erase(*, document_id: Any, cutoff: datetime, now: datetime | None = None) -> bool:
    """Step 1 for one document, in one transaction with its row locked: if it is still past
    ``cutoff``, not deleted and held by nothing, the apps above erase their part
    (hooks.document_erasing, which records the deletion in the audit log), its pages and
    render row are deleted and the row becomes a tombstone (its ``file`` name kept for step
    2). Returns whether it did. A document locked by another pass is left to it."""
    now = now or timezone.now()
    with transaction.atomic():
        document = (
            Document.objects.select_for_update(skip_locked=True)
            .filter(pk=document_id, created_at__lt=cutoff)
            .exclude(status=Document.Status.DELETED)
            .first()
        )
        if document is None or retention_holds([document.pk]):
            return False
        record = {
            "reason": "retention",
            "retention_days": int(settings.RETENTION_DAYS),
            "uploaded_at": document.created_at.isoformat(),
            "deleted_at": now.isoformat(),
            "status_before": document.status,
            "mime_type": document.mime_type,
            "page_count": document.page_count,
            "pages_deleted": Page.objects.filter(document=document).count(),
        }
        hooks.document_erasing(document, record)
        Page.objects.filter(document=document).delete()
        ImageRender.objects.filter(document=document).delete()
        Document.objects.filter(pk=document.pk).update(
            status=Document.Status.DELETED,
            deleted_at=now,
            original_filename="",
            sha256=None,
            error="",
            error_code="",
            quality_message="",
            updated_at=now,
        )
    logger.info("document deleted (retention) id=%s", document_id)
    return True


def document_files_delete(*, document: Document) -> tuple[int, int]:
    """Step 2 for one tombstone: delete its file and its page images from the storage, then
    empty its ``file``. Returns (files, images) deleted. Raises what the storage raises (the
    next pass tries again)."""
    files = 0
    if document.file.name:
        storage.delete(document.file.name)
        files = 1
    images = storage.delete_folder(storage.page_images_folder(document.pk))
    Document.objects.filter(pk=document.pk, status=Document.Status.DELETED).update(file="")
    return files, images


def _files_left(report: RetentionReport, *, limit: int) -> None:
    """Step 2 for the tombstones whose files are still stored (this pass's, and those a
    failed pass left behind)."""
    left = Document.objects.filter(status=Document.Status.DELETED).exclude(file="")
    for document in left.order_by("deleted_at")[:limit]:
        try:
            files, images = document_files_delete(document=document)
        except Exception as exc:  # the bucket did not answer: the next pass tries again
            logger.warning(
                "retention: files of %s not deleted yet: %s: %s",
                document.pk,
                type(exc).__name__,
                exc,
            )
            report.errors += 1
            continue
        report.files += files
        report.images += images


def retention_apply(
    *, now: datetime | None = None, limit: int = BATCH, dry_run: bool = False
) -> RetentionReport:
    """One retention pass: delete up to ``limit`` documents past RETENTION_DAYS, oldest
    first, that nothing holds (``document_erase`` then ``document_files_delete`` for each),
    and count those held, by reason. With ``dry_run`` nothing changes: ``deleted`` lists the
    documents that would be. Does nothing when RETENTION_DAYS is 0, except finishing the
    file deletions an earlier pass left."""
    now = now or timezone.now()
    report = RetentionReport(cutoff=retention_cutoff(now))
    if report.cutoff is not None:
        candidates = _expired(report.cutoff).values_list("created_at", "pk")
        chunk = candidates
        while len(report.deleted) < limit:
            rows = list(chunk[:CHUNK])
            if not rows:
                break
            ids = [pk for _, pk in rows]
            held = retention_holds(ids)
            report.held.update(held.values())
            for pk in ids:
                if pk in held:
                    continue
                if len(report.deleted) >= limit:
                    report.more = True
                    break
                if dry_run or document_erase(document_id=pk, cutoff=report.cutoff, now=now):
                    report.deleted.append(str(pk))
            if report.more or len(rows) < CHUNK:
                break
            # The next chunk, after this one's last (held documents stay candidates).
            created, pk = rows[-1]
            chunk = candidates.filter(created_at__gte=created).exclude(
                created_at=created, pk__lte=pk
            )
        if len(report.deleted) >= limit and not report.more:
            report.more = _expired(report.cutoff).exclude(pk__in=report.deleted).exists()
    if not dry_run:
        _files_left(report, limit=max(limit, len(report.deleted)))
    if report.deleted or report.errors:
        logger.info("retention pass: %s", report.as_dict())
    return report
