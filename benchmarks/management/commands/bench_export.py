from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from benchmarks.faults import clean_output
from documents.models import Document, Page
from review.models import GroundTruth

PREFIX = "bench-export-"
BATCH = 5000
PAGES = [
    "SURGICAL PATHOLOGY REPORT\n\nHistory: breast mass.\n\nFINAL DIAGNOSIS\n\nLeft breast, core "
    "biopsy: invasive ductal carcinoma, Nottingham grade 2.\n\nER positive (95%).",
    "GROSS DESCRIPTION\n\nThree cores of tan tissue, 1.2 to 1.6 cm, submitted entirely.",
]
FIELDS = [
    {
        "segment": 0,
        "doc_type": "pathology",
        "fields": {
            "er_status": {"value": "positive (95%)", "status": "found", "confidence": 0.9},
            "grade": {"value": "2", "status": "found", "confidence": 0.9},
            "ki67": {"value": None, "status": "not_present", "confidence": 0.0},
        },
    }
]
SOURCES = [
    GroundTruth.Source.AUTO_ACCEPTED,
    GroundTruth.Source.SME_VALIDATED,
    GroundTruth.Source.SME_CORRECTED,
]


class Command(BaseCommand):
    help = (
        "Seed ground-truth records (bulk inserts), export them with export_ground_truth in a "
        "process of its own and report that process's peak memory and records per second."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--records", type=int, default=100_000)
        parser.add_argument("--format", choices=["jsonl", "csv", "fhir"], default="jsonl")
        parser.add_argument("--with-text", action="store_true", help="export page text too")
        parser.add_argument(
            "--keep",
            action="store_true",
            help="keep the seeded records (and reuse records seeded by an earlier --keep run)",
        )
        parser.add_argument("--json", help="also write the figures to this file")

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "postgresql":
            raise CommandError("bench_export needs PostgreSQL: set DATABASE_URL.")
        target = options["records"]
        if not options["keep"]:
            self._cleanup()
        try:
            started = time.perf_counter()
            seeded = self._seed(target)
            self.stdout.write(
                f"Seeded {seeded} record(s) ({target} in all) in "
                f"{time.perf_counter() - started:.1f} s"
            )
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE documents_document, review_groundtruth")
            figures = self._export(options["format"], with_text=options["with_text"])
        finally:
            if not options["keep"]:
                self._cleanup()
        self.stdout.write(
            f"Exported {figures['records']} records as {figures['format']} in "
            f"{figures['seconds']:.2f} s: {figures['records_per_second']:.0f} records/s, "
            f"peak RSS {figures['peak_rss_mib']:.1f} MiB (target < 150 MiB; "
            f"{figures['baseline_rss_mib']:.1f} MiB exporting no record), "
            f"{figures['bytes'] / 2**20:.1f} MiB written"
        )
        if options["json"]:
            Path(options["json"]).write_text(json.dumps(figures, indent=2) + "\n")

    def _cleanup(self) -> None:
        documents = Document.objects.filter(sha256__startswith=PREFIX)
        # Newest version first: a version is protected while a later one supersedes it.
        truths = GroundTruth.objects.filter(document__in=documents)
        truths.exclude(supersedes=None).delete()
        truths.delete()
        documents.delete()

    def _seed(self, target: int) -> int:
        """``target`` documents in all, each with two pages and one current ground-truth
        record (the three sources in turn, fields, a reviewer's note on some)."""
        have = Document.objects.filter(sha256__startswith=PREFIX).count()
        if have >= target:
            return 0
        output = clean_output(PAGES, "pathology")
        assert output is not None
        classification = output.model_dump(mode="json")
        reviewer, _ = get_user_model().objects.get_or_create(username=f"{PREFIX}clinician")
        for start in range(have, target, BATCH):
            stop = min(target, start + BATCH)
            documents = Document.objects.bulk_create(
                [
                    Document(
                        original_filename=f"bench-{i:06d}.pdf",
                        sha256=f"{PREFIX}{i:040d}",
                        mime_type=Document.MIME_PDF,
                        size_bytes=1,
                        page_count=len(PAGES),
                        status=Document.Status.READY,
                    )
                    for i in range(start, stop)
                ]
            )
            Page.objects.bulk_create(
                [
                    Page(document=d, number=n, text=t, paragraphs=t.split("\n\n"))
                    for d in documents
                    for n, t in enumerate(PAGES, start=1)
                ]
            )
            GroundTruth.objects.bulk_create(
                [
                    GroundTruth(
                        document=d,
                        source=SOURCES[i % len(SOURCES)],
                        dominant_type="pathology",
                        classification=classification,
                        fields=FIELDS,
                        reason="",
                        note="Checked against the slide." if i % 3 else "",
                        reviewer=reviewer if i % len(SOURCES) else None,
                        model="gemini-2.5-flash",
                        prompt_version="classify-v7",
                        version=1,
                    )
                    for i, d in zip(range(start, stop), documents, strict=True)
                ]
            )
        return target - have

    def _export(self, fmt: str, *, with_text: bool) -> dict[str, Any]:
        """export_ground_truth --out FILE in a child process (the code path the command
        runs), timed from start to exit, with its peak RSS (VmHWM). The
        same command choosing no record gives the process's baseline (Django and the apps
        loaded, no record read)."""
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / f"export.{fmt}"
            extra = ["--with-text"] if with_text else []
            _, baseline = _run_export(fmt, Path(folder) / "none", [*extra, "--type", "none"])
            seconds, peak = _run_export(fmt, out, extra)
            size = out.stat().st_size
            records = GroundTruth.objects.filter(superseded_by__isnull=True).exclude(
                source=GroundTruth.Source.WITHDRAWN
            )
            count = records.count()
            if fmt in ("jsonl", "csv"):
                with out.open("rb") as handle:
                    lines = sum(1 for _ in handle) - (1 if fmt == "csv" else 0)
                if lines != count:
                    raise CommandError(f"exported {lines} records, expected {count}")
        return {
            "records": count,
            "format": fmt,
            "with_text": with_text,
            "seconds": round(seconds, 3),
            "records_per_second": round(count / seconds, 1),
            "peak_rss_mib": round(peak, 1),
            "baseline_rss_mib": round(baseline, 1),
            "bytes": size,
        }


# The child runs manage.py's own entry point, then reads its peak RSS (VmHWM) before it exits.
# Not the kernel's ru_maxrss from wait4: a child forked from this process (grown by seeding)
# carries this process's size into its ru_maxrss across exec; VmHWM counts the child only.
CHILD = """
import os, runpy, sys
sys.argv = sys.argv[2:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    with open("/proc/self/status") as status:
        peak = next(line for line in status if line.startswith("VmHWM:"))
    with open(os.environ["BENCH_EXPORT_PEAK"], "w") as out:
        out.write(peak.split()[1])
"""


def _run_export(fmt: str, out: Path, extra: list[str]) -> tuple[float, float]:
    """Seconds from start to exit, and the peak RSS in MiB, of export_ground_truth."""
    peak = out.with_name(out.name + ".peak")
    command = [
        sys.executable,
        "-c",
        CHILD,
        "--",
        str(Path(settings.BASE_DIR) / "manage.py"),
        "export_ground_truth",
        "--format",
        fmt,
        "--out",
        str(out),
        *extra,
    ]
    env = {**os.environ, "DATABASE_URL": _database_url(), "BENCH_EXPORT_PEAK": str(peak)}
    log = out.with_name(out.name + ".stderr")
    with log.open("wb") as errors:
        started = time.perf_counter()
        finished = subprocess.run(command, env=env, stderr=errors, check=False)
        seconds = time.perf_counter() - started
    if finished.returncode:
        raise CommandError(f"export_ground_truth failed: {log.read_text()}")
    return seconds, int(peak.read_text()) / 1024  # VmHWM is in kB


def _database_url() -> str:
    """The database this process uses, as a DATABASE_URL for the child."""
    db = connection.settings_dict
    user = urllib.parse.quote(db.get("USER") or "", safe="")
    password = urllib.parse.quote(db.get("PASSWORD") or "", safe="")
    credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = db.get("HOST") or "localhost"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{credentials}{host}{port}/{db['NAME']}"
