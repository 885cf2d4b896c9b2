"""Breast pathology fields on generated reports: loop P/R per template and of the documents
scoring >= 0.95, build and held-out templates side by side (issue 37)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from benchmarks import oncology_bench
from benchmarks.management.commands.evaluate import Command as Evaluate


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--per-template", type=int, default=40)
        parser.add_argument("--json", help="write the figures to this file")
        parser.add_argument(
            "--build-only",
            action="store_true",
            help="measure the build templates only (while building: the held-out ones are "
            "measured, never studied)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # The same extraction as ``evaluate --fields``: the offline extractor in the loop,
        # configured by the settings and the preset in force.
        run = Evaluate()._extract_fields
        splits = ("build",) if options["build_only"] else ("build", "held_out")
        metrics = oncology_bench.measure(run, per_template=options["per_template"], splits=splits)
        self.stdout.write(oncology_bench.format_report(metrics))
        if options["json"]:
            Path(options["json"]).write_text(json.dumps(metrics, indent=2, sort_keys=True))
