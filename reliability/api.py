"""JSON API (django-ninja): submit a document with options, poll its status, fetch the result.

Bearer tokens (``Authorization: Bearer <key>``, only the key's SHA-256 is stored); a client sees
only the documents it submitted. Every schema in /api/v1/openapi.json is generated from the
pydantic models below and from ``ProcessingOptions``.
"""

from __future__ import annotations

import json
import logging
from datetime import date
from typing import Any, Literal
from uuid import UUID

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.urls import URLPattern, URLResolver, reverse
from ninja import NinjaAPI, Schema, Status
from ninja.errors import HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.parser import Parser
from ninja.security import HttpBearer
from pydantic import ConfigDict, Field, ValidationError

from documents.models import Document
from documents.services import DuplicateUpload, document_create
from documents.validation import UploadRefused, check_size
from engine import llm
from engine.pipeline import PRESETS
from engine.schemas import DOC_TYPES
from reliability.evaluations import MAX_DOCUMENTS, EvaluateRequest, documents_evaluate
from reliability.fields import ProcessingOptions
from reliability.models import Extraction, Run
from reliability.services import api_token_authenticate
from review.exports import (
    CONTENT_TYPES,
    FILENAMES,
    FORMATS,
    STREAMED,
    ExportFilter,
    ExportUnavailable,
    Streamed,
    export_bytes,
    export_digest,
    export_stream,
)
from review.models import GroundTruth, ReviewPacket
from review.selectors import current_ground_truth, ground_truth_selection
from review.services import export_audit

logger = logging.getLogger(__name__)
DOCUMENT_TYPES = [t.value for t in DOC_TYPES]
VIEW_PERMISSION = "documents.view_document"
ADD_PERMISSION = "documents.add_document"
DUPLICATE_OF_OTHER = (
    "This exact file was already submitted by another account. Results are not shared "
    "between accounts: ask an administrator if you need this document's result."
)

# -- schemas ------------------------------------------------------------------------------------


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


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
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


# -- authentication ---------------------------------------------------------------------------


class ApiRefusal(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"error": message, **extra}


class bearer(HttpBearer):
    """A valid, unrevoked token of an active user; the request then acts as that user."""

    def __call__(self, request: HttpRequest) -> Any:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer "):
            raise ApiRefusal(401, "Authentication required: send 'Authorization: Bearer <token>'.")
        return self.authenticate(request, header[7:].strip())

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        found = api_token_authenticate(key=token)
        if found is None:
            raise ApiRefusal(401, "The API token is not valid (unknown or revoked).")
        request.user = found.user
        # The same roles as the browser: documents are patient data.
        if not found.user.has_perm(VIEW_PERMISSION):
            raise ApiRefusal(
                403, "This token's user has no role (Reviewers or Admins): ask an administrator."
            )
        return found.user


def json_too_deep(text: str, max_depth: int) -> bool:
    """Whether objects and lists nest deeper than ``max_depth`` (checked before parsing: the
    parser itself would recurse, and a deep enough document ends in RecursionError)."""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif char in "]}":
            depth -= 1
    return False


def json_load_limited(raw: str | bytes, *, what: str) -> Any:
    """Parse JSON from a client within API_JSON_MAX_BYTES and API_JSON_MAX_DEPTH; an
    ApiRefusal (413 or 400, as JSON) otherwise."""
    if len(raw) > settings.API_JSON_MAX_BYTES:
        raise ApiRefusal(
            413, f"{what} is larger than {settings.API_JSON_MAX_BYTES} bytes.", code="too_large"
        )
    try:
        text = raw.decode() if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        raise ApiRefusal(400, f"{what} is not UTF-8 text.", code="invalid_json") from None
    if json_too_deep(text, settings.API_JSON_MAX_DEPTH):
        raise ApiRefusal(
            400,
            f"{what} nests deeper than {settings.API_JSON_MAX_DEPTH} levels.",
            code="too_deep",
        )
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise ApiRefusal(400, f"{what} is not valid JSON.", code="invalid_json") from None


