from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core import jobs
from core.jobs import jobs_run_inline
from documents.jobs import INGEST
from documents.models import Document
from documents.services import DuplicateUpload, documents_create_many
from documents.validation import UploadRefused, check_size

SUFFIXES = {".pdf", ".txt"}
PROGRESS_SECONDS = 10.0  # at most one progress line this often (and one at the end)


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


def batches(files: list[Path], size: int) -> Iterator[list[Path]]:
    for start in range(0, len(files), size):
        yield files[start : start + size]


class Command(BaseCommand):
    help = (
        "Upload PDF and text files (or every .pdf/.txt below folders) and ingest them. Files "
        "stored already (same SHA-256) are skipped, so running it again on the same folder "
        "creates nothing twice and picks up where an interrupted run stopped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", help="files or folders")
        parser.add_argument("--user", help="record this username as the uploader")
        parser.add_argument(
            "--batch-size",
            type=int,
            default=50,
            help="files checked, stored and queued together (default 50)",
        )
        parser.add_argument(
            "--verbose", action="store_true", help="one line per file, not only progress"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"No user named {options['user']!r}.")
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        verbose: bool = options["verbose"]
        files = collect_files(options["paths"])
        inline = jobs_run_inline()
        created: list[Document] = []  # kept only when jobs run inline, to report each one
        uploaded = refused = duplicates = requeued = done = 0
        started = last_progress = time.monotonic()
        for batch in batches(files, options["batch_size"]):
            readable: list[tuple[Path, bytes]] = []
            for path in batch:
                try:
                    check_size(
                        name=path.name,
                        size=path.stat().st_size,
                        max_bytes=settings.UPLOAD_MAX_BYTES,
                    )
                    readable.append((path, path.read_bytes()))
                except UploadRefused as exc:
                    refused += 1
                    self.stderr.write(f"refused  {path}: {exc.message}")
                except OSError as exc:
                    refused += 1
                    self.stderr.write(f"refused  {path}: it cannot be read ({exc.strerror}).")
            results = documents_create_many(
                files=[(path.name, data) for path, data in readable], user=user
            )
            present: list[Document] = []
            for (path, _), result in zip(readable, results, strict=True):
                if isinstance(result, Document):
                    uploaded += 1
                    if inline:
                        created.append(result)
                    if verbose:
                        self.stdout.write(f"uploaded {path} -> {result.pk}")
                elif isinstance(result, DuplicateUpload):
                    duplicates += 1
                    present.append(result.existing)
                    if verbose:
                        self.stdout.write(f"skipped  {path}: {result.message}")
                else:
                    refused += 1
                    self.stderr.write(f"refused  {path}: {result.message}")
            # Present from an earlier run that stopped before queueing them: queue them now.
            requeued += jobs.requeue_lost(INGEST, [document.pk for document in present])
            done += len(batch)
            now = time.monotonic()
            if not verbose and (now - last_progress >= PROGRESS_SECONDS or done == len(files)):
                last_progress = now
                self.stdout.write(
                    f"{done}/{len(files)} file(s) in {now - started:.0f} s: {uploaded} uploaded, "
                    f"{duplicates} already present, {refused} refused "
                    f"({done / max(now - started, 1e-6):.0f} files/s)"
                )

        failed = 0
        if inline:
            for document in created:
                document.refresh_from_db()
                if document.status == Document.Status.FAILED:
                    failed += 1
                    self.stderr.write(f"failed   {document.original_filename}: {document.error}")
                elif verbose or document.quality_message:
                    line = (
                        f"{document.status:<9}{document.original_filename} "
                        f"({document.page_count} p.)"
                    )
                    if document.quality_message:
                        line += f": {document.quality_message}"
                    self.stdout.write(line)
        else:
            self.stdout.write(f"{uploaded} ingestion job(s) queued for the RQ workers.")
        if requeued:
            self.stdout.write(
                f"{requeued} document(s) stored by an earlier run had lost their ingestion job; "
                "queued again."
            )
        self.stdout.write(
            f"{len(files)} file(s): {uploaded} uploaded, {duplicates} already present, "
            f"{refused} refused, {failed} failed to ingest."
        )
        if refused or failed:
            raise CommandError("Some files were not ingested; see the messages above.")
