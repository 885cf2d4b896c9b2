"""The LLM path under load: a stub Gemini server, real RQ worker processes, PostgreSQL and Redis.

Mixes (each a set of documents made unique so the response cache cannot answer them):
* clean: documents that go through the clean path (accepted, the gate confirms, the fields meet
  the threshold), with 1, 2 and 4 workers: calls, tokens and cost per document, documents per
  hour per worker, p95 run time and the scaling;
* rerun: new runs of the clean documents (unchanged text): calls per document;
* reask: the first answer quotes evidence that is not in the document, the re-ask is clean;
* storm: every request is answered 429 (Retry-After and RetryInfo) for a while; runs must wait
  and finish by themselves, none failed;
* corpus: every document of the corpus once, clean path or not (the gate unsure, fields below
  the threshold, escalations): what a mixed day costs.

Used by ``manage.py bench_llm``; bench tooling, not part of the product.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Count, Sum
from django.test.utils import override_settings

from benchmarks.evaluation import read_labels
from benchmarks.gemini_stub import (
    GeminiStub,
    Reply,
    candidate,
    error_reply,
    prompt_pages,
    prompt_text,
    system_text,
)
from benchmarks.llm_answers import answer_json, classification, segment_fields
from documents.models import Document, Page
from engine import pipeline
from engine.document import DocumentContext, SecondOpinion
from engine.fields.templates import Template
from engine.schemas import Decision
from reliability import services
from reliability.fields import packs
from reliability.models import LLMResponse, Run
from review.selectors import LLM_TOTALS

ROOT = Path(__file__).resolve().parent.parent
REASK_MARK = "BENCH-REASK"
SHA_PREFIX = "bc"  # bench documents' sha256 start with this (and are removed afterwards)
FABRICATED = "Metastatic melanoma in four of nine lymph nodes, largest deposit 12 mm"


@dataclass
class BenchModel:
    """Answers like a careful, slow Gemini: a confident classification with the fields, checks
    answered as a faithful model would, a fabricated first answer for re-ask documents, a 429
    storm while one is on, and transient 503s at ``error_rate``."""

    templates: list[Template]
    latency: float = 2.0
    error_rate: float = 0.0
    thinking_tokens: int = 400
    storm_until: float = 0.0
    storm_retry_after: float = 15.0
    rng: random.Random = field(default_factory=lambda: random.Random(7))

    def __call__(self, path: str, body: dict[str, Any]) -> Reply:
        if time.time() < self.storm_until:
            return error_reply(
                429,
                "Resource has been exhausted (e.g. check quota).",
                retry_after=self.storm_retry_after,
                retry_delay=self.storm_retry_after,
            )
        if self.error_rate and self.rng.random() < self.error_rate:
            return error_reply(503, "The model is overloaded. Please try again later.")
        system, prompt = system_text(body), prompt_text(body)
        if system.startswith("You classify"):
            pages = prompt_pages(prompt)
            output = classification(pages)
            if REASK_MARK in prompt and "<<<FEEDBACK " not in prompt:
                primary = output.segments[0].assessment(output.segments[0].dominant_type)
                if primary is not None and primary.top_evidence:
                    primary.top_evidence[0].snippet = FABRICATED
            wants_fields = "Fill segment_fields" in prompt
            text = answer_json(output, pages, self.templates if wants_fields else ())
        elif system.startswith("You answer one question"):
            paperwork = "paperwork" in prompt  # V3: "is it paperwork rather than a report?"
            text = json.dumps({"value": not paperwork, "confidence": 0.9})
        else:  # extract_fields: nothing found (the classification call gave the fields)
            schema = body.get("generationConfig", {}).get("responseSchema", {})
            names = schema.get("properties", {}).keys()
            text = json.dumps({n: {"status": "not_present", "confidence": 0.9} for n in names})
        tokens_in = (len(system) + len(prompt)) // 4
        return Reply(
            200,
            candidate(
                text,
                tokens_in=tokens_in,
                tokens_out=len(text) // 4,
                thoughts=self.thinking_tokens,
            ),
            delay=self.latency,
        )


# -- documents --------------------------------------------------------------------------------


def corpus_texts(corpus: Path, *, limit: int | None = None) -> list[list[str]]:
    """Page texts of a corpus: the files listed in labels.csv, or every .pdf/.txt below it."""
    from documents.services import pages_extract

    if (corpus / "labels.csv").exists():
        paths = [corpus / row["path"] for row in read_labels(corpus)]
    else:
        paths = sorted(p for p in corpus.rglob("*") if p.suffix.lower() in {".pdf", ".txt"})
    texts = []
    for path in paths[:limit]:
        pages = [p.text for p in pages_extract(name=path.name, data=path.read_bytes())]
        if any(t.strip() for t in pages):
            texts.append(pages)
    return texts


def clean_path(pages: list[str], templates: list[Template], threshold: float) -> str:
    """Why these pages are not a clean-path document ("" when they are): the careful answer is
    accepted, the independent gate confirms it, and its fields meet the quality threshold."""
    from engine.classifiers.offline import OfflineClassifier
    from engine.fields.evaluator import evaluate, screen
    from engine.fields.extractors import answer_fields

    output = classification(pages)
    context = DocumentContext(
        pages=pages,
        min_dominant_confidence=pipeline.PRESETS[
            settings.RELIABILITY_PRESET
        ].min_dominant_confidence,
        second=SecondOpinion("offline", OfflineClassifier().classify(pages)),
        gate_confirm_confidence=settings.GATE_CONFIRM_CONFIDENCE,
    )
    verification = pipeline.verify(output, context)
    if verification.verdict.decision != Decision.AUTO_ACCEPT:
        return "not accepted"
    if verification.gate_result is None or not verification.gate_result.confirmed:
        return "the gate does not confirm"
    by_type = {t.doc_type: t for t in templates}
    for group in segment_fields(output, pages, templates):
        template = by_type[group["doc_type"]]
        own = pages[group["start_page"] - 1 : group["end_page"]]
        # Screened as a run screens them (engine.fields.loop): a value its snippet does not
        # support is withdrawn there, and a screen that skipped this called documents clean
        # that the run then asked about again.
        fields = screen(
            template, answer_fields(template, {f["name"]: f for f in group["fields"]}, own), own
        )
        if evaluate(template, fields, own).overall < threshold:
            return "fields below the threshold"
    return ""


BENCH_ID = uuid.uuid4().hex[:8]  # per invocation: an earlier bench's cached answers never match


def make_documents(
    texts: list[list[str]], count: int, *, tag: str, mark: str = ""
) -> list[Document]:
    """``count`` ready documents cycling through ``texts``, each made unique by a reference
    line on its last page (so neither the duplicate check nor the cache sees two alike)."""
    documents = []
    for i in range(count):
        pages = list(texts[i % len(texts)])
        pages[-1] = f"{pages[-1]}\n\nBench reference {mark}{BENCH_ID}-{tag}-{i:05d}"
        sha = f"{SHA_PREFIX}{uuid.uuid4().hex}{uuid.uuid4().hex}"[:64]
        document = Document.objects.create(
            original_filename=f"bench-{tag}-{i:05d}.txt",
            sha256=sha,
            mime_type=Document.MIME_TEXT,
            size_bytes=sum(len(p) for p in pages),
            page_count=len(pages),
            status=Document.Status.READY,
        )
        Page.objects.bulk_create(
            Page(document=document, number=n, text=t, paragraphs=t.split("\n\n"))
            for n, t in enumerate(pages, start=1)
        )
        documents.append(document)
    return documents


def cleanup(started: float) -> None:
    """Remove what the bench created: its documents with their runs, packets and ground truth
    (newest version first: a version protects the one it supersedes), and its cached answers."""
    from datetime import UTC, datetime

    from review.models import GroundTruth

    documents = Document.objects.filter(
        sha256__startswith=SHA_PREFIX, original_filename__startswith="bench-"
    )
    for truth in GroundTruth.objects.filter(document__in=documents).order_by("-version"):
        truth.delete()
    documents.delete()
    LLMResponse.objects.filter(created_at__gte=datetime.fromtimestamp(started, tz=UTC)).delete()


# -- workers ----------------------------------------------------------------------------------


def database_url() -> str:
    """This process's database as a URL, for the worker processes."""
    from urllib.parse import quote

    from django.db import connection

    db = connection.settings_dict
    auth = quote(db["USER"] or "")
    if db["PASSWORD"]:
        auth += ":" + quote(db["PASSWORD"])
    host = db["HOST"] or "127.0.0.1"
    return f"postgres://{auth}@{host}:{db['PORT'] or 5432}/{db['NAME']}"


