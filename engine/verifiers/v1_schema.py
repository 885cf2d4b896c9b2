"""V1 schema and completeness: rules only."""

from __future__ import annotations

from engine.document import DocumentContext
from engine.schemas import (
    DOC_TYPES,
    ClassificationOutput,
    Issue,
    Presence,
    Severity,
    make_issue,
)

AGENT = "V1"


def verify(output: ClassificationOutput, context: DocumentContext) -> list[Issue]:
    issues: list[Issue] = []

    def add(
        severity: Severity,
        code: str,
        message: str,
        location: str,
        fix: str = "",
        auto: bool = False,
    ) -> None:
        issues.append(make_issue(AGENT, severity, code, message, location, fix, auto=auto))

    if not output.segments:
        add(
            Severity.BLOCKER,
            "no_segments",
            "The classification has no segments.",
            "segments",
            "Classify the document into at least one segment.",
        )
    if output.number_of_segments != len(output.segments):
        add(
            Severity.BLOCKER,
            "segment_count",
            f"number_of_segments is {output.number_of_segments} but {len(output.segments)} "
            "segments are listed.",
            "number_of_segments",
            f"Set number_of_segments to {len(output.segments)}.",
            auto=True,
        )

    total = context.page_count
    for i, segment in enumerate(output.segments):
        where = f"segments[{i}]"
        if not (1 <= segment.start_page <= segment.end_page <= total):
            add(
                Severity.BLOCKER,
                "page_range",
                f"Segment {i + 1} covers pages {segment.start_page}-{segment.end_page}, outside "
                f"1-{total} or reversed.",
                where,
                "Use page numbers within the document.",
            )
        expected = segment.end_page - segment.start_page + 1
        if segment.segment_page_count != expected:
            add(
                Severity.MAJOR,
                "page_count",
                f"Segment {i + 1} says {segment.segment_page_count} pages but spans {expected}.",
                f"{where}.segment_page_count",
                f"Set segment_page_count to {expected}.",
                auto=True,
            )
        present = {t.type for t in segment.types}
        for doc_type in DOC_TYPES:
            if doc_type not in present:
                add(
                    Severity.BLOCKER,
                    "missing_type",
                    f"Segment {i + 1} has no assessment for {doc_type.value}.",
                    f"{where}.types.{doc_type.value}",
                    "Add it as NO_EVIDENCE with confidence and share 0.",
                    auto=True,
                )
        for t in segment.types:
            if not 0.0 <= t.confidence <= 1.0:
                add(
                    Severity.BLOCKER,
                    "confidence_range",
                    f"Confidence {t.confidence} for {t.type.value} in segment {i + 1} is outside "
                    "0..1.",
                    f"{where}.types.{t.type.value}.confidence",
                    "Give a confidence between 0 and 1.",
                )
            if t.presence_level != Presence.NO_EVIDENCE and not t.top_evidence:
                add(
                    Severity.MINOR,
                    "missing_evidence",
                    f"{t.type.value} is {t.presence_level.value} in segment {i + 1} but no "
                    "evidence is given.",
                    f"{where}.types.{t.type.value}.top_evidence",
                    "Quote the text that shows it.",
                )

    present = {m.type for m in output.document_mixture}
    for doc_type in DOC_TYPES:
        if doc_type not in present:
            add(
                Severity.BLOCKER,
                "missing_type",
                f"The document mixture has no entry for {doc_type.value}.",
                f"document_mixture.{doc_type.value}",
                "Add it as NO_EVIDENCE with share 0.",
                auto=True,
            )
    if not 0.0 <= output.self_evaluation.confidence <= 1.0:
        add(
            Severity.BLOCKER,
            "confidence_range",
            f"Self-evaluation confidence {output.self_evaluation.confidence} is outside 0..1.",
            "self_evaluation.confidence",
            "Give a confidence between 0 and 1.",
        )
    return issues
