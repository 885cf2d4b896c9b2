"""The classification output (the LLM's response schema and the stored JSON), issues and decisions.

Pure module: pydantic only. Ranges (confidence 0..1, shares 0..1) are described, not enforced,
so that an out-of-range value from a model survives parsing and V1 reports it as an issue.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema


class DocType(StrEnum):
    CLINICAL_NOTE = "clinical_note"
    PATHOLOGY = "pathology"
    GENOMIC = "genomic"
    RADIOLOGY = "radiology"
    OTHER = "other"


DOC_TYPES: tuple[DocType, ...] = tuple(DocType)

DISPLAY_NAMES: dict[str, str] = {
    DocType.CLINICAL_NOTE: "Clinical Note",
    DocType.PATHOLOGY: "Pathology Report",
    DocType.GENOMIC: "Genomic Report",
    DocType.RADIOLOGY: "Radiology Report",
    DocType.OTHER: "Other",
}

REPORT_TYPES = frozenset({DocType.PATHOLOGY, DocType.GENOMIC, DocType.RADIOLOGY})


class Presence(StrEnum):
    PRIMARY = "PRIMARY"
    EMBEDDED_RAW = "EMBEDDED_RAW"
    MENTION_ONLY = "MENTION_ONLY"
    NO_EVIDENCE = "NO_EVIDENCE"


class Evidence(BaseModel):
    snippet: str = Field(description="Text copied verbatim from the page.")
    page: int = Field(description="1-based page number the snippet was copied from.")
    anchors_found: list[str] = Field(
        default_factory=list, description="Key terms in the snippet that point to the type."
    )


class TypeAssessment(BaseModel):
    type: DocType
    presence_level: Presence
    confidence: float = Field(description="0..1, see the confidence rubric.")
    segment_share: float = Field(description="0..1; shares of one segment sum to 1.")
    reasoning: str = ""
    top_evidence: list[Evidence] = Field(default_factory=list)


class Segment(BaseModel):
    start_page: int
    end_page: int
    segment_page_count: int
    dominant_type: DocType
    types: list[TypeAssessment]

    def assessment(self, doc_type: DocType | str) -> TypeAssessment | None:
        return next((t for t in self.types if t.type == doc_type), None)


class MixtureEntry(BaseModel):
    type: DocType
    overall_share: float = Field(description="0..1; the mixture's shares sum to 1.")
    presence_level: Presence


class SelfEvaluation(BaseModel):
    confidence: float = Field(description="0..1: how sure the classifier is overall.")
    concerns: list[str] = Field(default_factory=list)


class BoundaryCue(BaseModel):
    """One thing that changes (or stays) between a page and the one before it."""

    code: str  # counter_restart, identifier_change, type_change, running_lines, ...
    weight: float  # > 0: a new document; < 0: the same document goes on
    description: str = ""
    text: str = ""  # what the pages say, verbatim ("Page 6 of 6 -> Page 1 of 2")


class Boundary(BaseModel):
    """Page ``page`` weighed as the start of a new document: its cues, their sum, the cut."""

    page: int
    score: float
    cut: bool
    cues: list[BoundaryCue] = Field(default_factory=list)


class ClassificationOutput(BaseModel):
    model_config = ConfigDict(use_enum_values=False)

    dominant_type_overall: DocType
    number_of_segments: int
    segments: list[Segment]
    document_mixture: list[MixtureEntry]
    vendor_signals: list[str] = Field(default_factory=list)
    self_evaluation: SelfEvaluation
    # The evidence of each cut (and of pages weighed and not cut), from the pages themselves:
    # the engine fills it, a model is not asked for it (kept out of the response schema).
    boundaries: SkipJsonSchema[list[Boundary]] = Field(default_factory=list)

    def mixture(self, doc_type: DocType | str) -> MixtureEntry | None:
        return next((m for m in self.document_mixture if m.type == doc_type), None)


class Severity(StrEnum):
    BLOCKER = "BLOCKER"
    MAJOR = "MAJOR"
    MINOR = "MINOR"


SEVERITY_ORDER = {Severity.BLOCKER: 0, Severity.MAJOR: 1, Severity.MINOR: 2}


class Issue(BaseModel):
    id: str = ""
    agent: str  # V1..V4
    severity: Severity
    code: str  # stable machine name of the check, e.g. "segment_count"
    message: str
    location: str = ""
    suggested_fix: str = ""
    auto_fixable: bool = False
    llm_fixable: bool = False


def make_issue(
    agent: str,
    severity: Severity,
    code: str,
    message: str,
    location: str,
    fix: str = "",
    *,
    auto: bool = False,
    llm: bool = False,
) -> Issue:
    return Issue(
        agent=agent,
        severity=severity,
        code=code,
        message=message,
        location=location,
        suggested_fix=fix,
        auto_fixable=auto,
        llm_fixable=llm,
    )


def sort_issues(issues: list[Issue]) -> list[Issue]:
    """BLOCKER, then MAJOR, then MINOR; stable within a severity."""
    return sorted(issues, key=lambda issue: SEVERITY_ORDER[issue.severity])


def number_issues(issues: list[Issue]) -> list[Issue]:
    """Give each issue its id: V1-0001, V1-0002, V2-0001, ..."""
    counters: dict[str, int] = {}
    for issue in issues:
        counters[issue.agent] = counters.get(issue.agent, 0) + 1
        issue.id = f"{issue.agent}-{counters[issue.agent]:04d}"
    return issues


class Decision(StrEnum):
    AUTO_ACCEPT = "AUTO_ACCEPT"
    AUTO_RETRY = "AUTO_RETRY"
    ESCALATE_TO_SME = "ESCALATE_TO_SME"