class Workers:
    """Real ``rqworker`` processes sharing PostgreSQL and Redis."""

    def __init__(self, count: int, env: dict[str, str], log: Path) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []
        self.log = log
        for _ in range(count):
            handle = log.open("ab")
            self.processes.append(
                subprocess.Popen(
                    [sys.executable, "manage.py", "rqworker", "default"],
                    cwd=ROOT,
                    env=env,
                    stdout=handle,
                    stderr=subprocess.STDOUT,
                )
            )

    def wait_ready(self, redis: Any, timeout: float = 60) -> None:
        from rq import Worker

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if Worker.count(connection=redis) >= len(self.processes):
                return
            if any(p.poll() is not None for p in self.processes):
                raise RuntimeError(f"a worker exited at start; see {self.log}")
            time.sleep(0.2)
        raise RuntimeError(f"workers did not start within {timeout:.0f} s; see {self.log}")

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# -- phases -----------------------------------------------------------------------------------


def wait_for(run_ids: list[int], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = Run.objects.filter(pk__in=run_ids).exclude(status__in=["completed", "failed"])
        if not left.exists():
            return True
        time.sleep(0.5)
    return False


def measure(run_ids: list[int], workers: int) -> dict[str, Any]:
    runs = Run.objects.filter(pk__in=run_ids)
    n = len(run_ids)
    totals = runs.aggregate(**LLM_TOTALS)
    rows = list(runs.values_list("created_at", "finished_at", "duration_seconds", "status"))
    finished = [(start, end, seconds) for start, end, seconds, _ in rows if end is not None]
    durations = sorted(seconds or 0.0 for _, _, seconds in finished)
    latencies = sorted((end - start).total_seconds() for start, end, _ in finished)
    wall = (
        (max(end for _, end, _ in finished) - min(r[0] for r in rows)).total_seconds()
        if finished
        else 0.0
    )
    statuses = [r[3] for r in rows]
    tokens = sum((totals[k] or 0) for k in ("tokens_in", "tokens_out", "tokens_thinking"))
    return {
        "documents": n,
        "completed": statuses.count("completed"),
        "failed": statuses.count("failed"),
        "unfinished": n - len(finished),
        "decisions": {
            row["final_decision"] or row["status"]: row["n"]
            for row in runs.values("final_decision", "status").annotate(n=Count("pk"))
        },
        "calls_per_document": round((totals["calls"] or 0) / n, 3),
        "requests_per_document": round((totals["requests"] or 0) / n, 3),
        "cache_hits_per_document": round((totals["cache_hits"] or 0) / n, 3),
        "tokens_per_document": round(tokens / n, 1),
        "thinking_tokens_per_document": round((totals["tokens_thinking"] or 0) / n, 1),
        "cost_per_document": round(float(totals["cost"] or 0) / n, 6),
        "wall_seconds": round(wall, 2),
        "workers": workers,
        "documents_per_hour": round(n / wall * 3600, 1) if wall else 0.0,
        "documents_per_hour_per_worker": round(n / wall * 3600 / workers, 1) if wall else 0.0,
        "p95_run_seconds": round(_p95(durations), 3),
        "p95_latency_seconds": round(_p95(latencies), 3),
        "max_latency_seconds": round(max(latencies, default=0.0), 3),
    }


def failures(run_ids: list[int]) -> list[dict[str, str]]:
    """Each failed run's document (its name and first line) and reason, as the run recorded
    it: a failure in a bench is a finding to read, not only a count."""
    runs = Run.objects.filter(pk__in=run_ids, status=Run.Status.FAILED).select_related("document")
    found = []
    for run in runs.order_by("pk"):
        first = run.document.pages.order_by("number").values_list("text", flat=True).first()
        title = (first or "").strip().split("\n", 1)[0][:60]
        found.append(
            {
                "document": f"{run.document.original_filename} ({title})",
                "error": run.error or "(no reason recorded)",
            }
        )
    return found


def _p95(values: list[float]) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=20, method="inclusive")[18]


