from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from review.exports import FORMATS, ExportFilter, ExportUnavailable, export_bytes, export_write
from review.models import GroundTruth

BINARY = {"parquet", "hf"}


class Command(BaseCommand):
    help = (
        "Export ground truth with provenance as JSONL, CSV, a FHIR R4 Bundle, Parquet or a "
        "Hugging Face dataset folder (the same rows as the export page for the same filter)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=list(FORMATS), default="jsonl")
        parser.add_argument("--start", type=date.fromisoformat, help="YYYY-MM-DD")
        parser.add_argument("--end", type=date.fromisoformat, help="YYYY-MM-DD")
        parser.add_argument("--source", choices=GroundTruth.Source.values, default="")
        parser.add_argument("--type", dest="doc_type", default="")
        parser.add_argument("--all-versions", action="store_true")
        parser.add_argument(
            "--out",
            help="file to write (a folder for --format hf); default: standard output "
            "(jsonl, csv, fhir)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        fmt = options["format"]
        export_filter = ExportFilter(
            start=options["start"],
            end=options["end"],
            source=options["source"],
            doc_type=options["doc_type"],
            all_versions=options["all_versions"],
        )
        records = export_filter.selection()
        out = options["out"]
        if fmt in BINARY and not out:
            raise CommandError(f"--format {fmt} writes files: give --out PATH.")
        try:
            if out:
                path = Path(out)
                if fmt == "hf" and path.exists() and (not path.is_dir() or any(path.iterdir())):
                    raise CommandError(f"{path} is not empty: give a new or empty folder.")
                export_write(
                    records,
                    fmt=fmt,
                    out=path,
                    export_filter=export_filter,
                    site_url=settings.SITE_URL,
                )
                self.stderr.write(f"Wrote {records.count()} record(s) to {out}")
                return
            body = export_bytes(
                records, fmt=fmt, export_filter=export_filter, site_url=settings.SITE_URL
            )
        except ExportUnavailable as refused:
            raise CommandError(refused.message) from None
        if not records.exists():
            raise CommandError("No ground truth matches.")
        self.stdout.write(body.decode(), ending="")