class LimitedParser(Parser):
    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        body = json_load_limited(request.body, what="The request body")
        if not isinstance(body, dict):
            raise ApiRefusal(400, "The request body must be a JSON object.", code="invalid_json")
        return body


api = NinjaAPI(
    title="Vetted API",
    parser=LimitedParser(),
    version="1.0.0",
    description="Submit clinical documents, poll, and fetch the verified classification and "
    "extracted fields.",
    urls_namespace="api",
    auth=bearer(),
    docs_url=None,  # no CDN-hosted documentation page; the schema is at openapi.json
)


@api.exception_handler(ApiRefusal)
def _refusal(request: HttpRequest, exc: ApiRefusal) -> HttpResponse:
    return api.create_response(request, exc.body, status=exc.status)


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    """django-ninja wraps a refusal raised while parsing the body: answer with the refusal."""
    if isinstance(exc.__cause__, ApiRefusal):
        return _refusal(request, exc.__cause__)
    return api.create_response(request, {"error": str(exc)}, status=exc.status_code)


@api.exception_handler(Exception)
def _crash(request: HttpRequest, exc: Exception) -> HttpResponse:
    """Whatever else goes wrong is answered in JSON too (never Django's HTML error page);
    the details stay in the server log."""
    if isinstance(exc, RequestDataTooBig):
        return api.create_response(
            request, {"error": "The request is too large.", "code": "too_large"}, status=413
        )
    logger.exception("API request crashed: %s %s", request.method, request.path)
    body = {"error": "The server failed to handle the request; it is logged.", "code": "error"}
    return api.create_response(request, body, status=500)


@api.exception_handler(NinjaValidationError)
def _invalid(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    details = [
        {"option": ".".join(str(part) for part in e["loc"][1:]), "message": e["msg"]}
        for e in exc.errors
    ]
    message = "Invalid request: " + "; ".join(f"{d['option']}: {d['message']}" for d in details)
    return api.create_response(request, {"error": message, "details": details}, status=400)


# -- helpers ------------------------------------------------------------------------------------


def _options(request: HttpRequest) -> ProcessingOptions:
    if "options" in request.POST:
        raw = json_load_limited(request.POST["options"], what="The 'options' field")
        if not isinstance(raw, dict):
            raise ApiRefusal(400, "The 'options' field must be a JSON object.")
    else:
        raw = {k: v for k, v in request.POST.items()}
    try:
        return ProcessingOptions.model_validate(raw)
    except ValidationError as exc:
        details = [
            {"option": ".".join(map(str, e["loc"])) or "options", "message": e["msg"]}
            for e in exc.errors()
        ]
        raise ApiRefusal(
            400,
            "Invalid options: " + "; ".join(f"{d['option']}: {d['message']}" for d in details),
            details=details,
        ) from None


def _links(document: Document) -> dict[str, str]:
    return {
        "status_url": reverse("api:status", args=[document.pk]),
        "result_url": reverse("api:result", args=[document.pk]),
    }


def _own_document(request: HttpRequest, document_id: UUID) -> Document:
    documents = Document.objects.all()
    if not request.user.is_staff:
        documents = documents.filter(uploaded_by_id=request.user.pk)
    document = documents.filter(pk=document_id).first()
    if document is None:
        raise ApiRefusal(404, "No such document for this token.")
    return document


def _latest_run(document: Document) -> Run | None:
    return Run.objects.filter(document=document).order_by("-created_at", "-pk").first()


def _status(document: Document) -> tuple[str, Run | None]:
    """uploaded, ingesting, classifying, waiting, completed or failed."""
    if document.status == Document.Status.FAILED:
        return "failed", None
    if document.status != Document.Status.READY:
        return document.status, None
    run = _latest_run(document)
    if run is None or run.status in (Run.Status.PENDING, Run.Status.RUNNING):
        return "classifying", run
    if run.status == Run.Status.WAITING:
        return "waiting", run
    if run.status == Run.Status.FAILED:
        return "failed", run
    return "completed", run


# -- operations ---------------------------------------------------------------------------------

ERRORS = {400: Error, 401: Error, 403: Error, 409: Error, 503: Error}


@api.post(
    "/documents/",
    url_name="submit",
    summary="Submit a document (PDF or text) with processing options",
    response={202: Submitted, 200: Submitted, **ERRORS, 503: NotQueued},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {"schema": _inlined(SubmitForm.model_json_schema())}
            },
        }
    },
)
def submit(request: HttpRequest) -> Status[dict[str, Any]]:
    """202 queued. 200 with ``duplicate: true``: this token's user had already submitted the
    same file; the body is that document's handle. 503: stored but not queued (the job queue
    is unreachable); the document is queued by itself when the queue is back, and re-uploading
    gives this same document. 409: another account submitted the same file (nothing about it
    is said)."""
    if not request.user.has_perm(ADD_PERMISSION):
        raise ApiRefusal(403, "This token's user may not submit documents.")
    upload = request.FILES.get("file")
    if upload is None:
        raise ApiRefusal(400, "Attach the document as the multipart field 'file'.")
    options = _options(request)
    name = upload.name or "upload"
    try:
        check_size(name=name, size=upload.size or 0, max_bytes=settings.UPLOAD_MAX_BYTES)
        document = document_create(
            filename=name,
            content=upload.read(),
            user=request.user,
            options=options.model_dump(mode="json", exclude_none=True),
        )
    except DuplicateUpload as duplicate:
        # Nothing about another account's upload is said: not its name, not its id.
        if duplicate.existing.uploaded_by_id != request.user.pk:
            raise ApiRefusal(409, DUPLICATE_OF_OTHER, code="duplicate") from None
        document, created = duplicate.existing, False
    except UploadRefused as refused:
        raise ApiRefusal(400, refused.message, code=refused.code) from None
    else:
        created = True
    document.refresh_from_db()
    body = {"id": str(document.pk), "status": _status(document)[0], **_links(document)}
    if document.error_code == Document.QUEUE_UNREACHABLE:
        refusal = ApiRefusal(503, document.error, code="queue_unreachable")
        refusal.body.update(body)  # the handle: the document is kept and resumes by itself
        raise refusal
    if not created:
        return Status(200, {**body, "duplicate": True})
    return Status(202, body)