@dataclass
class BenchConfig:
    corpus: Path
    latency: float = 2.0
    error_rate: float = 0.0
    thinking_tokens: int = 400
    per_worker: int = 30
    worker_counts: tuple[int, ...] = (1, 2, 4)
    reask_documents: int = 20
    storm_documents: int = 50
    storm_seconds: float = 60.0
    storm_retry_after: float = 15.0
    storm_workers: int = 4
    timeout: float = 1800.0
    keep: bool = False
    corpus_limit: int | None = None


def run_bench(config: BenchConfig, say: Callable[[str], None]) -> dict[str, Any]:
    from redis import Redis

    started = time.time()
    quiet = [logging.getLogger(n) for n in ("core.jobs", "reliability.services")]
    levels = [logger.level for logger in quiet]
    for logger in quiet:  # a line per run would drown the figures
        logger.setLevel(logging.WARNING)
    templates = [t for p in packs().values() for t in p.templates]
    texts = corpus_texts(config.corpus, limit=config.corpus_limit)
    threshold = settings.EXTRACTION_QUALITY_THRESHOLD
    reasons = [clean_path(pages, templates, threshold) for pages in texts]
    clean = [pages for pages, why in zip(texts, reasons, strict=True) if not why]
    screened = {why: reasons.count(why) for why in set(reasons) if why}
    say(
        f"{len(texts)} document text(s) from {config.corpus}; {len(clean)} on the clean path"
        + (f" (others: {screened})" if screened else "")
    )
    if not clean:
        raise RuntimeError("No document of this corpus goes through the clean path.")
    model = BenchModel(
        templates=templates,
        latency=config.latency,
        error_rate=config.error_rate,
        thinking_tokens=config.thinking_tokens,
        storm_retry_after=config.storm_retry_after,
    )
    redis = Redis.from_url(settings.REDIS_URL)
    results: dict[str, Any] = {
        "conditions": {
            "model_latency_seconds": config.latency,
            "error_rate": config.error_rate,
            "thinking_tokens_per_call": config.thinking_tokens,
            "cpu_count": os.cpu_count(),
            "load_average_at_start": list(os.getloadavg()),
            "corpus": str(config.corpus),
            "corpus_documents": len(texts),
            "clean_path_documents": len(clean),
        }
    }
    log = Path(f"/tmp/bench_llm_workers_{os.getpid()}.log")
    with (
        GeminiStub(responder=model) as stub,
        override_settings(GEMINI_API_KEY="bench-key", GEMINI_BASE_URL=stub.url),
    ):
        env = dict(os.environ)
        env.update(
            DATABASE_URL=database_url(),
            REDIS_URL=settings.REDIS_URL,
            GEMINI_API_KEY="bench-key",
            GEMINI_BASE_URL=stub.url,
            GEMINI_MODEL=settings.GEMINI_MODEL,
            DJANGO_SETTINGS_MODULE="config.settings",
            LOG_LEVEL="WARNING",
        )

        pool: Workers | None = None

        def phase(name: str, documents: list[Document], workers: int) -> dict[str, Any]:
            nonlocal pool
            if pool is None or len(pool.processes) != workers:
                if pool is not None:
                    pool.stop()
                pool = Workers(workers, env, log)
                pool.wait_ready(redis)
            runs = [services.run_start(document=d).pk for d in documents]
            if not wait_for(runs, config.timeout):
                say(f"{name}: not finished within {config.timeout:.0f} s")
            figures = measure(runs, workers)
            figures["failures"] = failures(runs)
            say(
                f"{name:<16} {figures['documents']:>4} docs  {workers} worker(s)  "
                f"calls/doc {figures['calls_per_document']:.2f}  "
                f"tokens/doc {figures['tokens_per_document']:.0f}  "
                f"cost/doc ${figures['cost_per_document']:.5f}  "
                f"docs/h/worker {figures['documents_per_hour_per_worker']:.0f}  "
                f"p95 run {figures['p95_run_seconds']:.2f} s  "
                f"p95 latency {figures['p95_latency_seconds']:.2f} s  "
                f"failed {figures['failed']}  {figures['decisions']}"
            )
            for failure in figures["failures"]:  # a failed run is never silent
                say(f"  failed: {failure['document']}: {failure['error']}")
            return figures

        try:
            scaling: dict[str, Any] = {}
            for workers in config.worker_counts:
                documents = make_documents(clean, config.per_worker * workers, tag=f"c{workers}")
                scaling[str(workers)] = phase(f"clean x{workers}", documents, workers)
                if "rerun" not in results:  # the same text again, with the same workers
                    results["rerun"] = phase("rerun", documents, workers)
            one = scaling[str(config.worker_counts[0])]
            results["clean"] = one
            results["scaling"] = {
                "documents_per_hour": {k: v["documents_per_hour"] for k, v in scaling.items()},
                "documents_per_hour_per_worker": {
                    k: v["documents_per_hour_per_worker"] for k, v in scaling.items()
                },
                "phases": scaling,
            }
            base = one["documents_per_hour"] or 1.0
            for k, v in scaling.items():
                results["scaling"][f"speedup_{k}_workers"] = round(
                    v["documents_per_hour"] / base, 2
                )
            reask_docs = make_documents(clean, config.reask_documents, tag="r", mark=REASK_MARK)
            results["reask"] = phase("reask", reask_docs, max(config.worker_counts))
            storm_docs = make_documents(clean, config.storm_documents, tag="s")
            model.storm_until = time.time() + config.storm_seconds
            results["storm"] = phase("429 storm", storm_docs, config.storm_workers)
            results["storm"]["storm_seconds"] = config.storm_seconds
            results["storm"]["retry_after_seconds"] = config.storm_retry_after
            waits = Run.objects.filter(document__in=storm_docs).aggregate(w=Sum("waits"))["w"]
            results["storm"]["waits_per_document"] = round((waits or 0) / len(storm_docs), 2)
            corpus_docs = make_documents(texts, len(texts), tag="k")
            results["corpus"] = phase("whole corpus", corpus_docs, max(config.worker_counts))
            results["stub_requests"] = len(stub.requests)
        finally:
            if pool is not None:
                pool.stop()
            redis.delete("vetted:llm:pause", "vetted:llm:slot", "vetted:llm:failures")
            if not config.keep:
                cleanup(started)
            for logger, level in zip(quiet, levels, strict=True):
                logger.setLevel(level)
    results["seconds"] = round(time.time() - started, 1)
    return results
