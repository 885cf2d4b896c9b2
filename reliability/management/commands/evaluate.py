from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks import evaluation
from documents.services import pages_extract
from reliability.services import build_classifiers, get_preset


class Command(BaseCommand):
    help = (
        "Run a labelled corpus (labels.csv, bundles/segments.jsonl) through extraction, the "
        "configured classifier and the whole verification chain; print the figures."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("corpus", help="folder with labels.csv")
        parser.add_argument("--json", dest="json_out", help="also write the figures here")
        parser.add_argument("--preset", default=None)
        parser.add_argument("--limit", type=int, default=None)
        parser.add_argument("--fields", help="expected fields (JSONL); default CORPUS/fields.jsonl")

    def handle(self, *args: Any, **options: Any) -> None:
        corpus = Path(options["corpus"])
        if not (corpus / "labels.csv").exists():
            raise CommandError(f"{corpus}/labels.csv not found.")

        def extract(path: Path) -> list[str]:
            return [p.text for p in pages_extract(name=path.name, data=path.read_bytes())]

        primary, gate, client = build_classifiers()
        preset = get_preset(options["preset"])
        self.stdout.write(f"Classifier: {primary.name} ({primary.model}); preset {preset.name}")
        report = evaluation.evaluate(
            corpus,
            extract=extract,
            classify=primary.classify,
            preset=preset,
            llm=client,
            gate=gate,
            limit=options["limit"],
            progress=lambda m: self.stderr.write(m),
        )
        metrics = report.metrics()
        metrics["classifier"] = {
            "name": primary.name,
            "model": primary.model,
            "preset": preset.name,
        }
        fields_file = Path(options["fields"]) if options["fields"] else corpus / "fields.jsonl"
        if fields_file.exists():
            metrics["fields"] = evaluation.evaluate_fields(
                corpus, fields_file, extract=extract, run=self._extract_fields
            )
        self.stdout.write(evaluation.format_report(metrics))
        if "fields" in metrics:
            self.stdout.write(evaluation.format_fields(metrics["fields"]))
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(metrics, indent=2, sort_keys=True))
            self.stdout.write(f"Wrote {options['json_out']}")

    def _extract_fields(self, doc_type: str, pages: list[str], loop: bool) -> dict[str, Any]:
        from engine.fields.extractors import offline_extractor
        from engine.fields.loop import run_loop
        from engine.fields.templates import find_template
        from reliability.fields import ProcessingOptions, loop_config, packs

        template = find_template(packs(), doc_type)
        if template is None:
            return {"values": {}, "iterations": 0, "score": 0.0}
        config = loop_config(
            ProcessingOptions(enable_reliability_loop=loop), settings.RELIABILITY_PRESET
        )
        result = run_loop(
            template=template,
            pages=pages,
            extractor=offline_extractor(template, pages),
            config=config,
        )
        values = {
            name: (f.value if f.status == "found" else None)
            for name, f in result.best.fields.items()
        }
        return {"values": values, "iterations": len(result.iterations), "score": result.final_score}
