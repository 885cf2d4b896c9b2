"""Submit a document with options, poll its status, fetch the result. A client sees only the
documents it submitted (api.access)."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from django.http import HttpRequest
from django.urls import reverse
from ninja import Router, Status
from pydantic import Field, ValidationError

from api.access import document_standing, may_read_all, own_document, processing_status
from api.auth import json_load_limited
from api.listing import CURSOR_PATTERN, DocumentFilters, documents_page
from api.schemas import (
    DocumentPage,
    DocumentResult,
    DocumentStatus,
    DocumentType,
    IsoDate,
    JsonBool,
    NotQueued,
    ProcessingState,
    RunDecision,
    Submitted,
    TruthSource,
    errors,
    json_boolean,
    submit_form_schema,
)
from core.errors import Refused
from documents.models import Document
from documents.services import DuplicateUpload, document_refusal_record, document_upload
from documents.validation import UploadRefused
from reliability.extraction import ProcessingOptions
from reliability.models import Extraction, Run
from review.visibility import label_view

router = Router(tags=["documents"])
ADD_PERMISSION = "documents.add_document"
HELD_BACK = (
    "The result is held back while an independent check of this document (a blind audit or a "
    "second review) is open. Ask again later."
)
DUPLICATE_OF_OTHER = (
    "This exact file was already submitted by another account. Results are not shared "
    "between accounts: ask an administrator if you need this document's result."
)


def _options(request: HttpRequest) -> ProcessingOptions:
    if request.POST.get("options", "").strip():
        raw = json_load_limited(request.POST["options"], what="The 'options' field")
        if not isinstance(raw, dict):
            raise Refused(
                status=400,
                message="The 'options' field must be a JSON object.",
                code="invalid_options",
            )
    else:
        raw = {k: v for k, v in request.POST.items() if k != "options"}
        for name, field in ProcessingOptions.model_fields.items():
            # A form's boolean is spelled as a query string's (a generated client sends "True").
            if field.annotation is not bool or name not in raw:
                continue
            try:
                json_boolean(raw[name])
            except ValueError as exc:
                raise Refused(
                    status=400, message=f"Invalid options: {name}: {exc}.", code="invalid_options"
                ) from None
    try:
        return ProcessingOptions.model_validate(raw)
    except ValidationError as exc:
        details = [
            {"option": ".".join(map(str, e["loc"])) or "options", "message": e["msg"]}
            for e in exc.errors()
        ]
        raise Refused(
            status=400,
            message="Invalid options: "
            + "; ".join(f"{d['option']}: {d['message']}" for d in details),
            code="invalid_options",
            extra={"details": details},
        ) from None


def _links(document: Document) -> dict[str, str]:
    return {
        "status_url": reverse("api:status", args=[document.pk]),
        "result_url": reverse("api:result", args=[document.pk]),
    }


@router.post(
    "/documents/",
    url_name="submit",
    operation_id="submit_document",
    summary="Submit a document (PDF or text) with processing options",
    response={202: Submitted, 200: Submitted, **errors(409), 503: NotQueued},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"multipart/form-data": {"schema": submit_form_schema()}},
        }
    },
)
def submit(request: HttpRequest) -> Status[dict[str, Any]]:
    """202 queued. A file that is not a document Vetted reads (not a PDF or plain text,
    empty, encrypted, corrupt, too many pages) is answered 202 too, with status ``failed``:
    the status endpoint gives the error and its code, and the file is not kept. 413: the file
    is over UPLOAD_MAX_BYTES. 200 with ``duplicate: true``: this token's user had already
    submitted the same file; the body is that document's handle. 503: stored but not queued
    (the job queue is unreachable); the document is queued by itself when the queue is back,
    and re-uploading gives this same document. 409: another account submitted the same file
    (nothing about it is said)."""
    if not request.user.has_perm(ADD_PERMISSION):
        raise Refused(
            status=403, message="This token's user may not submit documents.", code="forbidden"
        )
    upload = request.FILES.get("file")
    if upload is None:
        raise Refused(
            status=400,
            message="Attach the document as the multipart field 'file'.",
            code="file_missing",
        )
    options = _options(request)
    try:
        document = document_upload(
            upload=upload,
            user=request.user,
            options=options.model_dump(mode="json", exclude_none=True),
        )
    except DuplicateUpload as duplicate:
        # Nothing about another account's upload is said: not its name, not its id.
        if duplicate.existing.uploaded_by_id != request.user.pk:
            raise Refused(status=409, message=DUPLICATE_OF_OTHER, code="duplicate") from None
        document, created = duplicate.existing, False
    except UploadRefused as refused:
        if refused.status == 413 or refused.code == "too_large":
            raise
        # Any bytes are a file the schema allows: a file that is not a document Vetted reads
        # fails as its own document (status failed, error and error_code say why), so a
        # client follows every upload the same way. The file itself is not kept.
        document = document_refusal_record(
            filename=upload.name or "unnamed",
            size=upload.size or 0,
            user=request.user,
            refused=refused,
        )
        created = True
    else:
        created = True
    body = {"id": str(document.pk), "status": processing_status(document)[0], **_links(document)}
    if document.error_code == Document.QUEUE_UNREACHABLE:
        # With the handle: the document is kept and resumes by itself.
        raise Refused(document.error, status=503, code="queue_unreachable", extra=body)
    if not created:
        return Status(200, {**body, "duplicate": True})
    return Status(202, body)


@router.get(
    "/documents/{uuid:document_id}/",
    url_name="status",
    operation_id="document_status",
    summary="Processing status",
    response={200: DocumentStatus, **errors(404)},
    exclude_unset=True,
)
def status(request: HttpRequest, document_id: UUID) -> dict[str, Any]:
    document = own_document(request, document_id)
    state, run = processing_status(document)
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


@router.get(
    "/documents/{uuid:document_id}/result/",
    url_name="result",
    operation_id="document_result",
    summary="The document's label (its standing ground truth), segments, fields and loop metadata",
    description="Answers from where the document's label stands, not from the latest run: "
    "`label.state` says whether the label is final, provisional (a blind audit, second review "
    "or adjudication is open on it) or awaiting a clinician's review (then `type` is null). A "
    "re-run never changes the answer while a decision or an open packet stands. 409 with code "
    "`not_ready` before the first run ends, `labels_hidden` while a blind check this token's "
    "user takes no part in is open.",
    response={200: DocumentResult, **errors(404, 409)},
    exclude_unset=True,
)
def result(request: HttpRequest, document_id: UUID, history: JsonBool = False) -> dict[str, Any]:
    document = own_document(request, document_id)
    standing = document_standing(document)
    if standing.truth is None and standing.packet is None:
        state = processing_status(document)[0]
        raise Refused(
            status=409,
            message=f"The result is not ready: the document is {state}.",
            code="not_ready",
            extra={"state": state},
        )
    if not label_view(request.user, document).everything:
        raise Refused(
            status=409, message=HELD_BACK, code="labels_hidden", extra={"state": "checking"}
        )
    truth, packet, run = standing.truth, standing.packet, standing.run
    classification = truth.classification if truth else {}
    # The fields the run extracted, also while the document awaits review (the machine's,
    # with the issues that sent it to a clinician); the type is the label's alone.
    extractions = list(Extraction.objects.filter(run=run).order_by("segment_index")) if run else []
    warnings = [w for e in extractions for w in e.warnings]
    warnings += [e.refused_reason for e in extractions if e.refused_reason]
    if document.quality_message:
        warnings.append(document.quality_message)
    return {
        "id": str(document.pk),
        "type": classification.get("dominant_type_overall"),
        "label": {
            "state": standing.state,
            "source": truth.source if truth else None,
            "version": truth.version if truth else None,
        },
        "form_type": next((e.form_type for e in extractions if e.form_type), None),
        "decision": run.final_decision if run else "",
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
            (document.ingest_seconds or 0.0) + ((run.duration_seconds or 0.0) if run else 0.0), 3
        ),
    }


@router.get(
    "/documents/",
    url_name="documents",
    operation_id="list_documents",
    summary="List your documents, newest first, a page at a time",
    description="Cursor pagination: follow `next_cursor` until it is null. Filters combine. "
    "`type`, `source` and `label_state` filter on the document's standing label, and leave out "
    "documents under a blind check this token's user takes no part in (a filter must not tell "
    "a hidden label by elimination); such documents are listed, without filters on labels, "
    "with `label.state` `none` and no type.",
    response={200: DocumentPage, **errors()},
)
def documents_list(
    request: HttpRequest,
    cursor: Annotated[str, Field(pattern=CURSOR_PATTERN)] = "",
    limit: Annotated[int, Field(ge=1, le=200)] = 50,
    status: ProcessingState | None = None,
    decision: RunDecision | None = None,
    type: DocumentType | None = None,
    source: TruthSource | None = None,
    label_state: Literal["final", "provisional"] | None = None,
    submitted_from: IsoDate | None = None,
    submitted_to: IsoDate | None = None,
) -> dict[str, Any]:
    return documents_page(
        user=request.user,
        read_all=may_read_all(request.user),
        cursor=cursor,
        limit=limit,
        filters=DocumentFilters(
            status=status,
            decision=decision,
            doc_type=type,
            source=source,
            label_state=label_state,
            submitted_from=submitted_from,
            submitted_to=submitted_to,
        ),
    )
