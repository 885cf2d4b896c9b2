from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks.evaluation import read_labels
from benchmarks.learning_sim import TARGETS, Options, label_flips, simulate
from reliability.learner import Example, Learner, Settings
from reliability.management.commands.train_classifier import extract
from reliability.services import get_preset

# The frozen test split: three documents in ten, by a hash of the file's bytes, so the same
# document is on the same side in every corpus and every run. Tune with --split dev; the
# figures of --split all are reported for each side.
TEST_SHARE_IN_TEN = 3


def is_test(data: bytes) -> bool:
    return int(hashlib.sha256(data).hexdigest()[:8], 16) % 10 < TEST_SHARE_IN_TEN


def corpus_pages(path: Path, cache: Path | None = None) -> list[str]:
    """The pages' text of a corpus file, extracted in the sandbox; with ``cache``, kept there
    by the hash of the file's bytes (extraction dominates a short run)."""
    if cache is None:
        return extract(path)
    cached = cache / (hashlib.sha256(path.read_bytes()).hexdigest() + ".json")
    if cached.exists():
        return list(json.loads(cached.read_text()))
    pages = extract(path)
    cache.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(pages))
    return pages


def read_corpus(
    folder: Path, *, cache: Path | None = None, split: str = "all"
) -> tuple[list[Example], set[str]]:
    """A labelled corpus (labels.csv: doc_id,label,source,path) in the order of its rows, and
    the keys of its frozen test split. ``cache``: a folder for the pages' text by the file's
    hash (extraction runs in the sandbox and dominates a short run); ``split``: dev, test or
    all."""
    labels = folder / "labels.csv"
    if not labels.exists():
        raise CommandError(f"{labels} not found.")
    records, test = [], set()
    for r in read_labels(folder):
        path = folder / r["path"]
        data = path.read_bytes()
        if is_test(data):
            test.add(r["doc_id"])
            if split == "dev":
                continue
        elif split == "test":
            continue
        pages = corpus_pages(path, cache)
        records.append(
            Example(r["doc_id"], r["label"], pages, source=r.get("source") or folder.name)
        )
    return records, test


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
        parser.add_argument("--split", choices=("dev", "test", "all"), default="all")
        parser.add_argument("--text-cache", help="a folder to keep extracted text in, by hash")
        parser.add_argument(
            "--state-cache",
            help="a folder to keep the first attempt on the initial corpus in (benchmark only)",
        )
        parser.add_argument("--no-memory", action="store_true", help="no exemplar memory")
        parser.add_argument("--no-waivers", action="store_true", help="no learned waivers")
        parser.add_argument("--waiver-after", type=int, default=10)
        parser.add_argument("--cell-min", type=int, default=10)
        parser.add_argument(
            "--small-sample",
            action="store_true",
            default=settings.RISK_SMALL_SAMPLE,
            help="below 1/alpha - 1 labels, the zero-error rule at the preset 0.96 (i.i.d.)",
        )
        parser.add_argument(
            "--source-window",
            type=int,
            default=settings.LEARNING_MEMORY_SOURCE_WINDOW,
            help="the source's recent labels that must agree for its own vote (0: none)",
        )
        parser.add_argument(
            "--reviewer-flips",
            type=float,
            default=0.0,
            help="share of the simulated clinicians' labels flipped to another type (0.1: 10%%)",
        )
        parser.add_argument(
            "--poison",
            help="a source whose escalated documents a reviewer always labels --poison-label",
        )
        parser.add_argument("--poison-label", default="pathology")
        parser.add_argument(
            "--only", help="comma-separated sources to run with --leave-each-out (tuning)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        initial_dir = Path(options["initial"])
        self.stderr.write(f"Reading {initial_dir} ...")
        cache = Path(options["text_cache"]) if options["text_cache"] else None
        initial, test_keys = read_corpus(initial_dir, cache=cache, split=options["split"])
        if options["label_flips"]:
            self._label_flips(initial, options)
            return
        runs: list[tuple[str, list[Example], list[Example]]] = []
        if options["leave_each_out"] or options["leave_out"]:
            sources = sorted({r.source for r in initial})
            chosen = sources if options["leave_each_out"] else [options["leave_out"]]
            if options["only"]:
                chosen = [c for c in chosen if c in options["only"].split(",")]
            for source in chosen:
                if source not in sources:
                    raise CommandError(f"No source {source!r}; sources: {', '.join(sources)}.")
                stream = [r for r in initial if r.source == source]
                random.Random(options["seed"]).shuffle(stream)
                runs.append((source, [r for r in initial if r.source != source], stream))
        elif options["stream"]:
            self.stderr.write(f"Reading {options['stream']} ...")
            stream, stream_test = read_corpus(
                Path(options["stream"]), cache=cache, split=options["split"]
            )
            test_keys |= stream_test
            runs.append((Path(options["stream"]).name, initial, stream))
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
            memory_source_min=settings.LEARNING_MEMORY_SOURCE_MIN,
            memory_source_window=options["source_window"],
            small_sample=options["small_sample"],
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
                        memory=not options["no_memory"],
                        waivers=not options["no_waivers"],
                        waiver_after=options["waiver_after"],
                        cell_min=options["cell_min"],
                        reviewer_flips=options["reviewer_flips"],
                        poison=options["poison"] or "",
                        poison_label=options["poison_label"],
                    ),
                    log=self.stdout.write,
                    test_keys=test_keys,
                    cache=Path(options["state_cache"]) if options["state_cache"] else None,
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
        for source, c in sorted(s["sources"].items()):
            until = c["reviews_until_below_10pct"]
            self.stdout.write(
                f"  source {source}: {c['documents']} documents, {c['reviews']} reviews, "
                f"escalated {c['escalated']}, accepted {c['accepted']} "
                f"(wrong {c['accepted_wrong']}; {c['accepted_by_waiver']} by a waiver); "
                f"reviews before a batch <= 10%: {until if until is not None else 'never'}; "
                f"by batch {' '.join(c['escalation_by_batch'])}; memory confirmed/contradicted "
                f"{c['memory'][0]}/{c['memory'][1]}, trusted after "
                f"{c['trusted_after_reviews']} reviews; dev split {c['dev_accepted_wrong']} "
                f"wrong of {c['dev_accepted']} accepted, {c['dev_escalated']} of "
                f"{c['dev_documents']} escalated; test split {c['test_accepted_wrong']} wrong of "
                f"{c['test_accepted']} accepted, {c['test_escalated']} of "
                f"{c['test_documents']} escalated"
            )
        if s["waivers"]:
            self.stdout.write(f"  waivers learned: {s['waivers']}")

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
