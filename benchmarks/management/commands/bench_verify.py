from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks import faults
from benchmarks.evaluation import read_labels
from benchmarks.hiddengen import METHODS, hidden_pdf
from benchmarks.splits import split_of
from documents.ocr import make_tesseract_engine
from documents.pages import PageContent, UnreadableDocument, extract_pdf
from documents.services import pages_extract
from engine import pipeline
from engine.classifiers.offline import OfflineClassifier
from engine.document import DocumentContext, HiddenText, SecondOpinion
from engine.schemas import DOC_TYPES, ClassificationOutput, Decision, DocType
from engine.verifiers.gate import GateResult
from reliability.services import gate_classifier, get_preset


def _gate_decision(result: GateResult | None) -> str:
    """What the independent gate did with one output, in words."""
    if result is None:
        return "no gate"
    if result.overruled:
        return "disagreed without confidence, overruled by the structure"
    if not result.abstained:
        return "confirmed" if result.confirmed else "disagreed"
    if result.confirmed:
        return "agreed without confidence, confirmed by the structure"
    if result.issues and any(i.code == "gate_abstained" for i in result.issues):
        return "agreed without confidence, unconfirmed"
    return "disagreed without confidence" if result.issues else "abstained"


class Command(BaseCommand):
    help = (
        "Inject each fault kind into otherwise correct outputs for a corpus and report the "
        "share detected, the share escalated, the decision reached, false escalations on clean "
        "outputs and the verification time per document (LLM excluded). Every output is "
        "treated as an LLM's: the independent gate compares it with the offline classifier."
    )
    # "Hidden text" needs more than text to inject: for each document and each hiding method
    # (benchmarks.hiddengen.METHODS, one fault kind each), keyword stuffing for another type
    # (in turn) is drawn into a real PDF of the document where a reader cannot see it (or,
    # a lying ToUnicode map, drawn as benign glyphs), the PDF is read by the ingestion code
    # (documents.pages, in this process, with OCR for the glyph check), and a fooled model
    # answers that type quoting the hidden lines.

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("corpus")
        parser.add_argument("--preset", default=None)
        parser.add_argument("--limit", type=int, default=None)
        parser.add_argument("--json", dest="json_out", help="also write the figures here")
        parser.add_argument(
            "--no-hidden-text",
            action="store_true",
            help="skip the hidden-text faults (they draw and read a PDF per document and method)",
        )
        parser.add_argument(
            "--lie-every",
            type=int,
            default=4,
            help="the lying-ToUnicode fault on every Nth document only: its glyph check is an "
            "OCR call per document (seconds), the other methods are drawn for every document",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        corpus = Path(options["corpus"])
        if not (corpus / "labels.csv").exists():
            raise CommandError(f"{corpus}/labels.csv not found.")
        preset = get_preset(options["preset"])
        gate = gate_classifier()
        documents: list[tuple[list[str], str, list[HiddenText]]] = []
        # The frozen split of each document (benchmarks.splits): the clean false escalations
        # are counted for both, and only the development split's are named.
        names_and_splits: list[tuple[str, str]] = []
        for row in read_labels(corpus)[: options["limit"]]:
            path = corpus / row["path"]
            read = pages_extract(name=path.name, data=path.read_bytes())
            documents.append(([p.text for p in read], row["label"], hidden_of(read)))
            names_and_splits.append((row["path"], split_of(path)))

        def context_for(
            pages: list[str], hidden: list[HiddenText] | None = None
        ) -> DocumentContext:
            return DocumentContext(
                pages=pages,
                min_dominant_confidence=preset.min_dominant_confidence,
                second=SecondOpinion(gate.name, gate.classify(pages)),
                gate_confirm_confidence=settings.GATE_CONFIRM_CONFIDENCE,
                hidden=hidden or [],
            )

        def run(
            output: ClassificationOutput, pages: list[str], hidden: list[HiddenText] | None = None
        ) -> pipeline.Outcome:
            return pipeline.orchestrate(
                classify=lambda _f: (output, 0),
                context=context_for(pages, hidden),
                preset=preset,
                can_reask=False,
            )

        clean_decisions: Counter[str] = Counter()
        clean_gate = 0
        # What the gate did on clean outputs: confirmed by its own confidence, abstained and
        # confirmed by the structure, overruled by the structure, abstained unconfirmed...
        gate_decisions: Counter[str] = Counter()
        escalated_by: Counter[str] = Counter()
        by_split: dict[str, Counter[str]] = {"dev": Counter(), "test": Counter()}
        named: list[str] = []  # the development split's falsely escalated documents
        timings: list[float] = []
        # CPU time of the same calls beside their wall time: on a shared machine a thread
        # waits for a core, and the wall figure counts the wait as verification.
        cpu_timings: list[float] = []
        gate_timings: list[float] = []
        usable = 0
        names = [f.name for f in faults.FAULTS] + [f.name for f in faults.LLM_FAULTS]
        if not options["no_hidden_text"]:
            names.extend(_hidden_fault(method) for method in METHODS)
        ocr = make_tesseract_engine()
        hidden_kinds: Counter[str] = Counter()  # applied, by the way the text was hidden
        hidden_missed: Counter[str] = Counter()  # not escalated, by the way
        results: dict[str, dict[str, Any]] = {
            name: {"applied": 0, "detected": 0, "escalated": 0, "decisions": Counter()}
            for name in names
        }

        def record(
            name: str,
            code: str,
            output: ClassificationOutput,
            pages: list[str],
            hidden: list[HiddenText] | None = None,
        ) -> Decision:
            entry = results[name]
            entry["applied"] += 1
            first = pipeline.verify(output, context_for(pages, hidden), preset=preset)
            # A fault with no one expected code is detected when anything stops acceptance.
            if (code and any(i.code == code for i in first.issues)) or (
                not code and first.verdict.decision != Decision.AUTO_ACCEPT
            ):
                entry["detected"] += 1
            outcome = run(output, pages, hidden)
            entry["escalated"] += outcome.decision == Decision.ESCALATE_TO_SME
            key = outcome.decision.value
            if len(outcome.attempts) > 1:
                key += " after auto-fix"
            entry["decisions"][key] += 1
            return outcome.decision

        hidden_seconds = 0.0
        for number, (pages, label, hidden) in enumerate(documents):
            clean = faults.clean_output(pages, label)
            if clean is None:
                continue
            usable += 1
            started = time.perf_counter()
            context = context_for(pages, hidden)
            gate_timings.append((time.perf_counter() - started) * 1000)
            started, cpu_started = time.perf_counter(), time.thread_time()
            verification = pipeline.verify(clean, context, preset=preset)
            timings.append((time.perf_counter() - started) * 1000)
            cpu_timings.append((time.thread_time() - cpu_started) * 1000)
            clean_gate += any(i.agent == "GATE" for i in verification.issues)
            gate_decisions[_gate_decision(verification.gate_result)] += 1
            outcome = run(clean, pages, hidden)
            clean_decisions[outcome.decision.value] += 1
            name, split = names_and_splits[number]
            by_split[split]["outputs"] += 1
            if outcome.decision != Decision.AUTO_ACCEPT:
                codes = sorted({i.code for i in outcome.best.verification.issues})
                escalated_by.update(codes)
                by_split[split]["escalated"] += 1
                if split == "dev":
                    named.append(f"{name} ({label}): {', '.join(codes)}")
            for fault in faults.FAULTS:
                output, changed = clean.model_copy(deep=True), list(pages)
                if fault.apply(output, changed):
                    record(fault.name, fault.expected_code, output, changed)
            for retype in faults.LLM_FAULTS:
                for target in DOC_TYPES:
                    if target == DocType(label):
                        continue
                    output, changed = clean.model_copy(deep=True), list(pages)
                    if retype.apply(output, changed, target):
                        record(retype.name, retype.expected_code, output, changed)
            if options["no_hidden_text"]:
                continue
            others = [t for t in DOC_TYPES if t != DocType(label)]
            lines_of = [line for page in pages for line in page.split("\n")]
            for turn, (method, variants) in enumerate(METHODS.items()):
                if method == "tounicode_lie" and (ocr is None or number % options["lie_every"]):
                    continue
                target = others[(number + turn) % len(others)]
                lines = faults.stuffing_lines(pages, target)
                started = time.perf_counter()
                try:
                    pdf = hidden_pdf(
                        [lines_of],
                        lines,
                        method=method,
                        variant=(number + turn) % variants,
                        position=(1, 3, 99)[(number + turn) % 3],
                    )
                    read = extract_pdf(pdf, ocr=ocr if method == "tounicode_lie" else None)
                except UnreadableDocument:
                    continue  # nothing a reader sees on a page: no text layer to hide beside
                hidden_seconds += time.perf_counter() - started
                drawn = [p.text for p in read]
                fooled = faults.clean_output(drawn, label)
                if fooled is None:
                    continue
                faults.fooled(fooled, lines, target)
                hidden_kinds[method] += 1
                decision = record(
                    _hidden_fault(method), "hidden_text", fooled, drawn, hidden_of(read)
                )
                if decision != Decision.ESCALATE_TO_SME:
                    hidden_missed[method] += 1

        self.stdout.write(
            f"Corpus {corpus}: {len(documents)} documents, {usable} with a "
            f"usable body line; preset {preset.name}; independent gate: {gate.name} "
            f"({OfflineClassifier().model})"
        )
        header = f"{'fault':<42}{'applied':>8}{'detected':>10}{'escalated':>11}  decisions"
        self.stdout.write(header)
        self.stdout.write("-" * 110)
        figures: dict[str, Any] = {"documents": len(documents), "usable": usable, "faults": {}}
        for name, entry in results.items():
            applied = entry["applied"]
            detected = entry["detected"] / applied if applied else 0.0
            escalated = entry["escalated"] / applied if applied else 0.0
            mix = ", ".join(f"{k} {v}" for k, v in sorted(entry["decisions"].items()))
            self.stdout.write(f"{name:<42}{applied:>8}{detected:>10.1%}{escalated:>11.1%}  {mix}")
            figures["faults"][name] = {
                "applied": applied,
                "detected": round(detected, 4),
                "escalated": round(escalated, 4),
                "decisions": dict(entry["decisions"]),
            }
        if hidden_kinds:
            self.stdout.write(
                f"Hidden text: drawing and reading {sum(hidden_kinds.values())} PDFs took "
                f"{hidden_seconds:.1f} s"
            )
        # Ingestion's own findings on the corpus: hidden words, or only stray glyphs.
        flagged = sum(1 for _p, _l, hidden in documents if any(h.words for h in hidden))
        glyphs = sum(1 for _p, _l, hidden in documents if hidden) - flagged
        self.stdout.write(
            f"Corpus documents with hidden words: {flagged}; with stray hidden glyphs only: "
            f"{glyphs}"
        )
        figures["documents_with_hidden_text"] = flagged
        figures["documents_with_hidden_glyphs_only"] = glyphs
        escalated = clean_decisions["ESCALATE_TO_SME"]
        rate = escalated / max(usable, 1)
        self.stdout.write(
            f"Clean outputs: {usable}, escalated {escalated} "
            f"(false-escalation rate {rate:.2%}; {clean_gate} by the independent gate); "
            f"{dict(clean_decisions)}"
        )
        self.stdout.write(f"Clean false-escalation rate: {rate:.2%} ({escalated}/{usable})")
        for split, counts in by_split.items():
            share = counts["escalated"] / max(counts["outputs"], 1)
            kind = "test split" if split == "test" else "dev split (tuned on)"
            self.stdout.write(f"  {kind}: {share:.2%} ({counts['escalated']}/{counts['outputs']})")
        for line in named:
            self.stdout.write(f"  escalated (dev split): {line}")
        self.stdout.write(
            "Gate on clean outputs: "
            + ", ".join(f"{k} {v}" for k, v in sorted(gate_decisions.items()))
        )
        if escalated_by:
            self.stdout.write(
                "Codes on falsely escalated clean outputs: "
                + ", ".join(f"{k} {v}" for k, v in escalated_by.most_common())
            )
        median, p95 = _median_p95(timings)
        cpu_median, cpu_p95 = _median_p95(cpu_timings)
        self.stdout.write(
            f"Verification time per document (LLM excluded, gate included): median "
            f"{median:.2f} ms, p95 {p95:.2f} ms, max {max(timings, default=0.0):.2f} ms; "
            f"CPU time median {cpu_median:.2f} ms, p95 {cpu_p95:.2f} ms"
        )
        figures["clean"] = {
            "outputs": usable,
            "escalated": escalated,
            "false_escalation_rate": round(rate, 4),
            "escalated_by_gate": clean_gate,
            "decisions": dict(clean_decisions),
            "gate": dict(gate_decisions),
            "escalated_by": dict(escalated_by),
            "by_split": {
                split: {
                    "outputs": counts["outputs"],
                    "escalated": counts["escalated"],
                    "false_escalation_rate": round(
                        counts["escalated"] / max(counts["outputs"], 1), 4
                    ),
                }
                for split, counts in by_split.items()
            },
        }
        gate_median = statistics.median(gate_timings) if gate_timings else 0.0
        self.stdout.write(
            f"Independent classifier per document ({gate.name}): median {gate_median:.2f} ms"
        )
        figures["verification_ms"] = {"median": round(median, 3), "p95": round(p95, 3)}
        figures["verification_cpu_ms"] = {"median": round(cpu_median, 3), "p95": round(cpu_p95, 3)}
        figures["gate_classifier_ms"] = {"median": round(gate_median, 3)}
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(figures, indent=2, sort_keys=True))
            self.stdout.write(f"Wrote {options['json_out']}")


def _median_p95(timings: list[float]) -> tuple[float, float]:
    median = statistics.median(timings) if timings else 0.0
    return median, statistics.quantiles(timings, n=20)[18] if len(timings) > 1 else median


def _hidden_fault(method: str) -> str:
    return f"hidden text: {method.replace('_', ' ')}"


def hidden_of(pages: list[PageContent]) -> list[HiddenText]:
    """What ingestion recorded of the hidden text, as a run reads it (kinds and counts)."""
    return [
        HiddenText(page=page.number, kind=item["kind"], words=item["words"])
        for page in pages
        for item in page.hidden
    ]
