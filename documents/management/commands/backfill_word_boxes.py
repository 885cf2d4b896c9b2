from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from documents.models import Document
from documents.services import document_boxes_backfill


class Command(BaseCommand):
    help = (
        "Give the pages of documents ingested before word boxes were kept their boxes, so "
        "review pages can draw evidence on them. Safe to run again."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        documents = Document.objects.filter(
            status=Document.Status.READY, mime_type=Document.MIME_PDF, pages__boxes=[]
        ).distinct()
        total = 0
        for document in documents.iterator():
            filled = document_boxes_backfill(document=document)
            total += filled
            self.stdout.write(f"{document.pk}: {filled} page(s)")
        self.stdout.write(f"{total} page(s) given word boxes.")
