"""Evaluate the classifier and the verification chain on a labelled corpus. Pure: no Django.

Corpus layout: ``labels.csv`` (doc_id,label,source,path; paths relative to the corpus, .pdf or
.txt) and optionally ``bundles/segments.jsonl`` (one multi-document PDF per line with the true
page range and label of each segment).
"""

from __future__ import annotations

import csv
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import pipeline
from engine.document import DocumentContext, HiddenText, SecondOpinion
from engine.fields import oncology
from engine.schemas import DOC_TYPES, ClassificationOutput, Decision

LABELS = [t.value for t in DOC_TYPES]


@dataclass
class DocResult:
    doc_id: str
    label: str
    source: str
    predicted: str
    decision: str
    attempts: int
    seconds: float


@dataclass
class BundleResult:
    bundle: str
    pages_total: int
    pages_correct: int
    true_boundaries: set[int]
    predicted_boundaries: set[int]
    decision: str


@dataclass
class Report:
    documents: list[DocResult] = field(default_factory=list)
    bundles: list[BundleResult] = field(default_factory=list)
    seconds: float = 0.0

    def metrics(self) -> dict[str, Any]:
        docs = self.documents
        n = len(docs)
        confusion = {a: {b: 0 for b in LABELS} for a in LABELS}
        for d in docs:
            confusion[d.label][d.predicted] += 1
        per_label = {}
        f1s = []
        for label in LABELS:
            tp = confusion[label][label]
            predicted = sum(confusion[a][label] for a in LABELS)
            actual = sum(confusion[label].values())
            precision = tp / predicted if predicted else 0.0
            recall = tp / actual if actual else 0.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            per_label[label] = {
                "precision": round(precision, 4),
                "recall": round(recall, 4),
                "f1": round(f1, 4),
                "support": actual,
            }
            if actual:
                f1s.append(f1)
        by_source: dict[str, list[DocResult]] = {}
        for d in docs:
            by_source.setdefault(d.source, []).append(d)
        decisions = Counter(d.decision for d in docs)
        accepted = [d for d in docs if d.decision == Decision.AUTO_ACCEPT]
        result: dict[str, Any] = {
            "documents": n,
            "accuracy": round(sum(d.label == d.predicted for d in docs) / n, 4) if n else 0.0,
            "macro_f1": round(sum(f1s) / len(f1s), 4) if f1s else 0.0,
            "per_label": per_label,
            "per_source": {
                s: {
                    "documents": len(ds),
                    "accuracy": round(sum(d.label == d.predicted for d in ds) / len(ds), 4),
                }
                for s, ds in sorted(by_source.items())
            },
            "confusion": confusion,
            "decision_mix": {
                "auto_accepted": decisions[Decision.AUTO_ACCEPT],
                "escalated": decisions[Decision.ESCALATE_TO_SME],
                "retried": sum(1 for d in docs if d.attempts > 1),
            },
            "escalation_rate": round(decisions[Decision.ESCALATE_TO_SME] / n, 4) if n else 0.0,
            "accepted_error_rate": round(
                sum(d.label != d.predicted for d in accepted) / len(accepted), 4
            )
            if accepted
            else 0.0,
            "documents_per_second": round(n / self.seconds, 2) if self.seconds else 0.0,
            "seconds": round(self.seconds, 2),
        }
        if self.bundles:
            result["bundles"] = bundle_metrics(self.bundles)
        return result


