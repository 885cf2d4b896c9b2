from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks import bundles, evaluation
from documents.services import pages_extract
from engine.classifiers.trained import TrainedModel, UntrustedModel
from engine.document import HiddenText
from reliability import training
from reliability.services import build_classifiers, get_preset


class Command(BaseCommand):
    help = (
        "Run a labelled corpus (labels.csv, bundles/segments.jsonl) through extraction, the "
        "configured classifier and the whole verification chain; print the figures."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("corpus", nargs="?", help="folder with labels.csv")
        parser.add_argument(
            "--model",
            help="a trained classifier file (train_classifier --out): the offline primary with "
            "the rules as its gate, or the gate beside the LLM",
        )
        parser.add_argument(
            "--ground-truth",
            action="store_true",
            help="regression gate: compare --model with the active classifier on the held-back "
            "ground truth in the database; refuses (exit 1) when it is worse",
        )
        parser.add_argument(
            "--llm",
            action="store_true",
            help="with --ground-truth: the regression gate for Gemini: this code's prompt version "
            "(and --candidate-model) against the active one",
        )
        parser.add_argument(
            "--candidate-model",
            help="with --llm: a model name to compare with the configured one (GEMINI_MODEL or "
            "OPENAI_MODEL)",
        )
        parser.add_argument(
            "--allow-worse", action="store_true", help="with --ground-truth: warn, do not refuse"
        )
        parser.add_argument("--json", dest="json_out", help="also write the figures here")
        parser.add_argument("--preset", default=None)
        parser.add_argument("--limit", type=int, default=None)
        parser.add_argument(
            "--fields",
            help="expected fields (JSONL): the corpus's (doc_id, fields), or a ground-truth "
            "export with text (reviewers' field corrections as a regression set); default "
            "CORPUS/fields.jsonl. With --ground-truth: the database's field ground truth",
            nargs="?",
            const="",
        )
        parser.add_argument(
            "--corrected-only",
            action="store_true",
            help="with field ground truth: only the values reviewers corrected",
        )
        parser.add_argument(
            "--bundles",
            type=int,
            default=12,
            help="also join this many bundles of the corpus's documents (different orders, "
            "lengths and types) in a temporary folder and measure where they are cut; 0: none",
        )
        parser.add_argument("--seed", type=int, default=27, help="the generated bundles' seed")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["llm"] or options["candidate_model"]:
            if not options["ground_truth"]:
                raise CommandError("--llm compares on held-back ground truth: add --ground-truth.")
            self._llm_gate(options)
            return
        if options["ground_truth"] and options["fields"] is not None and not options["model"]:
            self._field_regression(options)
            return
        model = self._model(options["model"])
        if options["ground_truth"]:
            self._regression_gate(model, options)
            return
        if not options["corpus"] and options["fields"]:
            # A ground-truth export with text: its field ground truth alone.
            modes = evaluation.evaluate_fields(
                Path("."), Path(options["fields"]), extract=lambda p: [], run=self._extract_fields
            )
            self.stdout.write(evaluation.format_fields(modes))
            if options["json_out"]:
                Path(options["json_out"]).write_text(
                    json.dumps({"fields": modes}, indent=2, sort_keys=True)
                )
            return
        if not options["corpus"]:
            raise CommandError("Give a corpus folder (or --ground-truth).")
        corpus = Path(options["corpus"])
        if not (corpus / "labels.csv").exists():
            raise CommandError(f"{corpus}/labels.csv not found.")

        def extract(path: Path) -> list[str]:
            # As a run is given it: the pages' text and the hidden text ingestion recorded.
            read = pages_extract(name=path.name, data=path.read_bytes())
            return evaluation.Pages(
                [p.text for p in read],
                [
                    HiddenText(page=p.number, kind=item["kind"], words=item["words"])
                    for p in read
                    for item in p.hidden
                ],
            )

        primary, gate, client = build_classifiers()
        if model is not None:
            if client is not None:
                # With a language model the gate is the rules, whatever is trained
                # (reliability.services.gate_classifier, docs/independence.md).
                raise CommandError(
                    "--model evaluates a trained classifier as the offline primary; with a "
                    "language model configured the gate is the rules. Unset GEMINI_API_KEY "
                    "(with LLM_PROVIDER=openai: unset LLM_PROVIDER and OPENAI_MODEL)."
                )
            primary, gate = training.roles(model)
        preset = get_preset(options["preset"])
        self.stdout.write(
            f"Classifier: {primary.name} ({primary.model}); gate "
            f"{f'{gate.name} ({gate.model})' if gate is not None else 'none'}; preset {preset.name}"
        )
        report = evaluation.evaluate(
            corpus,
            extract=extract,
            classify=primary.classify,
            preset=preset,
            llm=client,
            gate=gate,
            limit=options["limit"],
            progress=lambda m: self.stderr.write(m),
            calibrated=getattr(primary, "calibrated", False),
        )
        metrics = report.metrics()
        metrics["classifier"] = {
            "name": primary.name,
            "model": primary.model,
            "gate": gate.model if gate is not None else None,
            "preset": preset.name,
        }
        if options["bundles"]:
            with tempfile.TemporaryDirectory() as folder:
                built = bundles.build(
                    corpus,
                    Path(folder),
                    extract=extract,
                    rows=evaluation.read_labels(corpus),
                    count=options["bundles"],
                    seed=options["seed"],
                )
                generated = evaluation.evaluate_bundles(
                    built,
                    extract=extract,
                    classify=primary.classify,
                    preset=preset,
                    llm=client,
                    gate=gate,
                    calibrated=getattr(primary, "calibrated", False),
                )
            metrics["generated_bundles"] = {
                **evaluation.bundle_metrics(generated),
                "seed": options["seed"],
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

    def _field_regression(self, options: dict[str, Any]) -> None:
        """The fields of every document a clinician decided, against the values the
        clinicians corrected or let stand: a regression set that grows with each review."""
        from documents.models import Page
        from review.models import GroundTruth
        from review.serializers import ground_truth_as_dict

        latest: dict[Any, GroundTruth] = {}
        for truth in GroundTruth.objects.select_related("document", "reviewer").order_by(
            "document_id", "-version"
        ):
            latest.setdefault(truth.document_id, truth)
        records = []
        for truth in latest.values():
            if truth.source not in evaluation.CLINICIAN_SOURCES or not truth.fields:
                continue
            row = ground_truth_as_dict(truth)
            row["pages"] = list(
                Page.objects.filter(document_id=truth.document_id)
                .order_by("number")
                .values_list("text", flat=True)
            )
            records.append(row)
        cases = evaluation.field_cases_from_ground_truth(
            records, corrected_only=options["corrected_only"]
        )
        if options["limit"]:
            cases = cases[: options["limit"]]
        if not cases:
            raise CommandError("No field ground truth from clinicians in the database.")
        self.stdout.write(
            f"Field ground truth: {len(cases)} segments of {len(records)} documents decided "
            "by clinicians."
        )
        modes = evaluation.evaluate_field_cases(cases, run=self._extract_fields)
        self.stdout.write(evaluation.format_fields(modes))
        if options["json_out"]:
            Path(options["json_out"]).write_text(
                json.dumps({"fields": modes}, indent=2, sort_keys=True)
            )
            self.stdout.write(f"Wrote {options['json_out']}")

    def _model(self, path: str | None) -> TrainedModel | None:
        if not path:
            return None
        try:
            return training.load_file(Path(path))
        except (OSError, UntrustedModel) as exc:
            raise CommandError(f"{path}: {exc}") from exc

    def _regression_gate(self, model: TrainedModel | None, options: dict[str, Any]) -> None:
        """The candidate model against the active classifier on held-back ground truth."""
        if model is None:
            raise CommandError("--ground-truth compares a candidate: give --model PATH.")
        preset = get_preset(options["preset"])
        _train, held = training.split(training.ground_truth_records())
        if not held:
            raise CommandError("No held-back ground truth in the database to compare on.")
        active = training.active_model()
        name = f"trained-{active.version}" if active is not None else "rules"
        candidate = training.chain_figures(held, *training.roles(model), preset)
        baseline = training.chain_figures(held, *training.roles(active), preset)
        ok, reasons = training.compare(candidate, baseline)
        self.stdout.write(
            f"Held-back ground truth: {len(held)} documents. Candidate trained-{model.version} "
            f"against the active classifier ({name}), preset {preset.name}:"
        )
        self.stdout.write("; ".join(reasons))
        for line in training.per_type_lines(candidate, baseline, name):
            self.stdout.write(line)
        if options["json_out"]:
            Path(options["json_out"]).write_text(
                json.dumps(
                    {"candidate": candidate, "active": baseline, "active_name": name, "ok": ok},
                    indent=2,
                    sort_keys=True,
                )
            )
        self._verdict(ok, options)

    def _llm_gate(self, options: dict[str, Any]) -> None:
        """A language-model prompt version or model name against the active one, on held-back ground
        truth that clinicians gave (auto-accepted answers are the active model's own)."""
        from engine import llm
        from reliability import llm_gate

        # Messages name Gemini when it is the configured provider, as they always have.
        gemini = llm.provider(settings) == "gemini"
        if not llm.configured(settings):
            raise CommandError(
                "The LLM regression gate needs Gemini: set GEMINI_API_KEY (or the Vertex settings)."
                if gemini
                else "The LLM regression gate needs a language model: "
                f"{llm.not_configured_reason(settings)}."
            )
        label = "Gemini" if gemini else llm.model_name(settings)
        preset = get_preset(options["preset"])
        candidate_model = options["candidate_model"] or llm.model_name(settings)
        _train, held = training.split(training.ground_truth_records(sme_only=True))
        if options["limit"]:
            held = held[: options["limit"]]
        if not held:
            raise CommandError("No held-back clinician ground truth in the database to compare on.")
        result = llm_gate.compare_llm(
            held,
            candidate_model=candidate_model,
            preset=preset,
            progress=lambda m: self.stderr.write(m),
        )
        compared = len(result.candidate.results)
        if not compared:
            raise CommandError(
                f"None of the {len(held)} held-back documents has a completed {label} run to "
                "compare with: give --candidate-model to run the configured model beside it."
            )
        candidate = training.figures(result.candidate.results)
        active = training.figures(result.active.results)
        ok, reasons = training.compare(candidate, active)
        how = (
            f"the configured {llm.model_name(settings)}, run now with the same prompt"
            if result.mode == "live"
            else "as recorded on the documents' latest runs"
        )
        left_out = (
            f" ({result.skipped} without a recorded {label} answer left out)"
            if result.skipped
            else ""
        )
        self.stdout.write(
            f"Held-back clinician ground truth: {compared} documents{left_out}, "
            f"preset {preset.name}."
        )
        self.stdout.write(f"Candidate: {result.candidate.describe()}.")
        self.stdout.write(f"Active ({how}): {result.active.describe()}.")
        self.stdout.write("; ".join(reasons))
        for line in training.per_type_lines(candidate, active, "active"):
            self.stdout.write(line)
        if options["json_out"]:
            Path(options["json_out"]).write_text(
                json.dumps(
                    {
                        "candidate": candidate,
                        "active": active,
                        "mode": result.mode,
                        "candidate_versions": _versions(result.candidate.versions),
                        "active_versions": _versions(result.active.versions),
                        "skipped": result.skipped,
                        "ok": ok,
                    },
                    indent=2,
                    sort_keys=True,
                )
            )
        self._verdict(ok, options)

    def _verdict(self, ok: bool, options: dict[str, Any]) -> None:
        if ok:
            self.stdout.write("Not worse than the active classifier.")
        elif options["allow_worse"]:
            self.stderr.write("WARNING: the candidate is worse than the active classifier.")
        else:
            raise CommandError(
                "The candidate is worse than the active classifier on held-back ground truth; "
                "refusing (--allow-worse to only warn)."
            )

    def _extract_fields(self, doc_type: str, pages: list[str], loop: bool) -> dict[str, Any]:
        from engine.fields.extractors import offline_extractor
        from engine.fields.library import find_template
        from engine.fields.loop import run_loop
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
        canonical = {
            name: f.canonical
            for name, f in result.best.fields.items()
            if f.status == "found" and f.canonical
        }
        return {
            "values": values,
            "canonical": canonical,
            "iterations": len(result.iterations),
            "score": result.final_score,
        }


def _versions(counts: Any) -> list[dict[str, Any]]:
    return [
        {"model": model, "prompt_version": version, "documents": n}
        for (model, version), n in counts.items()
    ]
