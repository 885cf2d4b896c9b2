from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from documents.retention import BATCH, retention_apply


class Command(BaseCommand):
    help = (
        "Delete the documents uploaded more than RETENTION_DAYS ago (their file, pages, page "
        "images, runs and review records), keeping their ground truth de-identified and "
        "recording each deletion in the audit log. Documents whose ingestion, run, review, "
        "blind audit or second review is still open are kept until it ends. Workers do this "
        "by themselves (the recovery pass); this runs it now, or from cron."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="say what would be deleted; change nothing"
        )
        parser.add_argument(
            "--limit",
            type=int,
            default=0,
            help=f"at most this many documents (default: all, {BATCH} at a time)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.RETENTION_DAYS:
            self.stdout.write("RETENTION_DAYS is 0: documents are kept for ever.")
        dry_run, limit = options["dry_run"], options["limit"]
        deleted = files = images = 0
        held: dict[str, int] = {}
        while True:
            batch = min(BATCH, limit - deleted) if limit else BATCH
            report = retention_apply(limit=batch, dry_run=dry_run)
            deleted += len(report.deleted)
            files += report.files
            images += report.images
            held = dict(report.held)  # every pass sees the same held documents
            if dry_run or not report.more or (limit and deleted >= limit):
                break
        if report.cutoff is not None:
            verb = "would be deleted" if dry_run else "deleted"
            self.stdout.write(
                f"{deleted} document(s) uploaded before {report.cutoff:%Y-%m-%d %H:%M} {verb}"
                + ("" if dry_run else f" ({files} file(s) and {images} page image(s) removed)")
                + "."
            )
            for code, count in sorted(held.items()):
                self.stdout.write(f"{count} kept for now: {code}")
        elif files or images:
            self.stdout.write(f"{files} file(s), {images} page image(s) left earlier removed.")
        if report.errors:
            self.stderr.write(f"{report.errors} document(s)' files could not be removed yet.")
