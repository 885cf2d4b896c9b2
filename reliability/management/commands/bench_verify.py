from __future__ import annotations

import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks import faults
from benchmarks.evaluation import read_labels
from documents.services import pages_extract
from engine import pipeline
from engine.document import DocumentContext
from reliability.services import get_preset


class Command(BaseCommand):
    help = (
        "Inject each fault kind into otherwise correct outputs for a corpus and report the "
        "share detected, the decision reached, false escalations on clean outputs and the "
        "verification time per document (LLM excluded)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("corpus")
        parser.add_argument("--preset", default=None)
        parser.add_argument("--limit", type=int, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        corpus = Path(options["corpus"])
        if not (corpus / "labels.csv").exists():
            raise CommandError(f"{corpus}/labels.csv not found.")
        preset = get_preset(options["preset"])
        documents: list[tuple[list[str], str]] = []
        for row in read_labels(corpus)[: options["limit"]]:
            path = corpus / row["path"]
            pages = [p.text for p in pages_extract(name=path.name, data=path.read_bytes())]
            documents.append((pages, row["label"]))

        def run(output: Any, pages: list[str]) -> pipeline.Outcome:
            context = DocumentContext(
                pages=pages, min_dominant_confidence=preset.min_dominant_confidence
            )
            return pipeline.orchestrate(
                classify=lambda _f: (output, 0), context=context, preset=preset, can_reask=False
            )

        clean_decisions: Counter[str] = Counter()
        timings: list[float] = []
        usable = 0
        results: dict[str, dict[str, Any]] = {
            f.name: {"applied": 0, "detected": 0, "decisions": Counter()} for f in faults.FAULTS
        }
        for pages, label in documents:
            clean = faults.clean_output(pages, label)
            if clean is None:
                continue
            usable += 1
            context = DocumentContext(
                pages=pages, min_dominant_confidence=preset.min_dominant_confidence
            )
            started = time.perf_counter()
            pipeline.verify(clean, context)
            timings.append((time.perf_counter() - started) * 1000)
            clean_decisions[run(clean, pages).decision.value] += 1
            for fault in faults.FAULTS:
                output, changed = clean.model_copy(deep=True), list(pages)
                if not fault.apply(output, changed):
                    continue
                entry = results[fault.name]
                entry["applied"] += 1
                first = pipeline.verify(
                    output,
                    DocumentContext(
                        pages=changed, min_dominant_confidence=preset.min_dominant_confidence
                    ),
                )
                if any(i.code == fault.expected_code for i in first.issues):
                    entry["detected"] += 1
                outcome = run(output, changed)
                key = outcome.decision.value
                if len(outcome.attempts) > 1:
                    key += " after auto-fix"
                entry["decisions"][key] += 1

        self.stdout.write(
            f"Corpus {corpus}: {len(documents)} documents, {usable} with a "
            f"usable body line; preset {preset.name}"
        )
        header = f"{'fault':<42}{'applied':>8}{'detected':>10}  decisions"
        self.stdout.write(header)
        self.stdout.write("-" * 100)
        for name, entry in results.items():
            share = entry["detected"] / entry["applied"] if entry["applied"] else 0.0
            mix = ", ".join(f"{k} {v}" for k, v in sorted(entry["decisions"].items()))
            self.stdout.write(f"{name:<42}{entry['applied']:>8}{share:>10.1%}  {mix}")
        escalated = clean_decisions["ESCALATE_TO_SME"]
        self.stdout.write(
            f"Clean outputs: {usable}, escalated {escalated} "
            f"(false-escalation rate {escalated / max(usable, 1):.2%}); "
            f"{dict(clean_decisions)}"
        )
        self.stdout.write(
            f"Verification time per document (LLM excluded): median "
            f"{statistics.median(timings):.2f} ms, p95 "
            f"{statistics.quantiles(timings, n=20)[18]:.2f} ms, max {max(timings):.2f} ms"
        )