@api.get(
    "/documents/{uuid:document_id}/",
    url_name="status",
    summary="Processing status",
    response={200: DocumentStatus, 401: Error, 403: Error, 404: Error},
    exclude_unset=True,
)
def status(request: HttpRequest, document_id: UUID) -> dict[str, Any]:
    document = _own_document(request, document_id)
    state, run = _status(document)
    body: dict[str, Any] = {
        "id": str(document.pk),
        "filename": document.original_filename,
        "status": state,
        "page_count": document.page_count,
        "options": document.options,
        **_links(document),
        "error": document.error or (run.error if run else ""),
    }
    if run is not None:
        body["run"] = {"id": run.pk, "status": run.status, "decision": run.final_decision}
        if run.status == Run.Status.WAITING:
            body["run"]["retry_at"] = run.retry_at.isoformat() if run.retry_at else None
            body["run"]["wait_reason"] = run.wait_reason
    return body


@api.get(
    "/documents/{uuid:document_id}/result/",
    url_name="result",
    summary="Type, segments, fields and loop metadata",
    response={200: DocumentResult, 401: Error, 403: Error, 404: Error, 409: Error},
    exclude_unset=True,
)
def result(request: HttpRequest, document_id: UUID, history: bool = False) -> dict[str, Any]:
    document = _own_document(request, document_id)
    state, run = _status(document)
    if state != "completed" or run is None:
        raise ApiRefusal(409, f"The result is not ready: the document is {state}.", state=state)
    truth = current_ground_truth(document)
    packet = ReviewPacket.objects.filter(run=run).first()
    classification = truth.classification if truth else (packet.classification if packet else {})
    extractions = list(Extraction.objects.filter(run=run).order_by("segment_index"))
    warnings = [w for e in extractions for w in e.warnings]
    warnings += [e.refused_reason for e in extractions if e.refused_reason]
    if document.quality_message:
        warnings.append(document.quality_message)
    return {
        "id": str(document.pk),
        "type": classification.get("dominant_type_overall"),
        "form_type": next((e.form_type for e in extractions if e.form_type), None),
        "decision": run.final_decision,
        "review": {
            "status": packet.status if packet else "not_needed",
            "ground_truth_source": truth.source if truth else None,
        },
        "segments": [
            {"start_page": s["start_page"], "end_page": s["end_page"], "type": s["dominant_type"]}
            for s in classification.get("segments", [])
        ],
        "fields": [
            {
                "segment": e.segment_index,
                "pages": [e.start_page, e.end_page],
                "doc_type": e.doc_type,
                "status": e.status,
                "form_type": e.form_type or None,
                "alternative_types": e.alternatives,
                "issues": e.issues,
                "fields": e.fields,
                "loop": {
                    "final_score": e.final_score,
                    "iterations": e.iterations_count,
                    "met_threshold": e.met_threshold,
                    "stopped_reason": e.stopped_reason,
                    **({"history": e.iterations} if history else {}),
                },
            }
            for e in extractions
        ],
        "warnings": warnings,
        "processing_time_seconds": round(
            (document.ingest_seconds or 0.0) + (run.duration_seconds or 0.0), 3
        ),
    }


