from __future__ import annotations

from contextlib import closing
from datetime import date
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import Refused
from review.exports import (
    FORMATS,
    STATE_CODES,
    STATE_DEFAULTS,
    STREAMED,
    ExportFilter,
    ExportUnavailable,
    Streamed,
    export_bytes,
    export_digest,
    export_state,
    export_stream,
    export_write,
)
from review.models import GroundTruth
from review.services.audit_log import export_audit

BINARY = {"parquet", "hf"}


class Command(BaseCommand):
    help = (
        "Export ground truth with provenance as JSONL, CSV, a FHIR R4 Bundle, Parquet or a "
        "Hugging Face dataset folder (same records and bytes as the export page). The command "
        "runs as the operator, with no user: every record the filter chooses is exported, "
        "documents under a blind check included (the page and the API apply "
        "review.visibility for their user)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=list(FORMATS), default="jsonl")
        parser.add_argument("--start", type=date.fromisoformat, help="YYYY-MM-DD")
        parser.add_argument("--end", type=date.fromisoformat, help="YYYY-MM-DD")
        parser.add_argument("--source", choices=GroundTruth.Source.values, default="")
        parser.add_argument("--type", dest="doc_type", default="")
        parser.add_argument(
            "--state",
            choices=STATE_CODES,
            help="all, final or provisional. " + STATE_DEFAULTS,
        )
        parser.add_argument("--all-versions", action="store_true")
        parser.add_argument(
            "--with-text",
            action="store_true",
            help="add each page's text (patient data: for training a model); tabular formats",
        )
        parser.add_argument(
            "--deidentify",
            action="store_true",
            help="replace names, dates, record numbers, phone numbers, addresses and other PHI "
            "in every text (page text, snippets, field values, filename, reason, note) by "
            "consistent surrogates; each row records the method and its version",
        )
        parser.add_argument(
            "--out",
            help="file to write (a folder for --format hf); default: standard output "
            "(jsonl, csv, fhir)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        fmt = options["format"]
        try:
            export_filter = ExportFilter(
                start=options["start"],
                end=options["end"],
                source=options["source"],
                doc_type=options["doc_type"],
                state=export_state(options["state"], fmt=fmt),
                all_versions=options["all_versions"],
            )
        except Refused as refused:
            raise CommandError(refused.message) from None
        # No user, so no review.visibility filter: the operator exports everything chosen.
        records = export_filter.selection()
        out = options["out"]
        if fmt in BINARY and not out:
            raise CommandError(f"--format {fmt} writes files: give --out PATH.")
        filters = {
            key: options[key]
            for key in (
                "format",
                "start",
                "end",
                "source",
                "doc_type",
                "all_versions",
                "with_text",
                "deidentify",
            )
        }
        filters["state"] = export_filter.as_dict()["state"]
        if fmt in STREAMED:
            self._stream(
                records,
                fmt=fmt,
                out=out,
                filters=filters,
                with_text=options["with_text"],
                deidentify=options["deidentify"],
            )
            return
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
                    with_text=options["with_text"],
                    deidentify=options["deidentify"],
                )
                count = records.count()
                export_audit(
                    user=None,
                    digest=export_digest(path),
                    filters={**filters, "via": "command"},
                    records=count,
                )
                self.stderr.write(f"Wrote {count} record(s) to {out} (state: {filters['state']})")
                return
            body = export_bytes(
                records,
                fmt=fmt,
                export_filter=export_filter,
                site_url=settings.SITE_URL,
                with_text=options["with_text"],
                deidentify=options["deidentify"],
            )
        except ExportUnavailable as refused:
            raise CommandError(refused.message) from None
        if not records.exists():
            raise CommandError("No ground truth matches.")
        export_audit(
            user=None,
            digest=export_digest(body),
            filters={**filters, "via": "command"},
            records=records.count(),
        )
        self.stdout.write(body.decode(), ending="")

    def _stream(
        self,
        records: Any,
        *,
        fmt: str,
        out: str | None,
        filters: dict[str, Any],
        with_text: bool,
        deidentify: bool,
    ) -> None:
        """JSONL, CSV and FHIR are written as they are read, and audited once at the end
        with the digest of the bytes written."""
        if not out and not records.exists():
            raise CommandError("No ground truth matches.")
        written: list[Streamed] = []

        def audit(result: Streamed) -> None:
            written.append(result)
            export_audit(
                user=None,
                digest=result.digest,
                filters={**filters, "via": "command"},
                records=result.records,
                complete=result.complete,
            )

        chunks = export_stream(
            records,
            fmt=fmt,
            site_url=settings.SITE_URL,
            with_text=with_text,
            on_end=audit,
            deidentify=deidentify,
        )
        with closing(chunks):  # a failed write still ends the stream, and audits it
            if out:
                with Path(out).open("wb") as handle:
                    for chunk in chunks:
                        handle.write(chunk)
            else:
                for chunk in chunks:
                    self.stdout.write(chunk.decode(), ending="")
        if out:
            self.stderr.write(
                f"Wrote {written[0].records} record(s) to {out} (state: {filters['state']})"
            )
