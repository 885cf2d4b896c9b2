from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from documents import extraction
from documents.ocr import make_tesseract_engine
from reliability import evaluation
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

    def handle(self, *args: Any, **options: Any) -> None:
        corpus = Path(options["corpus"])
        if not (corpus / "labels.csv").exists():
            raise CommandError(f"{corpus}/labels.csv not found.")
        ocr = make_tesseract_engine(language=settings.OCR_LANGUAGE)

        def extract(path: Path) -> list[str]:
            pages = extraction.extract_file(
                path.name,
                path.read_bytes(),
                ocr=ocr,
                min_text_chars=settings.OCR_MIN_TEXT_CHARS,
                dpi=settings.OCR_DPI,
            )
            return [p.text for p in pages]

        primary, _, client = build_classifiers()
        preset = get_preset(options["preset"])
        self.stdout.write(f"Classifier: {primary.name} ({primary.model}); preset {preset.name}")
        report = evaluation.evaluate(
            corpus,
            extract=extract,
            classify=primary.classify,
            preset=preset,
            llm=client,
            limit=options["limit"],
            progress=lambda m: self.stderr.write(m),
        )
        metrics = report.metrics()
        metrics["classifier"] = {
            "name": primary.name,
            "model": primary.model,
            "preset": preset.name,
        }
        self.stdout.write(evaluation.format_report(metrics))
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(metrics, indent=2, sort_keys=True))
            self.stdout.write(f"Wrote {options['json_out']}")
