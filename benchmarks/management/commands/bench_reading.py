"""Read what a reader sees (issue 32, part 1): the reading check measured.

Generated documents (benchmarks.hiddengen: every hiding method, variant, template and place,
split into the build half and the held-out half frozen by key hash) are read by the ingestion
code and put through the offline chain twice: the offline classifier as the primary, and a
model fooled by the hidden lines (it answers their type and quotes them) with the offline
gate. Reported per half: hidden lines that reached the classified text, documents where
V3 hidden_text was not raised, and documents accepted with the wrong type.

A real corpus's PDFs (labels.csv's .pdf entries and bundles/*.pdf, split by the file's
sha256) are read as ingestion reads them: pages on which hidden_text would be raised (false
escalations), and what the checks cost per text page (the drawing comparison) and per
document (the glyph check's OCR).
"""

from __future__ import annotations

import glob
import hashlib
import json
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from benchmarks import faults, hiddengen
from benchmarks.evaluation import Pages, _run_chain, read_labels
from documents import hidden
from documents.ocr import make_tesseract_engine
from documents.pages import PageContent, UnreadableDocument, extract_pdf
from engine import pipeline
from engine.classifiers.offline import OfflineClassifier
from engine.document import UNCOUNTED_HIDDEN_KINDS, DocumentContext, HiddenText, SecondOpinion
from engine.schemas import ClassificationOutput, Decision, DocType
from engine.verifiers.v3_domain import MIN_HIDDEN_WORDS, hidden_text_issues
from reliability.services import get_preset


def _hidden(pages: list[PageContent]) -> list[HiddenText]:
    return [
        HiddenText(page=p.number, kind=item["kind"], words=item["words"])
        for p in pages
        for item in p.hidden
    ]


