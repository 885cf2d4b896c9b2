from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from benchmarks.llm_bench import BenchConfig, run_bench

ROOT = Path(__file__).resolve().parents[3]


class Command(BaseCommand):
    help = (
        "The Gemini path under load: start a stub Gemini server (latency and failure mix as "
        "options), run documents through real RQ workers (1, 2 and 4) on PostgreSQL and Redis, "
        "and print calls, tokens and cost per document, documents per hour per worker and p95 "
        "run time for the clean, re-run, re-ask and 429-storm mixes, and the scaling. Needs "
        "DATABASE_URL (PostgreSQL) and REDIS_URL; removes what it creates unless --keep."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--corpus",
            default=str(ROOT / "demo" / "documents"),
            help="documents to take text from (labels.csv, or every .pdf/.txt below)",
        )
        parser.add_argument("--corpus-limit", type=int, default=None)
        parser.add_argument("--latency", type=float, default=2.0, help="model latency, s")
        parser.add_argument(
            "--error-rate", type=float, default=0.0, help="share of requests answered 503"
        )
        parser.add_argument("--thinking-tokens", type=int, default=400)
        parser.add_argument(
            "--per-worker", type=int, default=30, help="clean documents per worker per phase"
        )
        parser.add_argument("--workers", default="1,2,4", help="worker counts, e.g. 1,2,4")
        parser.add_argument("--reask-documents", type=int, default=20)
        parser.add_argument("--storm-documents", type=int, default=50)
        parser.add_argument("--storm-seconds", type=float, default=60.0)
        parser.add_argument("--storm-retry-after", type=float, default=15.0)
        parser.add_argument("--storm-workers", type=int, default=4)
        parser.add_argument("--timeout", type=float, default=1800.0, help="per phase, s")
        parser.add_argument("--keep", action="store_true", help="keep the documents and runs")
        parser.add_argument("--json", dest="json_out", help="also write the figures here")

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "postgresql":
            raise CommandError("bench_llm needs PostgreSQL: set DATABASE_URL.")
        if not settings.REDIS_URL:
            raise CommandError("bench_llm needs Redis and RQ workers: set REDIS_URL.")
        try:
            counts = tuple(int(n) for n in options["workers"].split(",") if n.strip())
        except ValueError:
            raise CommandError("--workers takes whole numbers, e.g. 1,2,4") from None
        config = BenchConfig(
            corpus=Path(options["corpus"]),
            corpus_limit=options["corpus_limit"],
            latency=options["latency"],
            error_rate=options["error_rate"],
            thinking_tokens=options["thinking_tokens"],
            per_worker=options["per_worker"],
            worker_counts=counts,
            reask_documents=options["reask_documents"],
            storm_documents=options["storm_documents"],
            storm_seconds=options["storm_seconds"],
            storm_retry_after=options["storm_retry_after"],
            storm_workers=options["storm_workers"],
            timeout=options["timeout"],
            keep=options["keep"],
        )
        try:
            results = run_bench(config, say=self.stdout.write)
        except RuntimeError as exc:
            raise CommandError(str(exc)) from None
        clean, storm, scaling = results["clean"], results["storm"], results["scaling"]
        self.stdout.write(
            f"Clean path: {clean['calls_per_document']:.2f} call(s)/document, "
            f"{clean['documents_per_hour_per_worker']:.0f} documents/hour per worker at "
            f"{config.latency:g} s model latency; re-run of unchanged text: "
            f"{results['rerun']['calls_per_document']:.2f} call(s)/document; scaling "
            + ", ".join(f"{k}: x{v}" for k, v in scaling.items() if k.startswith("speedup_"))
            + f"; 429 storm of {config.storm_seconds:g} s on {storm['documents']} documents: "
            f"{storm['completed']} finished, {storm['failed']} failed, "
            f"{storm['unfinished']} unfinished, p95 latency {storm['p95_latency_seconds']:.0f} s; "
            f"whole corpus ({results['corpus']['documents']} documents, clean path or not): "
            f"{results['corpus']['calls_per_document']:.2f} call(s)/document"
        )
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(results, indent=2, sort_keys=True))
            self.stdout.write(f"Wrote {options['json_out']}")
