from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks import deid


class Command(BaseCommand):
    help = (
        "Token-level recall and precision of PHI removal, overall and per type, on a JSONL "
        'file of {"doc_id", "text", "phi": [{"start", "end", "type"}]} lines. Also converts '
        "the shipped sample's markup and the PhysioNet 'Deidentified Medical Text' gold "
        "standard (id.text and id-phi.phrase) to that format."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", help="the gold JSONL to score")
        parser.add_argument("--json", dest="json_out", help="write the figures here as JSON")
        parser.add_argument(
            "--detector",
            choices=deid.DETECTORS,
            default="vetted",
            help="what to score: Vetted's de-identifier (default), or for comparison Presidio's "
            "pattern recognisers (needs presidio-analyzer installed)",
        )
        parser.add_argument(
            "--errors", type=int, default=0, help="print the N most frequent misses and false hits"
        )
        parser.add_argument(
            "--from-markup",
            metavar="MARKUP",
            help="convert the sample's [[TYPE|text]] markup (benchmarks/deid_sample.txt) to "
            "JSONL at --write",
        )
        parser.add_argument(
            "--from-physionet",
            metavar="DIR",
            help="convert DIR/id.text and DIR/id-phi.phrase to JSONL at --write",
        )
        parser.add_argument(
            "--patients",
            choices=("all", "odd", "even", "dev", "test"),
            default="all",
            help="with --from-physionet: every note, odd or even patient numbers, or the "
            "frozen split by a hash of the patient number (test: a quarter of the patients)",
        )
        parser.add_argument("--write", help="where a conversion writes its JSONL")
        parser.add_argument(
            "--generated",
            choices=("train", "held"),
            help="write the generated gold (engine.deid.synthetic) of these templates to --write",
        )
        parser.add_argument(
            "--model",
            help="score with this statistical model (a file from --train) instead of the default",
        )
        parser.add_argument(
            "--train",
            metavar="OUT",
            help="train a site model on FILE(s) (gold JSONL) and the generated notes, write it "
            "to OUT (use it with DEID_MODEL=OUT); nothing is scored",
        )
        parser.add_argument(
            "--train-default",
            action="store_true",
            help="train the default model from the generated notes into engine/deid/data/",
        )
        parser.add_argument("more", nargs="*", help="further gold JSONL files for --train")

    def handle(self, *args: Any, **options: Any) -> None:
        from engine.deid import statistical

        if options["train_default"]:
            statistical.train_default(statistical.SHIPPED)
            self.stderr.write(f"Wrote {statistical.SHIPPED} ({statistical.fingerprint()})")
            return
        if options["train"]:
            files = [Path(f) for f in [options["file"], *options["more"]] if f]
            started = time.perf_counter()
            statistical.train(deid.training_records(files), Path(options["train"]))
            self.stderr.write(
                f"Wrote {options['train']} from {len(files)} file(s) and the generated notes "
                f"in {time.perf_counter() - started:.0f} s"
            )
            return
        if options["model"]:
            statistical.configure(options["model"])
        if options["generated"]:
            if not options["write"]:
                raise CommandError("--generated needs --write OUT.jsonl.")
            deid.write_jsonl(Path(options["write"]), deid.generated(options["generated"]))
            if not options["file"]:
                return
        if options["from_markup"] or options["from_physionet"]:
            self._convert(options)
            if not options["file"]:
                return
        if not options["file"]:
            raise CommandError("Give the gold JSONL to score (or a conversion to run).")
        path = Path(options["file"])
        if not path.exists():
            raise CommandError(f"No such file: {path}")
        try:
            records = list(deid.read_jsonl(path))
        except (ValueError, json.JSONDecodeError) as exc:
            raise CommandError(f"Not a gold JSONL file: {exc}") from None
        started = time.perf_counter()
        scored = deid.score(records, deid.detector(options["detector"]))
        elapsed = time.perf_counter() - started
        report = scored.report()
        report["ms_per_document"] = round(1000 * elapsed / max(1, len(records)), 1)
        report["ms_per_kb"] = round(
            1000 * elapsed / max(1, sum(len(r["text"]) for r in records) / 1000), 2
        )
        report["detector"] = options["detector"]
        report["removed_types"] = deid.removed_recall(report)
        report["file"] = str(path)
        self.stdout.write(_table(report))
        if options["errors"]:
            self._errors(scored, options["errors"])
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(report, indent=2) + "\n")

    def _convert(self, options: dict[str, Any]) -> None:
        if not options["write"]:
            raise CommandError("A conversion needs --write OUT.jsonl.")
        if options["from_markup"]:
            records = deid.from_markup(Path(options["from_markup"]).read_text(encoding="utf-8"))
        else:
            folder = Path(options["from_physionet"])
            text, phrases = folder / "id.text", folder / "id-phi.phrase"
            if not text.exists() or not phrases.exists():
                raise CommandError(f"{folder} needs id.text and id-phi.phrase.")
            records = deid.from_physionet(text, phrases, patients=options["patients"])
        with Path(options["write"]).open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.stderr.write(f"Wrote {len(records)} document(s) to {options['write']}")

    def _errors(self, scored: Any, limit: int) -> None:
        for title, found in (("missed", scored.missed), ("false hits", scored.spurious)):
            counted = Counter((kind, token) for _doc, kind, token in found)
            self.stdout.write(f"\n{title}:")
            for (kind, token), n in counted.most_common(limit):
                self.stdout.write(f"  {n:4d}  {kind:8s} {token}")


def _figure(value: float | None) -> str:
    return "   -  " if value is None else f"{value:6.3f}"


def _table(report: dict[str, Any]) -> str:
    lines = [
        f"{report['file']}: {report['documents']} document(s), detector {report['detector']}",
        f"{'type':10s} {'recall':>6s} {'precision':>9s} {'support':>8s}",
    ]
    for kind, row in report["per_type"].items():
        lines.append(
            f"{kind:10s} {_figure(row['recall'])} {_figure(row['precision']):>9s} "
            f"{row['support']:8d}"
        )
    tokens = report["tokens"]
    lines.append(
        f"{'overall':10s} {_figure(report['recall'])} {_figure(report['precision']):>9s} "
        f"{tokens['gold']:8d}"
    )
    removed = report.get("removed_types")
    if removed:
        lines.append(
            f"{'removed':10s} {_figure(removed['recall'])} {'':>9s} {removed['support']:8d}"
            "   (the types Vetted removes: not YEAR, LOCATION, OTHER)"
        )
    if "ms_per_document" in report:
        lines.append(
            f"{report['ms_per_document']} ms per document, {report['ms_per_kb']} ms per KB"
        )
    return "\n".join(lines) + "\n"
