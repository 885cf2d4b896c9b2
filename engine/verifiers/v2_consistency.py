"""V2 consistency: rules, and an LLM check that each segment's text reads as its label (one call
per segment, made at once). When the LLM check runs is the pipeline's decision (pipeline.verify:
only where it can change the outcome); ``verify`` here runs both, for direct use."""

from __future__ import annotations

from functools import partial

from engine.document import DocumentContext
from engine.protocols import LLMClient
from engine.schemas import (
    DISPLAY_NAMES,
    ClassificationOutput,
    Issue,
    Presence,
    Severity,
    make_issue,
)

AGENT = "V2"
SHARE_TOLERANCE = 0.01
LLM_PHASE = "V2 label/text consistency (LLM)"


_issue = partial(make_issue, AGENT)


def verify_rules(output: ClassificationOutput, context: DocumentContext) -> list[Issue]:
    issues: list[Issue] = []
    for i, segment in enumerate(output.segments):
        total = sum(t.segment_share for t in segment.types)
        if abs(total - 1.0) > SHARE_TOLERANCE:
            issues.append(
                _issue(
                    Severity.MAJOR,
                    "segment_shares",
                    f"Shares in segment {i + 1} sum to {total:.3f}, not 1.",
                    f"segments[{i}].types",
                    "Normalise the shares to sum to 1.",
                    auto=True,
                )
            )
        dominant = segment.assessment(segment.dominant_type)
        if dominant is not None:
            if dominant.presence_level == Presence.NO_EVIDENCE:
                issues.append(
                    _issue(
                        Severity.MAJOR,
                        "dominant_without_evidence",
                        f"Segment {i + 1} is labelled {segment.dominant_type.value} "
                        "but that type is NO_EVIDENCE.",
                        f"segments[{i}].dominant_type",
                        "Make the label agree with the presence levels.",
                        llm=True,
                    )
                )
            elif dominant.confidence < context.min_dominant_confidence:
                issues.append(
                    _issue(
                        Severity.MAJOR,
                        "low_confidence",
                        f"Segment {i + 1} is {segment.dominant_type.value} with "
                        f"confidence {dominant.confidence:.2f}, below "
                        f"{context.min_dominant_confidence:.2f}.",
                        f"segments[{i}].types.{segment.dominant_type.value}",
                        "A clinician should confirm the type.",
                        llm=True,
                    )
                )
            top = max(segment.types, key=lambda t: t.segment_share)
            if top.type != segment.dominant_type and top.segment_share > dominant.segment_share:
                issues.append(
                    _issue(
                        Severity.MAJOR,
                        "dominant_not_largest",
                        f"Segment {i + 1} is labelled {segment.dominant_type.value} "
                        f"but {top.type.value} has the larger share.",
                        f"segments[{i}].dominant_type",
                        "Make the label agree with the shares.",
                        llm=True,
                    )
                )

    total = sum(m.overall_share for m in output.document_mixture)
    if output.document_mixture and abs(total - 1.0) > SHARE_TOLERANCE:
        issues.append(
            _issue(
                Severity.MAJOR,
                "mixture_shares",
                f"Document mixture shares sum to {total:.3f}, not 1.",
                "document_mixture",
                "Normalise the shares to sum to 1.",
                auto=True,
            )
        )

    starts = {s.start_page for s in output.segments}
    for boundary in context.boundaries:
        if not boundary.cut or boundary.page in starts:
            continue
        said = "; ".join(
            f"{c.description} (“{c.text}”)" if c.text else c.description
            for c in boundary.cues
            if c.weight > 0
        )
        issues.append(
            _issue(
                Severity.MAJOR,
                "missed_boundary",
                f"Page {boundary.page} reads as the start of a new document, but no segment "
                f"starts there: {said}.",
                "segments",
                f"Start a new segment at page {boundary.page}, unless the page continues the "
                "document before it.",
                llm=True,
            )
        )

    ranges = [(s.start_page, s.end_page) for s in output.segments]
    if ranges and all(1 <= a <= b <= context.page_count for a, b in ranges):
        covered: dict[int, int] = {}
        for i, (start, end) in enumerate(ranges):
            for page in range(start, end + 1):
                if page in covered:
                    issues.append(
                        _issue(
                            Severity.BLOCKER,
                            "overlap",
                            f"Page {page} is in segments {covered[page] + 1} and {i + 1}.",
                            f"segments[{i}]",
                            "Give every page to exactly one segment.",
                        )
                    )
                    break
                covered[page] = i
        missing = [p for p in range(1, context.page_count + 1) if p not in covered]
        if missing:
            issues.append(
                _issue(
                    Severity.BLOCKER,
                    "gap",
                    f"Pages {_ranges(missing)} belong to no segment.",
                    "segments",
                    "Give every page to exactly one segment.",
                )
            )
    return issues


def _ranges(pages: list[int]) -> str:
    parts, start = [], pages[0]
    for prev, cur in zip(pages, [*pages[1:], None], strict=False):
        if cur != prev + 1:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = cur  # type: ignore[assignment]
    return ", ".join(parts)


def check_segment(
    index: int, output: ClassificationOutput, context: DocumentContext, llm: LLMClient
) -> list[Issue]:
    """One LLM call: does segment ``index``'s text read as its label?"""
    segment = output.segments[index]
    text = context.segment_text(segment.start_page, segment.end_page)[:8000]
    name = DISPLAY_NAMES[segment.dominant_type]
    result = llm.filter(question=f"Is this text, taken as a whole, a {name}?", text=text)
    if result.error:
        return [
            _issue(
                Severity.MAJOR,
                "llm_check_failed",
                f"The consistency check of segment {index + 1} could not run: {result.error}",
                f"segments[{index}]",
                "A clinician should confirm the type.",
            )
        ]
    if result.value is False and result.confidence >= 0.7:
        return [
            _issue(
                Severity.MAJOR,
                "label_text_mismatch",
                f"Segment {index + 1} does not read as a {name}: "
                f"{result.reasoning or 'no reason given'}",
                f"segments[{index}].dominant_type",
                "Re-read the segment and correct its type.",
                llm=True,
            )
        ]
    return []


def verify_llm(
    output: ClassificationOutput, context: DocumentContext, llm: LLMClient
) -> list[Issue]:
    """Every segment checked, the calls made at once (up to the client's concurrency)."""
    results = llm.concurrently(
        [partial(check_segment, i, output, context, llm) for i in range(len(output.segments))]
    )
    return [issue for found in results for issue in found]


def verify(
    output: ClassificationOutput, context: DocumentContext, *, blocker_so_far: bool = False
) -> list[Issue]:
    issues = verify_rules(output, context)
    has_blocker = blocker_so_far or any(i.severity == Severity.BLOCKER for i in issues)
    if context.llm is None:
        context.skipped.append(f"{LLM_PHASE}: no LLM configured")
    elif has_blocker:
        context.skipped.append(f"{LLM_PHASE}: a BLOCKER was already found")
    else:
        issues.extend(verify_llm(output, context, context.llm))
    return issues