def bundle_metrics(bundles: list[BundleResult]) -> dict[str, Any]:
    """Page-level type accuracy and boundary precision, recall and F1 (a boundary is the first
    page of every segment but the first), with the boundaries missed and cut wrongly."""
    pages = sum(b.pages_total for b in bundles)
    tp = sum(len(b.true_boundaries & b.predicted_boundaries) for b in bundles)
    fp = sum(len(b.predicted_boundaries - b.true_boundaries) for b in bundles)
    fn = sum(len(b.true_boundaries - b.predicted_boundaries) for b in bundles)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {
        "bundles": len(bundles),
        "pages": pages,
        "page_type_accuracy": round(sum(b.pages_correct for b in bundles) / pages, 4)
        if pages
        else 0.0,
        "true_boundaries": tp + fn,
        "boundary_precision": round(precision, 4),
        "boundary_recall": round(recall, 4),
        "boundary_f1": round(2 * precision * recall / (precision + recall), 4)
        if precision + recall
        else 0.0,
        "decisions": dict(Counter(b.decision for b in bundles)),
        "missed": {
            b.bundle: sorted(b.true_boundaries - b.predicted_boundaries)
            for b in bundles
            if b.true_boundaries - b.predicted_boundaries
        },
        "false_cuts": {
            b.bundle: sorted(b.predicted_boundaries - b.true_boundaries)
            for b in bundles
            if b.predicted_boundaries - b.true_boundaries
        },
        # What matters most: a bundle accepted with a missed or wrong cut, or a wrong page type.
        "accepted_wrong": sorted(
            b.bundle
            for b in bundles
            if b.decision == "AUTO_ACCEPT"
            and (b.true_boundaries != b.predicted_boundaries or b.pages_correct < b.pages_total)
        ),
    }


class Pages(list[str]):
    """A document's page texts, as an ``Extract`` may return them, with what ingestion
    recorded of the text a reader cannot see (documents.hidden): the chain is given it as a
    run is (V3 hidden_text)."""

    def __init__(self, texts: Iterable[str], hidden: Iterable[HiddenText] = ()) -> None:
        super().__init__(texts)
        self.hidden = list(hidden)


Extract = Callable[[Path], list[str]]
Classify = Callable[[list[str], str | None], ClassificationOutput]


def _run_chain(
    pages: list[str],
    classify: Classify,
    preset: pipeline.Preset,
    llm: Any,
    gate: Any = None,
    calibrated: bool = False,
) -> pipeline.Outcome:
    context = DocumentContext(
        pages=pages,
        llm=llm,
        min_dominant_confidence=preset.min_calibrated_confidence
        if calibrated
        else preset.min_dominant_confidence,
        second=SecondOpinion(gate.name, gate.classify(pages)) if gate is not None else None,
        hidden=list(getattr(pages, "hidden", [])),
    )
    return pipeline.orchestrate(
        classify=lambda feedback: (classify(pages, feedback), 0),
        context=context,
        preset=preset,
        can_reask=llm is not None,
    )


def read_labels(corpus: Path) -> list[dict[str, str]]:
    with (corpus / "labels.csv").open(newline="", encoding="utf-8-sig") as handle:
        return [
            {k.strip(): (v or "").strip() for k, v in row.items()} for row in csv.DictReader(handle)
        ]


def evaluate(
    corpus: Path,
    *,
    extract: Extract,
    classify: Classify,
    preset: pipeline.Preset,
    llm: Any = None,
    gate: Any = None,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
    calibrated: bool = False,
) -> Report:
    """``gate`` (a Classifier, when the primary is an LLM) is the independent second opinion
    every run is compared with, as in production. ``calibrated``: the classifier's confidence
    is a calibrated probability (the preset's min_calibrated_confidence applies)."""
    report = Report()
    started = time.perf_counter()
    rows: Iterable[dict[str, str]] = read_labels(corpus)
    for index, row in enumerate(rows):
        if limit is not None and index >= limit:
            break
        t0 = time.perf_counter()
        pages = extract(corpus / row["path"])
        outcome = _run_chain(pages, classify, preset, llm, gate, calibrated)
        report.documents.append(
            DocResult(
                doc_id=row["doc_id"],
                label=row["label"],
                source=row["source"],
                predicted=outcome.best.output.dominant_type_overall.value,
                decision=outcome.decision.value,
                attempts=len(outcome.attempts),
                seconds=time.perf_counter() - t0,
            )
        )
        if progress and (index + 1) % 50 == 0:
            progress(f"{index + 1} documents")
    report.bundles = evaluate_bundles(
        corpus / "bundles",
        extract=extract,
        classify=classify,
        preset=preset,
        llm=llm,
        gate=gate,
        calibrated=calibrated,
    )
    report.seconds = time.perf_counter() - started
    return report


