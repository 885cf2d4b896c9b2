from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from documents.models import Document
from reliability.models import Run
from reliability.services import RunRefused, run_start


class Command(BaseCommand):
    help = "Start a new classification run for a document (earlier runs are kept)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("document_id")
        parser.add_argument("--preset", default=None, help="real-time, batch or clinical")
        parser.add_argument(
            "--fresh",
            action="store_true",
            help="ask the language model again instead of answering from the response cache",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        document = Document.objects.filter(pk=options["document_id"]).first()
        if document is None:
            raise CommandError(f"No document {options['document_id']}.")
        try:
            run = run_start(document=document, preset=options["preset"], fresh=options["fresh"])
        except RunRefused as refused:
            raise CommandError(str(refused)) from None
        run.refresh_from_db()
        line = f"Run {run.pk}: {run.status}"
        if run.status == Run.Status.COMPLETED:
            line += f", {run.final_decision} ({run.stopped_reason})"
        self.stdout.write(line)
