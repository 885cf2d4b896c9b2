from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from documents.services import pages_extract
from reliability import training
from reliability.services import get_preset


def extract(path: Path) -> list[str]:
    return [p.text for p in pages_extract(name=path.name, data=path.read_bytes())]


class Command(BaseCommand):
    help = (
        "Train the TF-IDF + calibrated linear classifier on the current ground truth (or a "
        "labelled corpus folder), store it, and activate it only if it is not worse than the "
        "active classifier on the held-back slice. --cv K cross-validates instead."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--corpus", help="a folder with labels.csv instead of ground truth")
        parser.add_argument(
            "--sme-only", action="store_true", help="leave out auto-accepted ground truth"
        )
        parser.add_argument("--out", help="also write the signed model to this file")
        parser.add_argument("--no-activate", action="store_true")
        parser.add_argument("--preset", default=None)
        parser.add_argument("--cv", type=int, default=0, help="K-fold cross-validation only")
        parser.add_argument("--json", dest="json_out", help="also write the figures here")

    def handle(self, *args: Any, **options: Any) -> None:
        preset = get_preset(options["preset"])
        if options["corpus"]:
            corpus = Path(options["corpus"])
            if not (corpus / "labels.csv").exists():
                raise CommandError(f"{corpus}/labels.csv not found.")
            records = training.corpus_records(corpus, extract)
            source = f"corpus {corpus.name}"
        else:
            records = training.ground_truth_records(sme_only=options["sme_only"])
            source = "ground truth" + (" (clinicians only)" if options["sme_only"] else "")
        if len({r.label for r in records}) < 2:
            raise CommandError(
                f"{len(records)} labelled document(s) of fewer than two types: nothing to train on."
            )
        if options["cv"]:
            self._cross_validate(records, options["cv"], preset, options["json_out"])
            return
        try:
            result = training.train(
                records, source=source, preset=preset, activate=not options["no_activate"]
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        for line in result.report:
            self.stdout.write(line)
        self.stdout.write(f"Stored as model {result.row.pk} (trained-{result.row.version}).")
        if options["out"]:
            Path(options["out"]).write_bytes(bytes(result.row.blob))
            self.stdout.write(f"Wrote {options['out']}")
        if options["json_out"]:
            payload = {
                "model_id": result.row.pk,
                "version": result.row.version,
                "activated": result.activated,
                "decision": result.row.decision,
                "training_seconds": result.row.training_seconds,
                **result.row.metrics,
            }
            Path(options["json_out"]).write_text(json.dumps(payload, indent=2, sort_keys=True))
            self.stdout.write(f"Wrote {options['json_out']}")

    def _cross_validate(
        self, records: list[training.Record], k: int, preset: Any, json_out: str | None
    ) -> None:
        if k < 2:
            raise CommandError("--cv needs at least 2 folds.")
        result = training.cross_validate(
            records, k=k, preset=preset, progress=lambda m: self.stderr.write(m)
        )
        t, r = result["trained"], result["rules"]
        self.stdout.write(
            f"{k}-fold cross-validation on {result['documents']} documents (preset "
            f"{preset.name}); every document judged by a model that never saw it."
        )
        self.stdout.write(f"{'':<22}{'trained':>10}{'rules':>10}")
        for key, name in (
            ("accuracy", "accuracy"),
            ("macro_f1", "macro-F1"),
            ("escalation_rate", "escalation rate"),
            ("accepted_error_rate", "accepted-error rate"),
        ):
            self.stdout.write(f"{name:<22}{t[key]:>10.4f}{r[key]:>10.4f}")
        self.stdout.write(
            f"{'accepted (errors)':<22}{t['accepted']:>6} ({t['accepted_errors']})"
            f"{r['accepted']:>6} ({r['accepted_errors']})"
        )
        self.stdout.write("")
        for line in training.per_type_lines(t, r, "rules"):
            self.stdout.write(line)
        self.stdout.write(f"Mean training time per fold: {result['mean_training_seconds']} s")
        if json_out:
            Path(json_out).write_text(json.dumps(result, indent=2, sort_keys=True))
            self.stdout.write(f"Wrote {json_out}")
