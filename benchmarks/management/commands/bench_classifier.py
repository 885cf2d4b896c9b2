from __future__ import annotations

import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from engine.classifiers import trained
from reliability import training
from reliability.management.commands.train_classifier import extract


def synthetic(records: list[training.Record], n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` (text, label) records made from real ones: a random stretch of 60-100% of a
    document's words with one word in ten dropped, so no two are the same text."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        record = rng.choice(records)
        words = record.text.split()
        if not words:
            continue
        keep = max(1, int(len(words) * rng.uniform(0.6, 1.0)))
        start = rng.randrange(0, len(words) - keep + 1)
        chosen = [w for w in words[start : start + keep] if rng.random() > 0.1]
        out.append((" ".join(chosen), record.label))
    return out


class Command(BaseCommand):
    help = (
        "Time the trained classifier: training on N ground-truth-like records made from a "
        "labelled corpus (one core), and prediction per document."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--corpus", required=True, help="a folder with labels.csv")
        parser.add_argument("--records", type=int, default=10_000)
        parser.add_argument("--predict", type=int, default=300, help="documents to time")
        parser.add_argument("--seed", type=int, default=15)
        parser.add_argument("--json", dest="json_out")

    def handle(self, *args: Any, **options: Any) -> None:
        from threadpoolctl import threadpool_limits

        corpus = Path(options["corpus"])
        if not (corpus / "labels.csv").exists():
            raise CommandError(f"{corpus}/labels.csv not found.")
        records = training.corpus_records(corpus, extract)
        data = synthetic(records, options["records"], options["seed"])
        chars = sum(len(t) for t, _ in data)
        with threadpool_limits(limits=1):
            cpu = time.process_time()
            model = trained.fit([t for t, _ in data], [lab for _, lab in data])
            cpu = time.process_time() - cpu
            sample = records[: options["predict"]]
            times = []
            for record in sample:
                started = time.perf_counter()
                model.predict(record.text)
                times.append((time.perf_counter() - started) * 1000)
            classifier = trained.TrainedClassifier(model)
            chain_times = []
            for record in sample:
                started = time.perf_counter()
                classifier.classify(record.pages)
                chain_times.append((time.perf_counter() - started) * 1000)
        times.sort()
        chain_times.sort()
        result = {
            "records": len(data),
            "characters": chars,
            "training_seconds": model.seconds,
            "training_cpu_seconds": round(cpu, 2),
            "predict_documents": len(times),
            "predict_ms_mean": round(statistics.fmean(times), 3),
            "predict_ms_p95": round(times[int(0.95 * (len(times) - 1))], 3),
            "classify_ms_mean": round(statistics.fmean(chain_times), 3),
            "classify_ms_p95": round(chain_times[int(0.95 * (len(chain_times) - 1))], 3),
            "threads": 1,
        }
        self.stdout.write(
            f"Training on {result['records']} records ({chars / 1e6:.1f} M characters, one "
            f"thread): {result['training_seconds']:.1f} s wall, {cpu:.1f} s CPU"
        )
        self.stdout.write(
            f"Prediction (trained model) per document: mean {result['predict_ms_mean']:.2f} ms, "
            f"p95 {result['predict_ms_p95']:.2f} ms over {len(times)} documents"
        )
        self.stdout.write(
            f"Whole trained classifier (rules' segments and evidence + model): mean "
            f"{result['classify_ms_mean']:.2f} ms, p95 {result['classify_ms_p95']:.2f} ms"
        )
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(result, indent=2, sort_keys=True))
            self.stdout.write(f"Wrote {options['json_out']}")