def _answering(output: ClassificationOutput) -> Callable[[Any], tuple[ClassificationOutput, int]]:
    """A model that gives ``output`` whatever it is told."""
    return lambda _feedback: (output, 0)


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Command(BaseCommand):
    help = (
        "The reading check (text the page does not show, or shows differently): generated "
        "hidden-text documents through the offline chain, build and held-out halves; false "
        "escalations and cost on a real corpus's PDFs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--corpus", help="a folder with labels.csv (its PDFs are read)")
        parser.add_argument("--half", choices=["build", "test", "both"], default="both")
        parser.add_argument("--no-generated", action="store_true")
        parser.add_argument(
            "--ocr-all",
            action="store_true",
            help="read every generated document with OCR (the glyph check); default: only "
            "the lying-ToUnicode ones (the others are what the drawing comparison decides)",
        )
        parser.add_argument("--preset", default=None)
        parser.add_argument("--json", dest="json_out")

    def handle(self, *args: Any, **options: Any) -> None:
        halves = ["build", "test"] if options["half"] == "both" else [options["half"]]
        ocr = make_tesseract_engine()
        figures: dict[str, Any] = {}
        if not options["no_generated"]:
            figures["generated"] = {
                half: self._generated(half == "test", ocr, options) for half in halves
            }
        if options["corpus"]:
            figures["corpus"] = {
                half: self._corpus(Path(options["corpus"]), half == "test", ocr) for half in halves
            }
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(figures, indent=2, sort_keys=True))
            self.stdout.write(f"Wrote {options['json_out']}")

    def _generated(self, held_out: bool, ocr: Any, options: dict[str, Any]) -> dict[str, Any]:
        preset = get_preset(options["preset"])
        offline = OfflineClassifier()
        by_method: dict[str, Counter[str]] = {}
        for case in hiddengen.cases():
            if hiddengen.held_out(case.key) != held_out:
                continue
            counts = by_method.setdefault(case.method, Counter())
            use_ocr = ocr if (options["ocr_all"] or case.method == "tounicode_lie") else None
            try:
                read = extract_pdf(case.pdf(), ocr=use_ocr)
            except UnreadableDocument:
                counts["unreadable"] += 1
                continue
            counts["documents"] += 1
            texts = [p.text for p in read]
            found = _hidden(read)
            joined = " ".join(texts).lower()
            counts["leaked"] += any(line.lower()[:20] in joined for line in case.hidden)
            counts["not_raised"] += not hidden_text_issues(found)
            # The offline classifier as the primary (no model).
            outcome = _run_chain(Pages(texts, found), offline.classify, preset, None, None)
            counts["accepted_wrong_offline"] += (
                outcome.decision == Decision.AUTO_ACCEPT
                and outcome.best.output.dominant_type_overall.value != case.label
            )
            # A model fooled by the hidden lines, the offline rules as its gate.
            fooled = faults.clean_output(texts, case.label)
            if fooled is None:
                counts["no_fooled_output"] += 1
                continue
            faults.fooled(fooled, list(case.hidden), DocType(case.target))
            context = DocumentContext(
                pages=texts,
                min_dominant_confidence=preset.min_dominant_confidence,
                second=SecondOpinion(offline.name, offline.classify(texts)),
                hidden=found,
            )
            result = pipeline.orchestrate(
                classify=_answering(fooled),
                context=context,
                preset=preset,
                can_reask=False,
            )
            counts["accepted_wrong_fooled"] += (
                result.decision == Decision.AUTO_ACCEPT
                and result.best.output.dominant_type_overall.value != case.label
            )
        half = "held-out" if held_out else "build"
        total: Counter[str] = Counter()
        self.stdout.write(f"Generated hidden-text documents, {half} half:")
        self.stdout.write(
            f"{'method':<20}{'docs':>6}{'leaked':>8}{'not raised':>12}{'wrong (offline)':>17}"
            f"{'wrong (fooled)':>16}"
        )
        for method, counts in by_method.items():
            total.update(counts)
            self.stdout.write(
                f"{method:<20}{counts['documents']:>6}{counts['leaked']:>8}"
                f"{counts['not_raised']:>12}{counts['accepted_wrong_offline']:>17}"
                f"{counts['accepted_wrong_fooled']:>16}"
            )
        self.stdout.write(
            f"{'all':<20}{total['documents']:>6}{total['leaked']:>8}{total['not_raised']:>12}"
            f"{total['accepted_wrong_offline']:>17}{total['accepted_wrong_fooled']:>16}"
            f"  (unreadable {total['unreadable']})"
        )
        return {"total": dict(total), "by_method": {m: dict(c) for m, c in by_method.items()}}

    def _corpus(self, corpus: Path, held_out: bool, ocr: Any) -> dict[str, Any]:
        paths = [
            corpus / row["path"] for row in read_labels(corpus) if row["path"].endswith(".pdf")
        ]
        paths += [Path(p) for p in sorted(glob.glob(str(corpus / "bundles" / "*.pdf")))]
        # ms per text page: the drawing comparison, wall clock and this process's CPU (on a
        # shared machine the CPU time is what the check costs; the wall clock, what it took).
        drawing: list[float] = []
        drawing_cpu: list[float] = []
        glyphs: list[float] = []  # ms per document: the glyph check, its OCR included
        calls: list[int] = []
        flagged: list[str] = []
        pages_read = documents = 0
        original_check, original_sample, original_judge = (
            hidden._not_shown,
            hidden.glyph_sample,
            hidden.judge_fonts,
        )
        started: list[float] = []

        def timed_check(*args: Any, **kwargs: Any) -> None:
            t0, c0 = time.perf_counter(), time.process_time()
            original_check(*args, **kwargs)
            drawing.append((time.perf_counter() - t0) * 1000)
            drawing_cpu.append((time.process_time() - c0) * 1000)

        def timed_sample(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            sample = original_sample(*args, **kwargs)
            if sample is not None:
                started.append(t0)
            else:
                glyph_ms[0] += (time.perf_counter() - t0) * 1000
            return sample

        def timed_judge(*args: Any, **kwargs: Any) -> None:
            original_judge(*args, **kwargs)
            glyph_ms[0] += (time.perf_counter() - started.pop()) * 1000
            glyph_calls[0] += 1

        glyph_ms, glyph_calls = [0.0], [0]
        patches: list[tuple[str, Callable[..., Any]]] = [
            ("_not_shown", timed_check),
            ("glyph_sample", timed_sample),
            ("judge_fonts", timed_judge),
        ]
        for name, function in patches:
            setattr(hidden, name, function)
        try:
            for path in paths:
                data = path.read_bytes()
                if hiddengen.corpus_held_out(hashlib.sha256(data).hexdigest()) != held_out:
                    continue
                documents += 1
                glyph_ms[0], glyph_calls[0] = 0.0, 0
                read = extract_pdf(data, ocr=ocr)
                glyphs.append(glyph_ms[0])
                calls.append(glyph_calls[0])
                pages_read += len(read)
                for page in read:
                    counted = sum(
                        item["words"]
                        for item in page.hidden
                        if item["kind"] not in UNCOUNTED_HIDDEN_KINDS
                    )
                    if counted >= MIN_HIDDEN_WORDS:
                        flagged.append(f"{path.name} p{page.number}")
        finally:
            hidden._not_shown = original_check  # type: ignore[assignment]
            hidden.glyph_sample = original_sample  # type: ignore[assignment]
            hidden.judge_fonts = original_judge  # type: ignore[assignment]
        half = "held-out" if held_out else "build"
        self.stdout.write(
            f"Corpus {corpus} PDFs, {half} half: {documents} documents, {pages_read} pages; "
            f"pages raising hidden_text: {len(flagged)} {flagged}"
        )
        self.stdout.write(
            f"  drawing comparison per text page: p50 {statistics.median(drawing or [0]):.1f} "
            f"ms, p95 {_quantile(drawing, 0.95):.1f} ms wall; CPU p50 "
            f"{statistics.median(drawing_cpu or [0]):.1f} ms, p95 "
            f"{_quantile(drawing_cpu, 0.95):.1f} ms ({len(drawing)} pages)"
        )
        self.stdout.write(
            f"  glyph check per document: p50 {statistics.median(glyphs or [0]):.0f} ms, p95 "
            f"{_quantile(glyphs, 0.95):.0f} ms; OCR calls per document: mean "
            f"{statistics.mean(calls or [0]):.2f}, max {max(calls, default=0)}"
        )
        return {
            "documents": documents,
            "pages": pages_read,
            "pages_raising_hidden_text": len(flagged),
            "flagged": flagged,
            "drawing_ms": {
                "p50": statistics.median(drawing or [0]),
                "p95": _quantile(drawing, 0.95),
            },
            "glyph_ms_per_document": {
                "p50": statistics.median(glyphs or [0]),
                "p95": _quantile(glyphs, 0.95),
            },
            "ocr_calls_per_document": statistics.mean(calls or [0]),
        }
