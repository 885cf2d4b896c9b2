"""The independent gate: a second, unrelated classifier's answer set against the primary's.

An injected instruction or a confident mistake can fool one model; to be accepted it must also
fool a classifier that shares nothing with it (today the offline vocabulary classifier, later a
trained one: any engine.protocols.Classifier's output) and the deterministic grounding. When the
primary is an LLM, these disagreements are MAJOR issues that nothing fixes automatically, so the
run escalates and the packet says why:

* the two name different dominant types for the document;
* one calls a type PRIMARY with evidence found on its page and the other finds no evidence of
  that type at all (NO_EVIDENCE in every segment).

The gate also says whether it *confirms* the primary: it agrees on the document's type and on
every segment's type, and it is itself confident (at least ``confirm_confidence``). A confirmed
answer needs no second opinion from the same model that gave it (see pipeline.verify).
Pure: no Django.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.document import DocumentContext, SecondOpinion
from engine.grounding import find_snippet
from engine.schemas import (
    DISPLAY_NAMES,
    ClassificationOutput,
    DocType,
    Issue,
    Presence,
    Severity,
    make_issue,
)

AGENT = "GATE"
CODE = "independent_disagreement"


@dataclass
class GateResult:
    issues: list[Issue] = field(default_factory=list)
    confirmed: bool = False
    second_type: str = ""
    second_confidence: float = 0.0


def _issue(message: str, location: str, fix: str) -> Issue:
    # Neither auto-fixable nor worth a re-ask: telling the model what the other classifier said
    # would only teach it to agree, and the two would no longer be independent.
    return make_issue(AGENT, Severity.MAJOR, CODE, message, location, fix)


def _grounded_primary_types(output: ClassificationOutput, context: DocumentContext) -> set[DocType]:
    """Types called PRIMARY in some segment with at least one snippet found on its page."""
    found: set[DocType] = set()
    for segment in output.segments:
        for t in segment.types:
            if t.presence_level != Presence.PRIMARY or t.type in found:
                continue
            for evidence in t.top_evidence:
                page = context.page_text(evidence.page)
                if page is not None and find_snippet(
                    evidence.snippet, page, page_norm=context.normalised[evidence.page - 1]
                ):
                    found.add(t.type)
                    break
    return found


def _without_evidence(output: ClassificationOutput) -> set[DocType]:
    """Types that are NO_EVIDENCE (or not assessed) in every segment."""
    seen = {
        t.type
        for segment in output.segments
        for t in segment.types
        if t.presence_level != Presence.NO_EVIDENCE
    }
    return {t for t in DocType if t not in seen}


def _segment_confirmed(primary: ClassificationOutput, second: ClassificationOutput) -> bool:
    """Every primary segment's type is PRIMARY in a second-opinion segment sharing its pages."""
    for segment in primary.segments:
        pages = set(range(segment.start_page, segment.end_page + 1))
        matches = [
            s
            for s in second.segments
            if pages & set(range(s.start_page, s.end_page + 1))
            and (a := s.assessment(segment.dominant_type)) is not None
            and a.presence_level == Presence.PRIMARY
        ]
        if not matches:
            return False
    return True


def check(
    primary: ClassificationOutput,
    second: SecondOpinion,
    context: DocumentContext,
    *,
    confirm_confidence: float,
) -> GateResult:
    other = second.output
    name = second.name
    result = GateResult(
        second_type=other.dominant_type_overall.value,
        second_confidence=float(other.self_evaluation.confidence),
    )
    mine, theirs = primary.dominant_type_overall, other.dominant_type_overall
    named: set[DocType] = set()
    if mine != theirs:
        named = {mine, theirs}
        result.issues.append(
            _issue(
                f"The independent {name} classifier reads this document as "
                f"{DISPLAY_NAMES[theirs]}; the primary classifier said {DISPLAY_NAMES[mine]}. "
                "Two unrelated classifiers disagree on the type.",
                "dominant_type_overall",
                "A clinician decides the type.",
            )
        )
    primary_grounded = _grounded_primary_types(primary, context)
    other_grounded = _grounded_primary_types(other, context)
    for doc_type in sorted(primary_grounded & _without_evidence(other) - named):
        result.issues.append(
            _issue(
                f"The primary classifier calls {DISPLAY_NAMES[doc_type]} PRIMARY with evidence, "
                f"but the independent {name} classifier finds no evidence of it at all.",
                f"document_mixture.{doc_type.value}",
                "A clinician confirms whether this type is present.",
            )
        )
    for doc_type in sorted(other_grounded & _without_evidence(primary) - named):
        result.issues.append(
            _issue(
                f"The independent {name} classifier calls {DISPLAY_NAMES[doc_type]} PRIMARY with "
                "evidence, but the primary classifier finds no evidence of it at all.",
                f"document_mixture.{doc_type.value}",
                "A clinician confirms whether this type is present.",
            )
        )
    result.confirmed = (
        not result.issues
        and _segment_confirmed(primary, other)
        and result.second_confidence >= confirm_confidence
    )
    return result
