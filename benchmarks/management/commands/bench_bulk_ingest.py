from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from benchmarks.bulk_bench import BulkConfig, run_bench


class Command(BaseCommand):
    help = (
        "Bulk ingestion at hospital scale: generate a folder of synthetic documents (text-layer "
        "PDFs of 1-6 pages, some text files, a few exact copies), start real RQ workers, run "
        "`ingest` on it and wait until every document has left the queue; print documents "
        "and pages per minute and whether any was lost, duplicated or failed. Needs "
        "PostgreSQL (DATABASE_URL) and a Redis database no other worker uses (REDIS_URL or "
        "--redis-url); removes what it creates unless --keep."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--documents", type=int, default=10_000, help="distinct documents")
        parser.add_argument("--workers", type=int, default=4, help="rqworker processes")
        parser.add_argument(
            "--copies",
            type=int,
            default=None,
            help="exact copies added under other names (default 1%% of --documents, min 2)",
        )
        parser.add_argument(
            "--classify",
            action="store_true",
            help="also classify each document after ingestion (AUTO_CLASSIFY) and wait for it",
        )
        parser.add_argument("--batch-size", type=int, default=50, help="ingest --batch-size")
        parser.add_argument("--redis-url", default="", help="default: REDIS_URL")
        parser.add_argument("--timeout", type=float, default=3600.0, help="wait at most, s")
        parser.add_argument("--keep", action="store_true", help="keep the documents")
        parser.add_argument("--json", dest="json_out", help="also write the figures here")

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "postgresql":
            raise CommandError(
                "bench_bulk_ingest needs PostgreSQL (SQLite allows one writer at a time, so "
                "the workers would wait on each other): set DATABASE_URL."
            )
        if not (options["redis_url"] or settings.REDIS_URL):
            raise CommandError(
                "bench_bulk_ingest needs Redis for its RQ workers: set REDIS_URL or --redis-url."
            )
        if options["documents"] < 1 or options["workers"] < 1:
            raise CommandError("--documents and --workers must be at least 1.")
        config = BulkConfig(
            documents=options["documents"],
            workers=options["workers"],
            copies=options["copies"],
            classify=options["classify"],
            batch_size=options["batch_size"],
            timeout=options["timeout"],
            keep=options["keep"],
            redis_url=options["redis_url"],
        )
        try:
            results = run_bench(config, say=self.stdout.write)
        except RuntimeError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"{results['files']} files ({results['distinct_documents']} distinct, "
            f"{results['copies']} copies) with {results['workers']} worker(s): "
            f"{results['documents']} documents created, {results['ready']} ready, "
            f"{results['failed']} failed, {results['unfinished']} unfinished, "
            f"{results['lost']} lost, {results['duplicated']} duplicated; "
            f"copies reported as already present: "
            f"{'yes' if results['copies_reported_present'] else 'NO'}; "
            f"{results['pages']} pages (expected {results['pages_expected']})"
        )
        self.stdout.write(
            f"upload (ingest command) {results['upload_seconds']:.1f} s "
            f"({results['upload_files_per_second']:.0f} files/s); whole "
            f"{results['wall_seconds']:.1f} s: {results['documents_per_minute']:.0f} "
            f"documents/minute, {results['pages_per_minute']:.0f} pages/minute; ingestion job "
            f"mean {results['ingest_job_seconds_mean']:.2f} s, "
            f"p95 {results['ingest_job_seconds_p95']:.2f} s"
        )
        if "classification" in results:
            c = results["classification"]
            self.stdout.write(
                f"with classification: {c['runs']} runs ({c['completed']} completed, "
                f"{c['failed']} failed) in {c['wall_seconds']:.1f} s: "
                f"{c['documents_per_minute']:.0f} documents/minute"
            )
        rerun = results["rerun"]
        self.stdout.write(
            f"ingest again on the same folder: {rerun['seconds']:.1f} s, "
            f"{rerun['uploaded']} uploaded, {rerun['already_present']} already present; "
            f"RQ failed jobs: {results['rq_failed_jobs']}"
        )
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(results, indent=2, sort_keys=True))
            self.stdout.write(f"Wrote {options['json_out']}")
