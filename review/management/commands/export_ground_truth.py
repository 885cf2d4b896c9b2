from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from review.models import GroundTruth
from review.selectors import ground_truth_selection
from review.serializers import export_ground_truth
from review.services import export_audit


class Command(BaseCommand):
    help = "Export ground truth as JSONL or CSV with provenance (same bytes as the export page)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
        parser.add_argument("--start", type=date.fromisoformat, help="YYYY-MM-DD")
        parser.add_argument("--end", type=date.fromisoformat, help="YYYY-MM-DD")
        parser.add_argument("--source", choices=GroundTruth.Source.values, default="")
        parser.add_argument("--type", dest="doc_type", default="")
        parser.add_argument("--all-versions", action="store_true")
        parser.add_argument(
            "--with-text",
            action="store_true",
            help="add each page's text (patient data: for training a model)",
        )
        parser.add_argument("--out", help="file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        records = ground_truth_selection(
            start=options["start"],
            end=options["end"],
            source=options["source"],
            doc_type=options["doc_type"],
            all_versions=options["all_versions"],
        )
        body = export_ground_truth(records, fmt=options["format"], with_text=options["with_text"])
        count = records.count()
        filters = {
            key: options[key]
            for key in ("format", "start", "end", "source", "doc_type", "all_versions", "with_text")
        }
        export_audit(user=None, body=body, filters={**filters, "via": "command"}, records=count)
        if options["out"]:
            Path(options["out"]).write_bytes(body)
            self.stderr.write(f"Wrote {count} record(s) to {options['out']}")
        elif body:
            self.stdout.write(body.decode(), ending="")
        else:
            raise CommandError("No ground truth matches.")
