from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks.evaluation import read_labels
from benchmarks.report_bench import measure
from benchmarks.splits import split_of
from documents.pages import UnreadableDocument, extract_text_file
from documents.services import pages_extract
from engine.lookalikes import generate
from engine.schemas import DOC_TYPES, DocType
from reliability.services import get_preset


class Command(BaseCommand):
    help = (
        "Issue 32: generated look-alikes (held-out templates are the test split) and a "
        "labelled corpus (its test split by file hash) through the offline chain, a fooled "
        "model (the lure type, or every other type, quoting the two most type-like lines) and a "
        "clean model; prints accepted-wrong counts and clean false escalations, dev and test "
        "side by side. A test split's failures are counted, never listed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--corpus", default=None, help="a folder with labels.csv (dev)")
        parser.add_argument("--per-template", type=int, default=4)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--preset", default=None)
        parser.add_argument("--limit", type=int, default=None)
        parser.add_argument("--show-dev-failures", action="store_true")
        parser.add_argument("--json", dest="json_out")

    def handle(self, *args: Any, **options: Any) -> None:
        preset = get_preset(options["preset"])
        confirm = settings.GATE_CONFIRM_CONFIDENCE
        results: dict[str, Any] = {"preset": preset.name}
        generated = generate(options["per_template"], seed=options["seed"])
        for split in ("dev", "test"):
            items = [
                (
                    g.template,
                    [p.text for p in extract_text_file(g.text)],
                    g.true_type,
                    [g.lure],
                )
                for g in generated
                if g.held_out == (split == "test")
            ]
            tally = measure(items, preset, confirm_confidence=confirm)
            results[f"lookalikes_{split}"] = tally.as_dict(show_wrong=split == "dev")
        if options["corpus"]:
            corpus = Path(options["corpus"])
            if not (corpus / "labels.csv").exists():
                raise CommandError(f"{corpus}/labels.csv not found.")
            by_split: dict[str, list[Any]] = {"dev": [], "test": []}
            unreadable: list[str] = []
            for row in read_labels(corpus)[: options["limit"]]:
                path = corpus / row["path"]
                try:
                    read = pages_extract(name=path.name, data=path.read_bytes())
                except UnreadableDocument:  # the sandbox's time limit on a loaded machine
                    unreadable.append(row["doc_id"])
                    continue
                pages = [p.text for p in read]
                true_type = DocType(row["label"])
                lures = [t for t in DOC_TYPES if t != true_type]
                by_split[split_of(path)].append((row["doc_id"], pages, true_type, lures))
            results["corpus_unreadable"] = unreadable
            for split, items in by_split.items():
                tally = measure(items, preset, confirm_confidence=confirm)
                results[f"corpus_{split}"] = tally.as_dict(show_wrong=split == "dev")
        for key, figures in results.items():
            if not isinstance(figures, dict):
                continue
            self.stdout.write(
                f"{key:<16} docs {figures['documents']:>4}  offline accepted wrong "
                f"{figures['offline_accepted_wrong']:>3}  fooled accepted wrong "
                f"{figures['fooled_accepted_wrong']:>3}/{figures['fooled_applied']:<4} clean "
                f"false escalation {figures['clean_escalated']}/{figures['clean']} "
                f"({100 * figures['clean_false_escalation']:.1f}%)"
            )
            if options["show_dev_failures"] and "wrong" in figures:
                for line in figures["wrong"]:
                    self.stdout.write(f"    {line}")
                self.stdout.write(f"    clean escalation codes: {figures['clean_reasons']}")
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(results, indent=2, sort_keys=True))