def evaluate_bundles(
    folder: Path,
    *,
    extract: Extract,
    classify: Classify,
    preset: pipeline.Preset,
    llm: Any = None,
    gate: Any = None,
    calibrated: bool = False,
) -> list[BundleResult]:
    """Each bundle of ``folder/segments.jsonl`` through the chain: its pages' types and where
    its segments start, against the true segments."""
    bundles_file = folder / "segments.jsonl"
    results: list[BundleResult] = []
    if not bundles_file.exists():
        return results
    for line in bundles_file.read_text().splitlines():
        if not line.strip():
            continue
        spec = json.loads(line)
        pages = extract(folder / spec["bundle"])
        outcome = _run_chain(pages, classify, preset, llm, gate, calibrated)
        output = outcome.best.output
        truth = {}
        for seg in spec["segments"]:
            for page in range(seg["first_page"], seg["last_page"] + 1):
                truth[page] = seg["label"]
        predicted = {}
        for seg in output.segments:
            for page in range(seg.start_page, seg.end_page + 1):
                predicted[page] = seg.dominant_type.value
        results.append(
            BundleResult(
                bundle=spec["bundle"],
                pages_total=len(truth),
                pages_correct=sum(predicted.get(p) == label for p, label in truth.items()),
                true_boundaries={s["first_page"] for s in spec["segments"][1:]},
                predicted_boundaries={s.start_page for s in output.segments[1:]},
                decision=outcome.decision.value,
            )
        )
    return results


def format_bundles(name: str, b: dict[str, Any]) -> list[str]:
    lines = [
        f"{name}: {b['bundles']}   pages {b['pages']}   page-level type accuracy "
        f"{b['page_type_accuracy']:.3f}   boundaries {b['true_boundaries']}: precision "
        f"{b['boundary_precision']:.3f}, recall {b['boundary_recall']:.3f}, F1 "
        f"{b['boundary_f1']:.3f}   decisions {b['decisions']}"
    ]
    for label, key in (("missed", "missed"), ("cut wrongly", "false_cuts")):
        for bundle, pages in b.get(key, {}).items():
            lines.append(f"  {label} in {bundle}: pages {', '.join(map(str, pages))}")
    wrong = b.get("accepted_wrong", [])
    lines.append(
        f"  accepted with a wrong cut or page type: {len(wrong)}"
        + (f" ({', '.join(wrong)})" if wrong else "")
    )
    return lines


def format_report(metrics: dict[str, Any]) -> str:
    lines = [
        f"Documents: {metrics['documents']}   accuracy {metrics['accuracy']:.3f}   "
        f"macro-F1 {metrics['macro_f1']:.3f}   {metrics['documents_per_second']} docs/s "
        f"({metrics['seconds']} s)",
        "",
        f"{'label':<15}{'precision':>10}{'recall':>8}{'f1':>8}{'support':>9}",
    ]
    for label, m in metrics["per_label"].items():
        lines.append(
            f"{label:<15}{m['precision']:>10.3f}{m['recall']:>8.3f}{m['f1']:>8.3f}{m['support']:>9}"
        )
    lines += ["", f"{'source':<42}{'docs':>6}{'accuracy':>10}"]
    for source, m in metrics["per_source"].items():
        lines.append(f"{source:<42}{m['documents']:>6}{m['accuracy']:>10.3f}")
    lines += [
        "",
        "Confusion (rows: true, columns: predicted)",
        f"{'':<15}" + "".join(f"{label[:12]:>13}" for label in LABELS),
    ]
    for label in LABELS:
        lines.append(
            f"{label:<15}" + "".join(f"{metrics['confusion'][label][p]:>13}" for p in LABELS)
        )
    mix = metrics["decision_mix"]
    lines += [
        "",
        f"Decisions: auto-accepted {mix['auto_accepted']}, escalated {mix['escalated']}, "
        f"retried {mix['retried']}",
        f"Escalation rate {metrics['escalation_rate']:.3f}   accepted-error rate "
        f"{metrics['accepted_error_rate']:.3f}",
    ]
    if "bundles" in metrics:
        lines += ["", *format_bundles("Bundles", metrics["bundles"])]
    if "generated_bundles" in metrics:
        lines += ["", *format_bundles("Generated bundles", metrics["generated_bundles"])]
    return "\n".join(lines)


