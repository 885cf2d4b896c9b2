from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction
from django.db.models import Q

from core import jobs
from documents.models import Document, ImageRender, Page
from documents.services import page_images_queue

BATCH = 500


class Command(BaseCommand):
    help = (
        "Queue the drawing of page images for ingested PDFs that have none drawn ahead (those "
        "ingested before the render job existed, or whose job failed), or for the given "
        "documents. Without Redis they are drawn here, before the command ends."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("documents", nargs="*", help="document ids (default: all missing)")
        parser.add_argument(
            "--retry-failed",
            action="store_true",
            help="also draw again the pages that could not be drawn (their failure is forgotten)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        pdfs = Document.objects.filter(status=Document.Status.READY, mime_type=Document.MIME_PDF)
        if options["documents"]:
            chosen = pdfs.filter(pk__in=options["documents"])
        else:
            missing = Q(image_render__isnull=True) | Q(
                image_render__status=ImageRender.Status.FAILED
            )
            if options["retry_failed"]:
                missing |= Q(pages__image_error__gt="")
            chosen = pdfs.filter(missing).distinct()
        ids = list(chosen.values_list("pk", flat=True))
        if options["retry_failed"]:
            forgotten = Page.objects.filter(document_id__in=ids).exclude(image_error="")
            self.stdout.write(f"{forgotten.update(image_error='')} failed page(s) to draw again")
        started = time.monotonic()
        for start in range(0, len(ids), BATCH):
            with transaction.atomic():
                page_images_queue(document_ids=ids[start : start + BATCH])
        self.stdout.write(f"{len(ids)} document(s) queued for drawing")
        if ids and jobs.jobs_run_inline():
            jobs.drain_background(timeout=float("inf"))
            renders = ImageRender.objects.filter(document_id__in=ids)
            done = renders.filter(status=ImageRender.Status.DONE)
            self.stdout.write(
                f"drawn in {time.monotonic() - started:.1f} s: {done.count()} document(s) done, "
                f"{renders.exclude(status=ImageRender.Status.DONE).count()} not, "
                f"{sum(done.values_list('pages_failed', flat=True))} page(s) cannot be drawn"
            )
