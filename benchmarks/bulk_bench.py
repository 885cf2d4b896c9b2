"""Bulk ingestion at hospital scale: `manage.py ingest` of a generated folder with real RQ
workers, PostgreSQL and Redis; documents per minute, and that every document ended ready (none
lost, none duplicated).

Used by ``manage.py bench_bulk_ingest``; bench tooling, not part of the product.
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import CommandError, call_command
from django.db.models import Count, Max, Sum
from django.test.utils import override_settings

from benchmarks.llm_bench import Workers, database_url
from benchmarks.pdfgen import text_pdf
from documents.models import Document
from documents.services import page_images_delete

PREFIX = "bench-bulk-"  # every generated file's name starts with this and the run's tag
TEXT_SHARE = 0.12  # share of .txt files; the rest are text-layer PDFs of 1-6 pages

SURNAMES = ["Okafor", "Lindqvist", "Moreau", "Haddad", "Nakamura", "Kowalski", "Ferreira"]
SITES = ["left breast", "right lung, upper lobe", "sigmoid colon", "prostate", "thyroid"]
FINDINGS = [
    "invasive ductal carcinoma, Nottingham grade {g}",
    "adenocarcinoma, moderately differentiated",
    "no evidence of malignancy",
    "benign fibroadenoma measuring {m} mm",
    "high-grade dysplasia without invasion",
]


@dataclass(frozen=True)
class Generated:
    folder: Path
    files: int  # in the folder, copies included
    distinct: dict[str, int]  # sha256 -> pages, one per distinct document
    copies: int  # files that are exact copies of another file, with a name of their own
    pdfs: int
    texts: int
    seconds: float


def _report(rng: random.Random, ref: str, page_count: int) -> list[list[str]]:
    """Pages of a synthetic clinical report; ``ref`` makes its text, hence its SHA-256, unique."""
    kind = rng.choice(["PATHOLOGY REPORT", "RADIOLOGY REPORT", "CLINIC LETTER", "GENOMIC REPORT"])
    patient = f"{rng.choice(SURNAMES)}, synthetic patient {rng.randint(1000, 9999)}"
    finding = rng.choice(FINDINGS).format(g=rng.randint(1, 3), m=rng.randint(4, 40))
    pages = []
    for number in range(1, page_count + 1):
        paragraphs = [
            f"{kind} (PAGE {number})",
            f"Patient: {patient}. Reference {ref}. Site: {rng.choice(SITES)}.",
            "FINDINGS" if number == 1 else "CONTINUATION",
            f"{finding.capitalize()}. "
            + " ".join(
                f"Section {n} shows {rng.choice(['no', 'focal', 'extensive'])} change; "
                f"margin {rng.randint(1, 20)} mm."
                for n in range(rng.randint(4, 12))
            ),
            f"Reported {rng.randint(1, 28):02d}/{rng.randint(1, 12):02d}/2026 by Dr "
            f"{rng.choice(SURNAMES)}.",
        ]
        pages.append(paragraphs)
    return pages


def generate_folder(
    root: Path, *, documents: int, copies: int, tag: str, seed: int = 13
) -> Generated:
    """``documents`` distinct synthetic documents below ``root`` (a subfolder per 1,000), and
    ``copies`` exact copies of some of them under other names."""
    started = time.monotonic()
    rng = random.Random(seed)
    distinct: dict[str, int] = {}
    written: list[Path] = []
    pdfs = texts = 0
    for index in range(documents):
        folder = root / f"batch-{index // 1000:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        ref = f"{tag}-{index:06d}"
        if rng.random() < TEXT_SHARE:
            pages = _report(rng, ref, 1)
            data = "\n\n".join(pages[0]).encode()
            path = folder / f"{PREFIX}{ref}.txt"
            page_count = 1
            texts += 1
        else:
            page_count = rng.randint(1, 6)
            data = text_pdf(_report(rng, ref, page_count))
            path = folder / f"{PREFIX}{ref}.pdf"
            pdfs += 1
        path.write_bytes(data)
        written.append(path)
        distinct[hashlib.sha256(data).hexdigest()] = page_count
    for number, original in enumerate(rng.sample(written, min(copies, len(written)))):
        shutil.copyfile(
            original, original.with_name(f"{PREFIX}{tag}-copy-{number:04d}{original.suffix}")
        )
    return Generated(
        folder=root,
        files=len(written) + min(copies, len(written)),
        distinct=distinct,
        copies=min(copies, len(written)),
        pdfs=pdfs,
        texts=texts,
        seconds=round(time.monotonic() - started, 1),
    )


@dataclass
class BulkConfig:
    documents: int = 10_000
    workers: int = 4
    copies: int | None = None  # default: 1% of the documents, at least 2
    classify: bool = False
    batch_size: int = 50
    timeout: float = 3600.0
    keep: bool = False
    redis_url: str = ""
    log: Path = field(default_factory=lambda: Path(f"/tmp/bench_bulk_workers_{os.getpid()}.log"))


def _queue_in_use(redis: Any) -> str:
    from rq import Queue, Worker

    workers = Worker.count(connection=redis)
    queued = len(Queue("default", connection=redis))
    if workers or queued:
        return f"{workers} worker(s) listen and {queued} job(s) wait on it"
    return ""


def _ours(tag: str) -> Any:
    return Document.objects.filter(original_filename__startswith=f"{PREFIX}{tag}-")


def _wait(
    tag: str, *, classify: bool, timeout: float, say: Callable[[str], None]
) -> tuple[bool, float]:
    """Until no document of this run is uploaded or ingesting (and, with ``classify``, no run
    is pending or running), a line every 30 s. Returns whether they finished, and when
    (time.time()) the wait ended."""
    from reliability.models import Run

    deadline = time.monotonic() + timeout
    last = 0.0
    while True:
        working = _ours(tag).filter(status__in=["uploaded", "ingesting"]).count()
        running = (
            Run.objects.filter(document__in=_ours(tag))
            .exclude(status__in=[Run.Status.COMPLETED, Run.Status.FAILED])
            .count()
            if classify
            else 0
        )
        now = time.monotonic()
        if not working and not running:
            return True, time.time()
        if now > deadline:
            return False, time.time()
        if now - last >= 30:
            last = now
            ready = _ours(tag).filter(status="ready").count()
            say(
                f"  waiting: {ready} ready, {working} still queued or ingesting"
                + (f", {running} run(s) unfinished" if classify else "")
            )
        time.sleep(1.0)


def _ingest(folder: Path, batch_size: int) -> tuple[float, str]:
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    try:
        call_command("ingest", str(folder), "--batch-size", str(batch_size), stdout=out, stderr=err)
    except CommandError as exc:  # refused files: counted below from the database
        err.write(f"{exc}\n")
    return time.monotonic() - started, out.getvalue() + err.getvalue()


def _summary_counts(output: str) -> dict[str, int]:
    found = re.search(
        r"(\d+) file\(s\): (\d+) uploaded, (\d+) already present, (\d+) refused", output
    )
    if not found:
        return {}
    files, uploaded, present, refused = (int(n) for n in found.groups())
    return {"files": files, "uploaded": uploaded, "already_present": present, "refused": refused}


def measure(
    tag: str, generated: Generated, *, started: float, finished_at: float | None
) -> dict[str, Any]:
    """Counts from the database: what became of every generated file."""
    ours = _ours(tag)
    by_status = dict(ours.values_list("status").annotate(n=Count("pk")))
    shas = dict(ours.values_list("sha256").annotate(n=Count("pk")))
    names = ours.values("original_filename").annotate(n=Count("pk")).filter(n__gt=1).count()
    ready = ours.filter(status=Document.Status.READY)
    totals = ready.aggregate(pages=Sum("page_count"), last=Max("ingested_at"))
    expected = set(generated.distinct)
    last = totals["last"].timestamp() if totals["last"] else finished_at or time.time()
    wall = max(last - started, 1e-6)
    created = sum(shas.values())
    pages = totals["pages"] or 0
    seconds = sorted(s for s in ready.values_list("ingest_seconds", flat=True) if s is not None)
    return {
        "documents": created,
        "ready": by_status.get(Document.Status.READY, 0),
        "failed": by_status.get(Document.Status.FAILED, 0),
        "unfinished": by_status.get(Document.Status.UPLOADED, 0)
        + by_status.get(Document.Status.INGESTING, 0),
        "lost": len(expected - set(shas)),
        "unexpected": len(set(shas) - expected),
        "duplicated": sum(1 for n in shas.values() if n > 1) + names,
        "pages": pages,
        "pages_expected": sum(generated.distinct.values()),
        "wall_seconds": round(wall, 1),
        "documents_per_minute": round(created / wall * 60, 1),
        "pages_per_minute": round(pages / wall * 60, 1),
        "ingest_job_seconds_mean": round(sum(seconds) / len(seconds), 3) if seconds else 0.0,
        "ingest_job_seconds_p95": round(seconds[int(0.95 * (len(seconds) - 1))], 3)
        if seconds
        else 0.0,
    }


def _classification(tag: str, *, started: float) -> dict[str, Any]:
    from reliability.models import Run

    runs = Run.objects.filter(document__in=_ours(tag))
    statuses = dict(runs.values_list("status").annotate(n=Count("pk")))
    last = runs.aggregate(last=Max("finished_at"))["last"]
    wall = max((last.timestamp() if last else time.time()) - started, 1e-6)
    documents = runs.values("document").distinct().count()
    return {
        "runs": sum(statuses.values()),
        "runs_per_document_max": max(
            (r["n"] for r in runs.values("document").annotate(n=Count("pk"))), default=0
        ),
        "completed": statuses.get(Run.Status.COMPLETED, 0),
        "failed": statuses.get(Run.Status.FAILED, 0),
        "wall_seconds": round(wall, 1),
        "documents_per_minute": round(documents / wall * 60, 1),
    }


def cleanup(tag: str) -> int:
    """Remove this run's documents, their stored files and page images, and what runs made
    of them (ground truth newest version first: a version protects the one it supersedes)."""
    from review.models import GroundTruth

    documents = _ours(tag)
    for truth in GroundTruth.objects.filter(document__in=documents).order_by("-version"):
        truth.delete()
    removed = 0
    for document in documents.iterator():
        document.file.delete(save=False)
        page_images_delete(document=document)
        removed += 1
    documents.delete()
    return removed


def run_bench(config: BulkConfig, say: Callable[[str], None]) -> dict[str, Any]:
    from redis import Redis

    redis_url = config.redis_url or settings.REDIS_URL
    redis = Redis.from_url(redis_url)
    busy = _queue_in_use(redis)
    if busy:
        raise RuntimeError(
            f"The Redis database {redis_url} is in use ({busy}); give the bench one of its own "
            "with --redis-url (or REDIS_URL)."
        )
    tag = uuid.uuid4().hex[:8]
    copies = config.copies if config.copies is not None else max(2, config.documents // 100)
    root = Path(tempfile.mkdtemp(prefix="vetted-bulk-"))
    results: dict[str, Any] = {
        "workers": config.workers,
        "classify": config.classify,
        "batch_size": config.batch_size,
        "cpu_count": os.cpu_count(),
        "load_average_at_start": [round(n, 2) for n in os.getloadavg()],
    }
    pool: Workers | None = None
    try:
        generated = generate_folder(root, documents=config.documents, copies=copies, tag=tag)
        say(
            f"Generated {generated.files} file(s) in {generated.seconds:.0f} s: "
            f"{generated.pdfs} PDFs and {generated.texts} text files "
            f"({sum(generated.distinct.values())} pages), and {generated.copies} exact copies"
        )
        results.update(
            files=generated.files,
            distinct_documents=len(generated.distinct),
            copies=generated.copies,
            generate_seconds=generated.seconds,
        )
        env = dict(os.environ)
        env.update(
            DATABASE_URL=database_url(),
            REDIS_URL=redis_url,
            MEDIA_ROOT=str(settings.MEDIA_ROOT),
            AUTO_CLASSIFY="1" if config.classify else "0",
            DJANGO_SETTINGS_MODULE="config.settings",
            LOG_LEVEL="WARNING",
        )
        pool = Workers(config.workers, env, config.log)
        pool.wait_ready(redis)
        say(f"{config.workers} rqworker process(es) ready; ingesting {root}")
        queues = {"default": {**settings.RQ_QUEUES["default"], "URL": redis_url}}
        with override_settings(
            REDIS_URL=redis_url, RQ_QUEUES=queues, AUTO_CLASSIFY=config.classify
        ):
            started = time.time()
            upload_seconds, output = _ingest(root, config.batch_size)
            counts = _summary_counts(output)
            say(
                f"ingest command: {upload_seconds:.1f} s for {generated.files} files "
                f"({generated.files / upload_seconds:.0f} files/s); {counts}"
            )
            finished, finished_at = _wait(
                tag, classify=config.classify, timeout=config.timeout, say=say
            )
            if not finished:
                say(f"Not finished within {config.timeout:.0f} s.")
            figures = measure(tag, generated, started=started, finished_at=finished_at)
            results.update(figures)
            results.update(
                finished=finished,
                upload_seconds=round(upload_seconds, 1),
                upload_files_per_second=round(generated.files / upload_seconds, 1),
                reported=counts,
                copies_reported_present=counts.get("already_present", -1) == generated.copies,
            )
            if config.classify:
                results["classification"] = _classification(tag, started=started)
            # Idempotence: the same folder again creates nothing.
            again_seconds, again = _ingest(root, config.batch_size)
            again_counts = _summary_counts(again)
            results["rerun"] = {
                "seconds": round(again_seconds, 1),
                "uploaded": again_counts.get("uploaded", -1),
                "already_present": again_counts.get("already_present", -1),
            }
        from rq import Queue

        results["rq_failed_jobs"] = Queue("default", connection=redis).failed_job_registry.count
    finally:
        if pool is not None:
            pool.stop()
        shutil.rmtree(root, ignore_errors=True)
        if not config.keep:
            results["removed"] = cleanup(tag)
    results["tag"] = tag
    return results
