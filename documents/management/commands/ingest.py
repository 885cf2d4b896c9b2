from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from config.jobs import jobs_run_inline
from documents.models import Document
from documents.services import document_create
from documents.validation import UploadRefused, check_size

SUFFIXES = {".pdf", ".txt"}


def collect_files(paths: list[str]) -> list[Path]:
    """Files named directly, and every .pdf/.txt below the folders named, sorted."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
            )
        elif path.is_file():
            found.append(path)
        else:
            raise CommandError(f"{raw}: no such file or folder.")
    return found


class Command(BaseCommand):
    help = "Upload PDF and text files (or every .pdf/.txt below folders) and ingest them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", help="files or folders")
        parser.add_argument("--user", help="record this username as the uploader")

    def handle(self, *args: Any, **options: Any) -> None:
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"No user named {options['user']!r}.")
        files = collect_files(options["paths"])
        created: list[Document] = []
        refused = duplicates = 0
        for path in files:
            try:
                check_size(
                    name=path.name, size=path.stat().st_size, max_bytes=settings.UPLOAD_MAX_BYTES
                )
                document = document_create(filename=path.name, content=path.read_bytes(), user=user)
            except UploadRefused as exc:
                if exc.code == "duplicate":
                    duplicates += 1
                    self.stdout.write(f"skipped  {path}: {exc.message}")
                else:
                    refused += 1
                    self.stderr.write(f"refused  {path}: {exc.message}")
                continue
            created.append(document)
            self.stdout.write(f"uploaded {path} -> {document.pk}")

        failed = 0
        if jobs_run_inline():
            for document in created:
                document.refresh_from_db()
                line = (
                    f"{document.status:<9}{document.original_filename} ({document.page_count} p.)"
                )
                if document.status == Document.Status.FAILED:
                    failed += 1
                    line += f": {document.error}"
                elif document.quality_message:
                    line += f": {document.quality_message}"
                self.stdout.write(line)
        else:
            self.stdout.write(f"{len(created)} ingestion job(s) queued for the RQ workers.")
        self.stdout.write(
            f"{len(files)} file(s): {len(created)} uploaded, {duplicates} already present, "
            f"{refused} refused, {failed} failed to ingest."
        )
        if refused or failed:
            raise CommandError("Some files were not ingested; see the messages above.")