# -- field extraction ------------------------------------------------------------------------------


_TYPOGRAPHY = str.maketrans(
    {
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u00d7": "x",
    }
)


def _norm(value: Any) -> str:
    """Lower case with formatting differences removed: typographic dashes and quotes,
    "high-grade" / "high grade", "2cm" / "2 cm", "1x 0.8" / "1 x 0.8", "p.G12D" / "G12D", and
    punctuation that only separates (commas, colons, brackets, bars)."""
    text = str(value).lower().translate(_TYPOGRAPHY)
    text = re.sub(r"\bp\.\s?(?=[a-z]{1,3}\d)", "", text)
    text = re.sub(r"(\d)\s*(mm|cm|ml|cc)\b", r"\1 \2", text)
    text = re.sub(r"(\d)\s*x\s*(?=\d)", r"\1 x ", text)
    text = re.sub(r"(?<=[a-z])-(?=[a-z])", " ", text)
    text = re.sub(r"[\s,;:()\[\]|\"]+", " ", text)
    return text.strip(" .")


_SHORT_TOKEN = re.compile(r"[0-9ivx]{1,3}\+?|g[1-4x]")


def value_matches(
    expected: Any, predicted: Any, *, name: str = "", canonical: str | None = None
) -> bool:
    """A field with canonical values (``engine.fields.oncology``: receptors, HER2, histology,
    grade, margins) matches by meaning when both values have one ("strongly positive" and
    "Positive (95%)" agree; ``canonical`` is the extractor's own reading of ``predicted``).
    Otherwise text values match when one contains the other (at least 3 characters). A short value
    ("2", "G3", "1+") matches a longer one that states it as a whole word and states no other
    short value: "grade 2" and "Nottingham grade 2 (tubules 3, ...)" match "2"; "grade 2 of
    3" matches neither "2" nor "3"."""
    if name in oncology.CANONICALISERS:
        e_canon = oncology.canonical(name, expected)
        p_canon = canonical or oncology.canonical(name, predicted)
        if e_canon is not None and p_canon is not None:
            return oncology.same(name, e_canon, p_canon)
    e, p = _norm(expected), _norm(predicted)
    if not e or not p:
        return False
    if min(len(e), len(p)) >= 3:
        return e in p or p in e
    short, longer = (e, predicted) if len(e) <= len(p) else (p, expected)
    tokens = _norm(re.sub(r"\([^)]*\)", " ", str(longer))).split()
    if tokens == [short]:
        return True
    others = [t for t in tokens if t != short and _SHORT_TOKEN.fullmatch(t)]
    return short in tokens and not others


@dataclass
class FieldCounts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(
        self, expected: Any, predicted: Any, *, name: str = "", canonical: str | None = None
    ) -> None:
        if isinstance(expected, list) or isinstance(predicted, list):
            exp = expected or []
            pred = predicted if isinstance(predicted, list) else ([predicted] if predicted else [])
            matched = [e for e in exp if any(value_matches(e, p) for p in pred)]
            self.tp += len(matched)
            self.fn += len(exp) - len(matched)
            self.fp += sum(1 for p in pred if not any(value_matches(e, p) for e in exp))
        elif expected is None:
            self.fp += predicted is not None
        elif predicted is None:
            self.fn += 1
        elif value_matches(expected, predicted, name=name, canonical=canonical):
            self.tp += 1
        else:
            self.fp += 1
            self.fn += 1

    def as_dict(self) -> dict[str, Any]:
        precision = self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0
        recall = self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0
        return {
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "precision": round(precision, 4),
            "recall": round(recall, 4),
        }


SCORE_BANDS = (
    (0.95, 1.01, ">= 0.95"),
    (0.90, 0.95, "0.90-0.95"),
    (0.80, 0.90, "0.80-0.90"),
    (0.0, 0.80, "< 0.80"),
)
HIGH_SCORE = 0.95
HIGH_PRECISION = 0.97  # what a document scoring HIGH_SCORE or more should reach
HIGH_RECALL = 0.90


