from __future__ import annotations

import gc
import io
import json
import logging
import resource
import statistics
import time
import tracemalloc
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import pdfplumber
from django.core.files.base import ContentFile
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from benchmarks.pdfgen import long_text_pdf
from documents.models import Document
from documents.pages import extract_pdf
from documents.services import document_ingest

# Full ingest must stay at least this many times faster than plain pdfplumber extract_text():
# PDF pages are read in Python through pypdfium2's public API, without code of our own in C.
TARGET_RATIO = 5.0


class _Rollback(Exception):
    pass


def plain_extract_text(data: bytes) -> int:
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        return sum(len(page.extract_text() or "") for page in pdf.pages)


def vetted_extract(data: bytes) -> int:
    return sum(len(p.text) for p in extract_pdf(data, ocr=None))


def vetted_ingest(data: bytes) -> int:
    """Extraction plus the database writes of a real ingestion, rolled back afterwards."""
    document = Document(
        original_filename="bench.pdf",
        sha256=f"bench-{time.monotonic_ns()}",
        mime_type=Document.MIME_PDF,
        size_bytes=len(data),
    )
    document.file.save("bench", ContentFile(data), save=False)
    try:
        with transaction.atomic():
            document.save(force_insert=True)
            document_ingest(document=document)
            pages = document.pages.count()
            raise _Rollback
    except _Rollback:
        pass
    finally:
        document.file.delete(save=False)
    return pages


class Command(BaseCommand):
    help = "Benchmark PDF ingestion against plain pdfplumber extract_text() on the same file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--pages", type=int, default=50)
        parser.add_argument("--repeat", type=int, default=7)
        parser.add_argument("--json", dest="json_out", help="also write the figures here")

    def handle(self, *args: Any, **options: Any) -> None:
        pages, repeat = options["pages"], options["repeat"]
        logging.getLogger("documents").setLevel(logging.WARNING)  # keep the table readable
        data = long_text_pdf(pages)
        self.stdout.write(
            f"Generated text PDF: {pages} pages, {len(data) / 1024:.0f} KiB; best and median of "
            f"{repeat} runs each."
        )
        self.stdout.write(
            f"PDF reader: PDFium through pypdfium2 {version('pypdfium2')} (pdfplumber "
            f"{version('pdfplumber')} finds ruled tables)"
        )
        header = f"{'method':<34}{'best p/s':>10}{'median p/s':>12}{'median s':>10}{'peak MiB':>10}"
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        cases: list[tuple[str, str, Callable[[bytes], int]]] = [
            ("pdfplumber", "pdfplumber extract_text() (plain)", plain_extract_text),
            ("extract", "vetted extraction (pdfium)", vetted_extract),
            ("ingest", "vetted ingest (pdfium, + DB)", vetted_ingest),
        ]
        # The methods take turns, run by run: a slow spell of the machine falls on all of
        # them alike instead of on whichever was being timed.
        for _key, _label, func in cases:
            func(data)  # warm-up: imports, font caches
        times: dict[str, list[float]] = {key: [] for key, _label, _func in cases}
        for _ in range(repeat):
            for key, _label, func in cases:
                gc.collect()  # no method pays for the garbage of the one before it
                started = time.perf_counter()
                func(data)
                times[key].append(time.perf_counter() - started)
        best: dict[str, float] = {}
        for key, label, func in cases:
            tracemalloc.start()
            func(data)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            median = statistics.median(times[key])
            best[key] = pages / min(times[key])
            self.stdout.write(
                f"{label:<34}{best[key]:>10.1f}{pages / median:>12.1f}"
                f"{median:>10.3f}{peak / 2**20:>10.1f}"
            )
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        self.stdout.write(f"Process peak RSS: {rss:.0f} MiB (peak MiB column: Python allocations)")
        ratio = best["ingest"] / best["pdfplumber"]
        self.stdout.write(
            f"Full ingest / plain pdfplumber (best runs): {ratio:.1f}x "
            f"(target >= {TARGET_RATIO:g}x)"
        )
        if options["json_out"]:
            figures = {
                "pages": pages,
                "repeat": repeat,
                "reader": "pdfium",
                # Three significant digits at least: a rate of a few pages a second rounded to
                # one decimal, or a ratio under 1 to two, would no longer give each other.
                "pdfplumber_pages_per_second": round(best["pdfplumber"], 3),
                "extract_pages_per_second": round(best["extract"], 3),
                "ingest_pages_per_second": round(best["ingest"], 3),
                "ingest_over_pdfplumber": round(ratio, 4),
                "peak_rss_mib": round(rss),
            }
            with open(options["json_out"], "w") as out:
                out.write(json.dumps(figures, indent=2) + "\n")