# -- ground truth exports ------------------------------------------------------------------------

EXPORT_PERMISSION = "review.export_ground_truth"
ExportFormat = Literal["jsonl", "csv", "fhir", "parquet", "hf"]
assert set(ExportFormat.__args__) == set(FORMATS)  # type: ignore[attr-defined]
FILE_RESPONSE = {
    "description": "The export file (a zip of the dataset folder for hf).",
    "content": {
        CONTENT_TYPES[f]: {"schema": {"type": "string", "format": "binary"}} for f in FORMATS
    },
}


def _export(
    request: HttpRequest, records: Any, *, fmt: str, export_filter: ExportFilter
) -> HttpResponseBase:
    filters = {"via": "api", "format": fmt, **export_filter.as_dict()}
    if fmt in STREAMED:

        def audit(result: Streamed) -> None:
            export_audit(
                user=request.user,
                digest=result.digest,
                filters=filters,
                records=result.records,
                complete=result.complete,
            )

        stream = export_stream(records, fmt=fmt, site_url=settings.SITE_URL, on_end=audit)
        streaming = StreamingHttpResponse(stream, content_type=CONTENT_TYPES[fmt])
        streaming["Content-Disposition"] = f'attachment; filename="{FILENAMES[fmt]}"'
        return streaming
    try:
        body = export_bytes(
            records, fmt=fmt, export_filter=export_filter, site_url=settings.SITE_URL
        )
    except ExportUnavailable as refused:
        raise ApiRefusal(refused.status, refused.message, code=refused.code) from None
    export_audit(
        user=request.user,
        digest=export_digest(body),
        filters=filters,
        records=records.count(),
    )
    response = HttpResponse(body, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{FILENAMES[fmt]}"'
    return response


@api.get(
    "/ground-truth/",
    url_name="ground_truth",
    summary="Export ground truth: jsonl, csv, fhir (R4 Bundle), parquet or hf (zip)",
    description="A token holding the Admins role's export permission sees every record; "
    "any other token sees the records of the documents it submitted.",
    response={200: None, 400: Error, 401: Error, 501: Error},
    openapi_extra={"responses": {"200": FILE_RESPONSE}},
)
def ground_truth_export(
    request: HttpRequest,
    format: ExportFormat = "fhir",
    type: str = "",
    source: str = "",
    start: date | None = None,
    end: date | None = None,
    all_versions: bool = False,
) -> HttpResponseBase:
    if type and type not in DOCUMENT_TYPES:
        raise ApiRefusal(400, f"Unknown type {type!r}; use one of {', '.join(DOCUMENT_TYPES)}.")
    if source and source not in GroundTruth.Source.values:
        raise ApiRefusal(
            400, f"Unknown source {source!r}; use one of {', '.join(GroundTruth.Source.values)}."
        )
    export_filter = ExportFilter(
        start=start, end=end, source=source, doc_type=type, all_versions=all_versions
    )
    records = export_filter.selection()
    if not request.user.has_perm(EXPORT_PERMISSION):
        records = records.filter(document__uploaded_by_id=request.user.pk)
    return _export(request, records, fmt=format, export_filter=export_filter)


@api.get(
    "/documents/{uuid:document_id}/fhir/",
    url_name="document_fhir",
    summary="The document's ground truth as a FHIR R4 Bundle",
    response={200: None, 401: Error, 404: Error, 409: Error},
    openapi_extra={
        "responses": {
            "200": {
                "description": "A Bundle of type collection.",
                "content": {"application/fhir+json": {"schema": {"type": "object"}}},
            }
        }
    },
)
def document_fhir(
    request: HttpRequest, document_id: UUID, all_versions: bool = False
) -> HttpResponseBase:
    if request.user.has_perm(EXPORT_PERMISSION):
        document = Document.objects.filter(pk=document_id).first()
        if document is None:
            raise ApiRefusal(404, "No such document for this token.")
    else:
        document = _own_document(request, document_id)
    records = ground_truth_selection(all_versions=all_versions).filter(document=document)
    if not records.exists():
        state = _status(document)[0]
        raise ApiRefusal(409, f"No ground truth yet: the document is {state}.", state=state)
    export_filter = ExportFilter(all_versions=all_versions)
    return _export(request, records, fmt="fhir", export_filter=export_filter)


LLM_NOT_CONFIGURED = (
    "No language model is configured, so the evaluation operations are unavailable: set "
    "GEMINI_API_KEY (or the Vertex AI settings) on the server."
)


@api.post(
    "/evaluate/",
    url_name="evaluate",
    summary="Ask a language model about your documents: filter, score, extract, extract_fields",
    description=(
        f"Runs one operation over up to {MAX_DOCUMENTS} of your own documents with bounded "
        "concurrency (LLM_MAX_CONCURRENCY) and answers in the order asked. Each result has "
        "value, confidence, optional reasoning and error: value null without an error means the "
        "document does not contain the answer. A document of another user, or an unknown one, "
        "is a 404 for the whole request; a document not yet ingested is an error in its result. "
        "Without a language model configured the answer is 503 (code llm_not_configured)."
    ),
    response={200: EvaluationResponse, 400: Error, 401: Error, 404: Error, 503: Error},
)
def evaluate(request: HttpRequest, body: EvaluateRequest) -> dict[str, Any]:
    client = llm.client_from_settings(settings)
    if client is None:
        raise ApiRefusal(503, LLM_NOT_CONFIGURED, code="llm_not_configured")
    documents = []
    for raw in body.documents:
        try:
            documents.append(_own_document(request, UUID(raw)))
        except ValueError:
            raise ApiRefusal(400, f"Not a document id: {raw!r}.") from None
        except ApiRefusal:
            raise ApiRefusal(404, f"No such document for this token: {raw}.") from None
    results = documents_evaluate(client=client, request=body, documents=documents)
    usage = client.usage()
    return {
        "operation": body.operation,
        "model": client.model,
        "results": results,
        "usage": {k: usage[k] for k in ("calls", "tokens_in", "tokens_out", "seconds")},
    }


def openapi_schema() -> dict[str, Any]:
    return dict(api.get_openapi_schema(path_prefix="/api/v1/"))


def urls() -> tuple[list[URLResolver | URLPattern], str, str]:
    """The API's URL patterns. Tokens, not sessions, guard them: they opt out of the login
    redirect that every page has."""
    patterns, app_name, namespace = api.urls
    for pattern in patterns:
        if isinstance(pattern, URLPattern):
            login_not_required(pattern.callback)
    return patterns, app_name, namespace
