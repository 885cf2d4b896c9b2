from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks.learning_sim import TARGETS, Options, label_flips, simulate
from reliability.learner import Example, Learner, Settings
from reliability.management.commands.train_classifier import extract
from reliability.services import get_preset


def read_corpus(folder: Path) -> list[Example]:
    """A labelled corpus (labels.csv: doc_id,label,source,path) in the order of its rows."""
    labels = folder / "labels.csv"
    if not labels.exists():
        raise CommandError(f"{labels} not found.")
    with labels.open(newline="", encoding="utf-8-sig") as handle:
        rows = [
            {k.strip(): (v or "").strip() for k, v in r.items()} for r in csv.DictReader(handle)
        ]
    return [
        Example(
            r["doc_id"],
            r["label"],
            extract(folder / r["path"]),
            source=r.get("source") or folder.name,
        )
        for r in rows
    ]


class Command(BaseCommand):
    help = (
        "A simulated deployment of the learning loop: train on --initial, process --stream in "
        "batches (escalated documents reviewed with their true label, a share of accepted ones "
        "audited, the loop run between batches); per batch the escalation rate, accepted "
        "errors, model version and thresholds. --leave-out SOURCE / --leave-each-out: the "
        "stream is one source of --initial (shuffled with --seed), the rest the initial corpus."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--initial", required=True, help="labelled corpus folder")
        parser.add_argument("--stream", help="labelled corpus folder, processed in row order")
        parser.add_argument("--leave-out", help="a source of --initial to stream instead")
        parser.add_argument("--leave-each-out", action="store_true")
        parser.add_argument("--batch", type=int, default=25)
        parser.add_argument("--audit-rate", type=float, default=0.05)
        parser.add_argument(
            "--learn-every",
            type=int,
            default=settings.LEARNING_EVERY_LABELS,
            help="new clinician labels that start the loop between batches (0: never)",
        )
        parser.add_argument("--no-risk-control", action="store_true")
        parser.add_argument("--no-novelty", action="store_true")
        parser.add_argument("--order", choices=("fifo", "learning"), default="fifo")
        parser.add_argument(
            "--review-budget",
            type=int,
            default=0,
            help="clinician reviews per batch (0: every escalated document)",
        )
        parser.add_argument(
            "--compare-order",
            action="store_true",
            help="run twice, queue in arrival order and by learning value (needs a budget)",
        )
        parser.add_argument("--method", choices=("ltt", "crc"), default=settings.RISK_METHOD)
        parser.add_argument("--delta", type=float, default=settings.RISK_DELTA)
        parser.add_argument("--alpha", type=float, default=settings.TARGET_ACCEPTED_ERROR)
        parser.add_argument("--folds", type=int, default=settings.LEARNING_FOLDS)
        parser.add_argument("--preset", default=None)
        parser.add_argument(
            "--label-flips",
            type=int,
            default=0,
            help="instead of a deployment: flip N labels of --initial on purpose and measure "
            "how many the label-error finder (cleanlab) finds",
        )
        parser.add_argument("--seed", type=int, default=26)
        parser.add_argument("--json", dest="json_out")

    def handle(self, *args: Any, **options: Any) -> None:
        initial_dir = Path(options["initial"])
        self.stderr.write(f"Reading {initial_dir} ...")
        initial = read_corpus(initial_dir)
        if options["label_flips"]:
            self._label_flips(initial, options)
            return
        runs: list[tuple[str, list[Example], list[Example]]] = []
        if options["leave_each_out"] or options["leave_out"]:
            sources = sorted({r.source for r in initial})
            chosen = sources if options["leave_each_out"] else [options["leave_out"]]
            for source in chosen:
                if source not in sources:
                    raise CommandError(f"No source {source!r}; sources: {', '.join(sources)}.")
                stream = [r for r in initial if r.source == source]
                random.Random(options["seed"]).shuffle(stream)
                runs.append((source, [r for r in initial if r.source != source], stream))
        elif options["stream"]:
            self.stderr.write(f"Reading {options['stream']} ...")
            runs.append(
                (Path(options["stream"]).name, initial, read_corpus(Path(options["stream"])))
            )
        else:
            raise CommandError("Give --stream CORPUS, --leave-out SOURCE or --leave-each-out.")
        learner_settings = Settings(
            preset=get_preset(options["preset"]),
            alpha=options["alpha"],
            delta=options["delta"],
            method=options["method"],
            novelty_alpha=settings.NOVELTY_ALPHA,
            novelty_reference=settings.NOVELTY_REFERENCE_MAX,
            folds=options["folds"],
            gate_confirm_confidence=settings.GATE_CONFIRM_CONFIDENCE,
        )
        orders = ["fifo", "learning"] if options["compare_order"] else [options["order"]]
        if options["compare_order"] and not options["review_budget"]:
            raise CommandError("--compare-order needs --review-budget (otherwise order is moot).")
        results: dict[str, Any] = {}
        learner = Learner(learner_settings)  # one memo of the rules' answers for every run
        for name, start, stream in runs:
            for order in orders:
                label = name if len(orders) == 1 else f"{name} ({order})"
                self.stdout.write(
                    f"\n== {label}: initial {len(start)} documents, stream {len(stream)}, "
                    f"batch {options['batch']}, audit rate {options['audit_rate']:g}, "
                    f"risk control {'off' if options['no_risk_control'] else options['method']}"
                    f" (alpha {options['alpha']:g}, delta {options['delta']:g}), "
                    f"queue {order}"
                    + (
                        f", {options['review_budget']} reviews per batch"
                        if options["review_budget"]
                        else ""
                    )
                )
                summary = simulate(
                    learner,
                    start,
                    stream,
                    Options(
                        batch=options["batch"],
                        audit_rate=options["audit_rate"],
                        learn_every=options["learn_every"],
                        risk_control=not options["no_risk_control"],
                        novelty=not options["no_novelty"],
                        order=order,
                        review_budget=options["review_budget"],
                        seed=options["seed"],
                    ),
                    log=self.stdout.write,
                )
                self._summary(summary)
                results[label] = summary
        if len(results) > 1:
            self._overall(results)
        if options["json_out"]:
            payload: Any = next(iter(results.values())) if len(results) == 1 else {"runs": results}
            Path(options["json_out"]).write_text(json.dumps(payload, indent=2, sort_keys=True))
            self.stdout.write(f"Wrote {options['json_out']}")

    def _label_flips(self, records: list[Example], options: dict[str, Any]) -> None:
        learner = Learner(Settings(preset=get_preset(options["preset"]), folds=options["folds"]))
        result = label_flips(learner, records, flips=options["label_flips"], seed=options["seed"])
        self.stdout.write(
            f"{result['flipped']} of {result['documents']} labels flipped on purpose; the finder "
            f"flagged {result['found']}, {result['true_positives']} of them flips: precision "
            f"{result['precision']:.3f}, recall {result['recall']:.3f}; precision of its top "
            f"{result['flipped']}: {result['precision_at_flips']:.3f} ({result['seconds']} s). "
            f"Flagged but not flipped: {', '.join(result['not_flipped_but_found']) or 'none'}."
        )
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(result, indent=2, sort_keys=True))

    def _summary(self, s: dict[str, Any]) -> None:
        until = s["reviewed_until_below_10pct"]
        self.stdout.write(
            f"overall_accepted_error_rate {s['overall_accepted_error_rate']:.4f} "
            f"({s['accepted_wrong']} of {s['accepted']}); final_escalation_rate "
            f"{s['final_escalation_rate']:.4f}; reviewed_until_below_10pct "
            f"{until if until is not None else 'never'}; clinician reviews {s['clinician_reviews']}"
        )
        self.stdout.write(
            "targets: "
            + ", ".join(f"{k} {'met' if ok else 'NOT met'}" for k, ok in s["targets"].items())
        )

    def _overall(self, results: dict[str, Any]) -> None:
        accepted = sum(s["accepted"] for s in results.values())
        wrong = sum(s["accepted_wrong"] for s in results.values())
        self.stdout.write("\n== all runs")
        self.stdout.write(
            f"{'stream':<48}{'docs':>6}{'escalated':>11}{'final esc.':>12}{'acc. err.':>11}"
            f"{'reviews<=10%':>14}"
        )
        for name, s in results.items():
            until = s["reviewed_until_below_10pct"]
            self.stdout.write(
                f"{name:<48}{s['documents']:>6}{s['overall_escalation_rate']:>11.3f}"
                f"{s['final_escalation_rate']:>12.3f}{s['overall_accepted_error_rate']:>11.4f}"
                f"{until if until is not None else 'never':>14}"
            )
        self.stdout.write(
            f"accepted-error over every run: {wrong} of {accepted}"
            f" ({wrong / accepted if accepted else 0:.4f}); targets: final escalation <= "
            f"{TARGETS['final_escalation_rate']}, accepted-error <= "
            f"{TARGETS['overall_accepted_error_rate']}, reviews before 10% < "
            f"{TARGETS['reviewed_until_below_10pct']}"
        )
