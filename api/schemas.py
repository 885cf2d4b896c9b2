"""The API's request and response shapes: every schema in /api/v1/openapi.json is generated
from these pydantic models and from ``ProcessingOptions``."""

from __future__ import annotations

from typing import Any

from ninja import Schema
from pydantic import ConfigDict, Field

from engine.pipeline import PRESETS
from reliability.extraction import ProcessingOptions


class Error(Schema):
    error: str
    code: str | None = None
    state: str | None = None
    details: list[dict[str, str]] | None = None


class SubmitForm(ProcessingOptions):
    """The multipart body: the file, and the options as fields or as one JSON string."""

    model_config = ConfigDict(extra="forbid")

    file: bytes = Field(json_schema_extra={"format": "binary"})
    options: str | None = Field(
        None, description="JSON object of the options (or send each option as its own field)."
    )
    preset: str | None = Field(None, json_schema_extra={"enum": list(PRESETS)})


def inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema with its local $defs inlined, to sit inside the OpenAPI document
    (where "#/$defs/..." would point at the document's root)."""
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return resolve(defs[ref.removeprefix("#/$defs/")])
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    return dict(resolve(schema))


class Submitted(Schema):
    id: str
    status: str
    status_url: str
    result_url: str
    duplicate: bool | None = Field(
        None, description="true: this account had already submitted the same file"
    )


class NotQueued(Schema):
    error: str
    code: str
    id: str
    status: str
    status_url: str
    result_url: str


class RunBrief(Schema):
    id: int
    status: str
    decision: str
    retry_at: str | None = Field(
        None, description="When a waiting run tries the language model again (ISO 8601)."
    )
    wait_reason: str | None = Field(None, description="Why a waiting run waits.")


class DocumentStatus(Schema):
    id: str
    filename: str
    status: str = Field(
        description="uploaded, ingesting, classifying, waiting (for the language model: it "
        "resumes by itself, see run.retry_at), completed or failed"
    )
    page_count: int
    options: dict[str, Any]
    status_url: str
    result_url: str
    error: str
    run: RunBrief | None = None


class LoopSummary(Schema):
    final_score: float | None
    iterations: int
    met_threshold: bool
    stopped_reason: str
    history: list[dict[str, Any]] | None = None


class FormIssue(Schema):
    severity: str = Field(description="ERROR (the run is escalated) or WARNING")
    code: str
    message: str


class SegmentFields(Schema):
    segment: int
    pages: list[int]
    doc_type: str = Field(description="The template used: a clinical type, or a form's type")
    status: str
    form_type: str | None = Field(
        None,
        description="With a form pack (us_tax): the form this Other segment was filled as "
        "(w2, 1099_nec, ...); null when it is none of them.",
    )
    alternative_types: list[dict[str, Any]] = Field(
        default_factory=list, description="Other form templates that were partly filled."
    )
    issues: list[FormIssue] = Field(default_factory=list)
    fields: dict[str, Any]
    loop: LoopSummary


class ReviewState(Schema):
    status: str
    ground_truth_source: str | None


class SegmentType(Schema):
    start_page: int
    end_page: int
    type: str


class DocumentResult(Schema):
    id: str
    type: str | None = Field(description="The classification: one of the five clinical types")
    form_type: str | None = Field(
        None, description="The form the document was filled as (first segment), if any."
    )
    decision: str
    review: ReviewState
    segments: list[SegmentType]
    fields: list[SegmentFields]
    warnings: list[str]
    processing_time_seconds: float


class EvaluationResult(Schema):
    document: str
    value: Any = Field(
        None, description="The answer; null with no error means the document does not say."
    )
    confidence: float
    reasoning: str | None = None
    error: str | None = Field(None, description="Set when the operation failed for this document")
    interval: list[float] | None = Field(None, description="score: the confidence interval")
    note: str | None = Field(None, description="e.g. the document was too long to read whole")


class EvaluationResponse(Schema):
    operation: str
    model: str
    results: list[EvaluationResult] = Field(description="One per document, in the order asked")
    usage: dict[str, Any]
