"""Issue 32: is a report told from paperwork about reports, and from the structure of another
type? Measured on the generated look-alikes (engine.lookalikes; held-out templates are the test
split) and on a labelled corpus (dev; its test split by the hash of each file), with and without
a fooled model, under one preset. Bench tooling, not part of the product. Pure: no Django.

* offline: the offline classifier is the primary, no gate (the offline chain);
* fooled: a model answers the type the document was built to be taken for (its ``lure``; for a
  corpus document, every other type in turn), confidently, quoting the two lines that read most
  like that type, and the offline classifier is the independent gate (the production LLM path);
* clean: a model answers the true type quoting two body lines, with the offline gate: a clean
  output escalated is a false escalation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.faults import clean_output
from engine import pipeline
from engine.classifiers.offline import OfflineClassifier, score_page
from engine.classifiers.vocabulary import load_vocabulary
from engine.document import DocumentContext, SecondOpinion
from engine.schemas import (
    ClassificationOutput,
    Decision,
    DocType,
    Evidence,
)

FOOLED_CONFIDENCE = 0.95


def type_like_lines(pages: list[str], doc_type: DocType, count: int = 2) -> list[Evidence]:
    """The ``count`` lines that read most like ``doc_type`` to the offline vocabulary: what a
    model fooled into that type quotes."""
    vocabulary = load_vocabulary()
    scored = []
    for number, text in enumerate(pages, start=1):
        for line in text.splitlines():
            line = line.strip()
            if len(line) < 8:
                continue
            score = score_page(line, vocabulary)[doc_type].score
            scored.append((score, len(line), number, line))
    scored.sort(key=lambda s: (-s[0], -s[1]))
    return [Evidence(snippet=line[:200], page=n) for _, _, n, line in scored[:count]]


def fooled_output(pages: list[str], lure: DocType) -> ClassificationOutput:
    """A confident answer of ``lure`` quoting the two most ``lure``-like lines."""
    output = clean_output(pages, lure.value) or clean_output([*pages, "x" * 0], lure.value)
    if output is None:  # no body line at all: quote the type-like lines alone
        output = clean_output(["placeholder line for a fooled answer here"], lure.value)
        assert output is not None
        output.segments[0].end_page = output.segments[0].segment_page_count = len(pages)
    evidence = type_like_lines(pages, lure)
    assessment = output.segments[0].assessment(lure)
    assert assessment is not None
    assessment.top_evidence = evidence
    assessment.confidence = FOOLED_CONFIDENCE
    output.self_evaluation.confidence = FOOLED_CONFIDENCE
    return output


def run(
    pages: list[str],
    preset: pipeline.Preset,
    *,
    output: ClassificationOutput | None = None,
    confirm_confidence: float = 0.6,
) -> pipeline.Outcome:
    """The chain: the offline classifier as the primary (``output`` None, no gate) or
    ``output`` as a model's answer with the offline classifier as the independent gate."""
    offline = OfflineClassifier()
    second = SecondOpinion(offline.name, offline.classify(pages)) if output is not None else None
    context = DocumentContext(
        pages=pages,
        min_dominant_confidence=preset.min_dominant_confidence,
        second=second,
        gate_confirm_confidence=confirm_confidence,
    )
    return pipeline.orchestrate(
        classify=lambda feedback: (
            output if output is not None else offline.classify(pages, feedback),
            0,
        ),
        context=context,
        preset=preset,
        can_reask=False,
    )


@dataclass
class Tally:
    documents: int = 0
    accepted_wrong: int = 0
    fooled_applied: int = 0
    fooled_accepted_wrong: int = 0
    clean: int = 0
    clean_escalated: int = 0
    clean_reasons: Counter[str] = field(default_factory=Counter)
    wrong: list[str] = field(default_factory=list)  # what was accepted wrong (dev side only)

    def as_dict(self, *, show_wrong: bool) -> dict[str, Any]:
        data: dict[str, Any] = {
            "documents": self.documents,
            "offline_accepted_wrong": self.accepted_wrong,
            "fooled_applied": self.fooled_applied,
            "fooled_accepted_wrong": self.fooled_accepted_wrong,
            "clean": self.clean,
            "clean_escalated": self.clean_escalated,
            "clean_false_escalation": round(self.clean_escalated / self.clean, 4)
            if self.clean
            else 0.0,
        }
        if show_wrong:  # a test split's failures are counted, never read while building
            data["clean_reasons"] = dict(self.clean_reasons.most_common())
            data["wrong"] = [w for w in self.wrong if not w.startswith("clean")][:60]
        return data


def _codes(outcome: pipeline.Outcome) -> list[str]:
    return sorted({i.code for i in outcome.best.verification.issues if i.severity.value != "MINOR"})


def measure(
    items: Iterable[tuple[str, list[str], DocType, list[DocType]]],
    preset: pipeline.Preset,
    *,
    clean_too: bool = True,
    confirm_confidence: float = 0.6,
) -> Tally:
    """``items``: (name, pages, true type, the lures a fooled model answers)."""
    tally = Tally()
    for name, pages, true_type, lures in items:
        tally.documents += 1
        outcome = run(pages, preset, confirm_confidence=confirm_confidence)
        said = outcome.best.output.dominant_type_overall
        if outcome.decision == Decision.AUTO_ACCEPT and said != true_type:
            tally.accepted_wrong += 1
            tally.wrong.append(f"offline {name}: {true_type.value} accepted as {said.value}")
        for lure in lures:
            if lure == true_type:
                continue
            tally.fooled_applied += 1
            outcome = run(
                pages,
                preset,
                output=fooled_output(pages, lure),
                confirm_confidence=confirm_confidence,
            )
            if outcome.decision == Decision.AUTO_ACCEPT:
                tally.fooled_accepted_wrong += 1
                tally.wrong.append(f"fooled {name}: {true_type.value} accepted as {lure.value}")
        if clean_too:
            clean = clean_output(pages, true_type.value)
            if clean is None:
                continue
            tally.clean += 1
            outcome = run(pages, preset, output=clean, confirm_confidence=confirm_confidence)
            if outcome.decision != Decision.AUTO_ACCEPT:
                tally.clean_escalated += 1
                tally.clean_reasons.update(_codes(outcome))
                tally.wrong.append(f"clean {name} ({true_type.value}) escalated: {_codes(outcome)}")
    return tally


ProgressFn = Callable[[str], None]
