"""The API's request and response shapes: every schema in /api/v1/openapi.json is generated
from these pydantic models and from ``ProcessingOptions``."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal
from uuid import UUID

from ninja import Schema
from pydantic import BeforeValidator, ConfigDict, Discriminator, Field, Tag

from engine.pipeline import PRESETS
from engine.schemas import DocType
from reliability.extraction import ProcessingOptions
from reliability.models import Run

DocumentType = Literal["clinical_note", "pathology", "genomic", "radiology", "other"]
assert set(DocumentType.__args__) == {t.value for t in DocType}  # type: ignore[attr-defined]
ProcessingState = Literal[
    "uploaded", "ingesting", "classifying", "waiting", "completed", "failed", "deleted"
]
RunStatus = Literal["pending", "running", "waiting", "completed", "failed"]
assert set(RunStatus.__args__) == set(Run.Status.values)  # type: ignore[attr-defined]
RunDecision = Literal["", "AUTO_ACCEPT", "ESCALATE_TO_SME", "AUTO_RETRY"]
TruthSource = Literal["AUTO_ACCEPTED", "SME_VALIDATED", "SME_CORRECTED"]
LabelState = Literal["final", "provisional", "awaiting_review", "checking", "none"]


def _iso_date(value: Any) -> Any:
    """Dates in query strings are ISO 8601 (YYYY-MM-DD) only: pydantic would also read a bare
    number as seconds since 1970, which no client means."""
    if isinstance(value, str) and not (len(value) == 10 and value[4] == "-" and value[7] == "-"):
        raise ValueError("use a date written YYYY-MM-DD")
    return value


IsoDate = Annotated[date, BeforeValidator(_iso_date)]


def json_boolean(value: Any) -> Any:
    """A boolean in a query string or form field is ``true`` or ``false`` (in any case), as
    the schema says (pydantic would also read 0, 1, yes, no, on and off)."""
    if isinstance(value, str) and value.lower() not in ("true", "false"):
        raise ValueError("use true or false")
    return value


JsonBool = Annotated[bool, BeforeValidator(json_boolean)]


class Error(Schema):
    """Every error under /api/ (any status): a message for people, a code for programs."""

    error: str
    code: str = Field(description="A stable code for programs: see docs/api.md's errors table")
    state: str | None = None
    details: list[dict[str, str]] | None = None


# What any operation may answer besides its own: a request the server refuses (400), no or a
# dead token (401), a token whose user has no role (403), a body over the limits (413), too
# many requests (429).
COMMON_ERRORS: dict[int, type[Error]] = {400: Error, 401: Error, 403: Error, 413: Error, 429: Error}


def errors(*statuses: int) -> dict[int, type[Error]]:
    """The error answers of an operation: the common ones and ``statuses``."""
    return {**COMMON_ERRORS, **dict.fromkeys(statuses, Error)}


class SubmitForm(ProcessingOptions):
    """The multipart body: the file, and each option as a field of its own."""

    model_config = ConfigDict(extra="forbid")

    file: bytes = Field(json_schema_extra={"format": "binary"})
    preset: str | None = Field(None, json_schema_extra={"enum": list(PRESETS)})


def submit_form_schema() -> dict[str, Any]:
    """The multipart body's schema. A form field is a string or absent, never null: an option
    left out takes its default, so no option is nullable here. (The options may also come as
    one JSON object in a field ``options``, as older clients send them.)"""
    schema = inlined(SubmitForm.model_json_schema())
    for name, field in schema["properties"].items():
        variants = [v for v in field.pop("anyOf", []) if v.get("type") != "null"]
        if len(variants) == 1:
            field.update(variants[0])
        elif variants:
            field["anyOf"] = variants
        if field.get("default", ...) is None:
            del field["default"]
        if name == "preset":
            field["type"] = "string"
    schema["required"] = ["file"]
    return schema


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
    status: RunStatus
    decision: RunDecision = Field(description="Empty until the run completes")
    retry_at: str | None = Field(
        None, description="When a waiting run tries the language model again (ISO 8601)."
    )
    wait_reason: str | None = Field(None, description="Why a waiting run waits.")


class DocumentStatus(Schema):
    id: str
    filename: str
    status: ProcessingState = Field(
        description="uploaded, ingesting, classifying, waiting (for the language model: it "
        "resumes by itself, see run.retry_at), completed, failed, or deleted (retention)"
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
    status: Literal["not_needed", "pending", "in_review", "completed"] = Field(
        description="The review packet of the run the label comes from (not_needed: the run "
        "was accepted without one)"
    )
    ground_truth_source: TruthSource | None


class Label(Schema):
    """Where the document's label stands: read this before using ``type``."""

    state: LabelState = Field(
        description="final: no check is open and none is pending, use it; provisional: a check "
        "(blind audit, second review, adjudication) is open on it and it may still change; "
        "awaiting_review: a clinician has not decided yet, there is no label (type is null); "
        "checking (lists only): a blind check this token's user takes no part in is open, "
        "the label is withheld; none: the document has no label (withdrawn decision, or "
        "nothing decided yet)"
    )
    source: TruthSource | None = None
    version: int | None = Field(None, description="The ground-truth version")