def _bands(documents: list[tuple[float, FieldCounts]]) -> list[dict[str, Any]]:
    """Field precision and recall of the documents whose loop score falls in each band: does
    the score say how good the extraction is?"""
    bands = []
    for low, high, name in SCORE_BANDS:
        counts = FieldCounts()
        chosen = [c for score, c in documents if low <= score < high]
        for c in chosen:
            counts.tp, counts.fp, counts.fn = counts.tp + c.tp, counts.fp + c.fp, counts.fn + c.fn
        figures = counts.as_dict()
        bands.append(
            {
                "band": name,
                "documents": len(chosen),
                "precision": figures["precision"],
                "recall": figures["recall"],
            }
        )
    return bands


@dataclass
class FieldCase:
    """One document (or one segment of one) with the field values a person read in it."""

    key: str
    doc_type: str  # the template to use: the true type
    pages: list[str]
    expected: dict[str, Any]  # field name -> value, None (absent) or a list


def evaluate_fields(
    corpus: Path,
    fields_file: Path,
    *,
    extract: Extract,
    run: Callable[[str, list[str], bool], dict[str, Any]],
) -> dict[str, Any]:
    """Field-level precision and recall, single pass versus the loop, and how each mode's
    score relates to what it really found (by score band, per template).

    ``run(doc_type, pages, loop)`` returns {field name: value or None} and the loop's data.
    The true label picks the template, so classification errors do not blur the figures.
    ``fields_file`` is the corpus's expected values (doc_id, fields), or a ground-truth export
    with its pages' text (review's JSONL export with text): reviewers' field corrections as a
    regression set.
    """
    records = [json.loads(line) for line in fields_file.read_text().splitlines() if line.strip()]
    if records and "document_id" in records[0]:
        return evaluate_field_cases(field_cases_from_ground_truth(records), run=run)
    labels = {row["doc_id"]: row for row in read_labels(corpus)}
    cases = [
        FieldCase(
            spec["doc_id"],
            labels[spec["doc_id"]]["label"],
            extract(corpus / labels[spec["doc_id"]]["path"]),
            spec["fields"],
        )
        for spec in records
    ]
    return evaluate_field_cases(cases, run=run)


CLINICIAN_SOURCES = ("SME_VALIDATED", "SME_CORRECTED")


def field_cases_from_ground_truth(
    records: Iterable[dict[str, Any]], *, corrected_only: bool = False
) -> list[FieldCase]:
    """Field ground truth from ground-truth records (``review``'s export rows, with
    ``pages``): each segment of a document a clinician decided, with the values the clinician
    corrected (a cleared value: the field is absent) and, unless ``corrected_only``, the
    values the clinician saw and let stand. Machine-accepted records are the machine's own
    answers, not truth, and are left out; so are fields no one read (not found, uncorrected).
    """
    cases = []
    for record in records:
        if record.get("source") not in CLINICIAN_SOURCES:
            continue
        pages = [p["text"] if isinstance(p, dict) else p for p in record.get("pages") or []]
        if not pages:
            continue
        for segment in record.get("fields") or []:
            first, last = segment["pages"]
            expected: dict[str, Any] = {}
            for name, data in segment["fields"].items():
                if data.get("corrected"):
                    value = data.get("value")
                    expected[name] = value if value not in ("", None) else None
                elif not corrected_only and data.get("status") == "found":
                    expected[name] = data.get("value")
            if expected:
                cases.append(
                    FieldCase(
                        f"{record['document_id']}:{segment['segment']}",
                        segment["doc_type"],
                        pages[first - 1 : last],
                        expected,
                    )
                )
    return cases


