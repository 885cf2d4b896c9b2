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

Abstain, don't assume. A vote without confidence (below ``confirm_confidence``) is an
abstention, whichever way it goes: keyword stuffing can pull a rules classifier towards the
stuffed type just far enough to agree, weakly, with a model the same lines fooled. Then the
document's structure (engine.verifiers.structure), which vocabulary does not make, decides:

* an agreement without confidence is confirmed when every segment shows part of the structure
  of its type and no other report type's whole structure; otherwise it confirms nothing, and
  where the preset requires an independent confirmation (clinical) the run escalates
  (``gate_abstained``) rather than ask the model that gave the labels whether they are right;
* a disagreement without confidence is overruled only when every segment's structure is that
  of its type alone, complete, and the types the independent classifier named show no part of
  a structure of their own; otherwise it stands.

Pure: no Django.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from engine import discriminator
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
from engine.verifiers.structure import Shape, shape_of

AGENT = "GATE"
CODE = "independent_disagreement"
ABSTAINED = "gate_abstained"
# A model segment runs across a page where the independent classifier cuts between two types.
SPANS_CUT = "segment_spans_type_change"
BY_CLASSIFIER = "independent classifier"
BY_STRUCTURE = "document structure"


@dataclass
class GateResult:
    issues: list[Issue] = field(default_factory=list)
    confirmed: bool = False
    second_type: str = ""
    second_confidence: float = 0.0
    abstained: bool = False  # the independent classifier voted without confidence
    confirmed_by: str = ""  # BY_CLASSIFIER | BY_STRUCTURE | "" (not confirmed)
    overruled: list[str] = field(default_factory=list)  # disagreements the structure overruled


def _issue(message: str, location: str, fix: str, *, code: str = CODE) -> Issue:
    # Neither auto-fixable nor worth a re-ask: telling the model what the other classifier said
    # would only teach it to agree, and the two would no longer be independent.
    return make_issue(AGENT, Severity.MAJOR, code, message, location, fix)


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


def _shapes(output: ClassificationOutput, context: DocumentContext) -> list[tuple[DocType, Shape]]:
    """Each segment's type and the structure of its pages."""
    found = []
    for segment in output.segments:
        start, end = max(segment.start_page, 1), min(segment.end_page, context.page_count)
        found.append((segment.dominant_type, shape_of(tuple(context.pages[start - 1 : end]))))
    return found


def _content_agrees(output: ClassificationOutput, context: DocumentContext) -> bool:
    """The learned discriminator does not contradict any segment's type (a report or note
    read as paperwork, 'other' read as a report): the structure alone confirms nothing."""
    for segment in output.segments:
        start, end = max(segment.start_page, 1), min(segment.end_page, context.page_count)
        text = "\n\n".join(context.pages[start - 1 : end])
        if not discriminator.read(text).agrees(segment.dominant_type):
            return False
    return True


def type_cuts(second: ClassificationOutput) -> list[tuple[int, DocType, DocType]]:
    """Where the independent classifier starts a segment of another type than the one before
    it: (first page of the new segment, the type before, the type after)."""
    ordered = sorted(second.segments, key=lambda s: s.start_page)
    return [
        (after.start_page, before.dominant_type, after.dominant_type)
        for before, after in pairwise(ordered)
        if before.dominant_type != after.dominant_type
    ]


def spanning_issues(primary: ClassificationOutput, second: SecondOpinion) -> list[Issue]:
    """Bundles compared both ways: a primary segment that runs across a page where the
    independent classifier cuts between two types is a MAJOR issue, whatever shares the
    primary gives inside it (a page of another type that pretends to continue a document)."""
    issues = []
    for i, segment in enumerate(primary.segments):
        for page, before, after in type_cuts(second.output):
            if segment.start_page < page <= segment.end_page:
                issues.append(
                    _issue(
                        f"Segment {i + 1} (pages {segment.start_page}-{segment.end_page}, "
                        f"{segment.dominant_type.value}) runs across page {page}, where the "
                        f"independent {second.name} classifier reads a change from "
                        f"{before.value} to {after.value}: a document of another type may "
                        "start there.",
                        f"segments[{i}]",
                        "A clinician checks where each document starts and its type.",
                        code=SPANS_CUT,
                    )
                )
                break
    return issues


def check(
    primary: ClassificationOutput,
    second: SecondOpinion,
    context: DocumentContext,
    *,
    confirm_confidence: float,
    require_confirmation: bool = False,
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
    result.issues += spanning_issues(primary, second)
    agrees = not result.issues and _segment_confirmed(primary, other)
    if result.second_confidence >= confirm_confidence:
        result.confirmed = agrees
        result.confirmed_by = BY_CLASSIFIER if agrees else ""
        return result
    result.abstained = True
    shapes = _shapes(primary, context)
    if result.issues:
        # A disagreement without confidence: the structure may overrule it, strictly.
        named_by_them = {theirs, *(s.dominant_type for s in other.segments), *other_grounded}
        if (
            all(shape.confirms(t, strict=True) for t, shape in shapes)
            and not any(shape.shows_structure_of(t) for t in named_by_them for _, shape in shapes)
            and not any(i.code == SPANS_CUT for i in result.issues)
            and _content_agrees(primary, context)
        ):
            result.overruled = [issue.message for issue in result.issues]
            result.issues = []
            result.confirmed, result.confirmed_by = True, BY_STRUCTURE
        return result
    # Never the structure alone: the learned reading of the content must not contradict it.
    if all(shape.confirms(t, strict=False) for t, shape in shapes) and _content_agrees(
        primary, context
    ):
        result.confirmed, result.confirmed_by = True, BY_STRUCTURE
    elif require_confirmation:
        result.issues.append(
            _issue(
                f"The independent {name} classifier agrees, but without confidence "
                f"({result.second_confidence:.2f}, below {confirm_confidence:.2f}), and the "
                "document's structure does not confirm the type: an agreement without "
                "confidence confirms nothing, and the model that gave the labels cannot "
                "confirm them itself.",
                "dominant_type_overall",
                "A clinician confirms the type.",
                code=ABSTAINED,
            )
        )
    return result