class SegmentType(Schema):
    start_page: int
    end_page: int
    type: DocumentType


class DocumentResult(Schema):
    id: str
    type: DocumentType | None = Field(
        description="The document's label (its standing ground truth): null while it awaits a "
        "clinician's review; see label.state"
    )
    label: Label
    form_type: str | None = Field(
        None, description="The form the document was filled as (first segment), if any."
    )
    decision: RunDecision = Field(
        description="The decision of the run the label comes from: AUTO_ACCEPT, or "
        "ESCALATE_TO_SME (a clinician decides; see label.state and review.status)"
    )
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


class DocumentItem(Schema):
    id: str
    filename: str
    status: ProcessingState
    created_at: str = Field(description="When it was submitted (ISO 8601)")
    page_count: int
    decision: RunDecision = Field(description="The latest run's decision; empty until one ends")
    label: Label
    type: DocumentType | None = Field(
        None, description="The label's type when label.state is final or provisional"
    )
    status_url: str
    result_url: str


class DocumentPage(Schema):
    items: list[DocumentItem]
    next_cursor: str | None = Field(
        description="Pass as ?cursor= for the next page; null on the last page"
    )


# -- /evaluate/: one request shape per operation, so the schema says what each one needs ------

Documents = Annotated[list[UUID], Field(min_length=1, max_length=50)]
Question = Annotated[str, Field(min_length=1, max_length=2000, pattern=r"\S")]
Instructions = Annotated[str, Field(max_length=2000)]


class _Evaluate(Schema):
    model_config = ConfigDict(extra="forbid")

    documents: Documents = Field(description="Ids of your own documents (at most 50)")


class FilterRequest(_Evaluate):
    operation: Literal["filter"]
    question: Question = Field(description="A yes/no question about each document")


class ScoreRequest(_Evaluate):
    operation: Literal["score"]
    question: Question
    low: float = Field(0.0, description="The scale's ends, in either order")
    high: float = 1.0


class ExtractRequest(_Evaluate):
    operation: Literal["extract"]
    question: Question
    kind: Literal["text", "number", "boolean"] = "text"


class ExtractEnumRequest(_Evaluate):
    operation: Literal["extract"]
    question: Question
    kind: Literal["enum"] = Field(description="The answer is one of ``options``")
    options: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        min_length=1, max_length=50
    )


class ExtractFieldsRequest(_Evaluate):
    operation: Literal["extract_fields"]
    fields: dict[str, Annotated[str, Field(max_length=2000)]] = Field(
        min_length=1, max_length=50, description="name -> what to extract"
    )
    instructions: Instructions = ""


def _evaluate_variant(value: Any) -> str | None:
    """Which request shape a body is: its operation, and for extract its kind."""
    get = value.get if isinstance(value, dict) else lambda key: getattr(value, key, None)
    operation = get("operation")
    if operation == "extract" and get("kind") == "enum":
        return "extract_enum"
    return operation if isinstance(operation, str) else None


EvaluateBody = Annotated[
    Annotated[FilterRequest, Tag("filter")]
    | Annotated[ScoreRequest, Tag("score")]
    | Annotated[ExtractRequest, Tag("extract")]
    | Annotated[ExtractEnumRequest, Tag("extract_enum")]
    | Annotated[ExtractFieldsRequest, Tag("extract_fields")],
    Discriminator(_evaluate_variant),
]