def evaluate_field_cases(
    cases: list[FieldCase], *, run: Callable[[str, list[str], bool], dict[str, Any]]
) -> dict[str, Any]:
    modes: dict[str, dict[str, Any]] = {}
    for loop in (False, True):
        totals = FieldCounts()
        per_field: dict[str, FieldCounts] = {}
        per_document: list[tuple[str, float, FieldCounts]] = []
        iterations = []
        scores = []
        for case in cases:
            result = run(case.doc_type, case.pages, loop)
            iterations.append(result["iterations"])
            scores.append(result["score"])
            document = FieldCounts()
            canonicals = result.get("canonical") or {}
            for name, expected in case.expected.items():
                predicted = result["values"].get(name)
                canon = canonicals.get(name)
                for counts in (per_field.setdefault(name, FieldCounts()), totals, document):
                    counts.add(expected, predicted, name=name, canonical=canon)
            per_document.append((case.doc_type, result["score"], document))
        bands = _bands([(score, counts) for _, score, counts in per_document])
        high = bands[0]
        by_template = {
            doc_type: _bands([(score, c) for t, score, c in per_document if t == doc_type])
            for doc_type in sorted({t for t, _, _ in per_document})
        }
        modes["loop" if loop else "single_pass"] = {
            **totals.as_dict(),
            "documents": len(cases),
            "mean_iterations": round(sum(iterations) / len(iterations), 2) if iterations else 0,
            "mean_score": round(sum(scores) / len(scores), 4) if scores else 0,
            "per_field": {k: v.as_dict() for k, v in sorted(per_field.items())},
            "score_bands": bands,
            "reliability": by_template,
            "recall_at_high_score": high["recall"] if high["documents"] else None,
            "precision_at_high_score": high["precision"] if high["documents"] else None,
        }
    return modes


def format_fields(modes: dict[str, Any]) -> str:
    lines = [
        "",
        "Field extraction (true type's template):",
        f"{'mode':<13}{'precision':>10}{'recall':>8}{'tp':>5}{'fp':>5}{'fn':>5}"
        f"{'iterations':>12}{'score':>8}",
    ]
    for mode, m in modes.items():
        lines.append(
            f"{mode:<13}{m['precision']:>10.3f}{m['recall']:>8.3f}{m['tp']:>5}"
            f"{m['fp']:>5}{m['fn']:>5}{m['mean_iterations']:>12}{m['mean_score']:>8.3f}"
        )
    names = sorted({name for m in modes.values() for name in m["per_field"]})
    lines += ["", f"{'field':<18}" + "".join(f"{mode + ' P/R':>22}" for mode in modes)]
    for name in names:
        cells = []
        for m in modes.values():
            f = m["per_field"].get(name)
            cells.append(
                f"{f['precision']:.2f} / {f['recall']:.2f} ({f['tp'] + f['fn']})" if f else "-"
            )
        lines.append(f"{name:<18}" + "".join(f"{c:>22}" for c in cells))
    lines += ["", "Score against what was found (documents, precision, recall by score band):"]
    lines.append(f"{'band':<12}" + "".join(f"{mode:>28}" for mode in modes))
    for index, (_, _, band) in enumerate(SCORE_BANDS):
        cells = []
        for m in modes.values():
            b = m["score_bands"][index]
            cells.append(
                f"{b['documents']:>3} docs P {b['precision']:.3f} R {b['recall']:.3f}"
                if b["documents"]
                else "-"
            )
        lines.append(f"{band:<12}" + "".join(f"{c:>28}" for c in cells))
    lines += format_reliability(modes)
    return "\n".join(lines)


def format_reliability(modes: dict[str, Any]) -> list[str]:
    """The reliability table: for each template, what the loop's score band says about the
    precision and recall measured on its documents."""
    loop = modes.get("loop") or next(iter(modes.values()))
    lines = [
        "",
        f"Reliability of the loop's score per template (target: documents scoring "
        f"{HIGH_SCORE} or more reach precision {HIGH_PRECISION} and recall {HIGH_RECALL}):",
        f"{'template':<15}{'band':<12}{'docs':>6}{'precision':>11}{'recall':>8}",
    ]
    for doc_type, bands in loop.get("reliability", {}).items():
        for b in bands:
            if not b["documents"]:
                continue
            lines.append(
                f"{doc_type:<15}{b['band']:<12}{b['documents']:>6}{b['precision']:>11.3f}"
                f"{b['recall']:>8.3f}"
            )
    high = loop["score_bands"][0]
    if high["documents"]:
        met = high["precision"] >= HIGH_PRECISION and high["recall"] >= HIGH_RECALL
        lines.append(
            f"All templates, score >= {HIGH_SCORE}: {high['documents']} documents, precision "
            f"{high['precision']:.3f}, recall {high['recall']:.3f} "
            f"({'meets' if met else 'misses'} the target)"
        )
    return lines
