"""Submit a document with options, poll its status, fetch the result. A client sees only the
documents it submitted (api.access)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import HttpRequest
from django.urls import reverse
from ninja import Router, Status
from pydantic import ValidationError

from api.access import own_document, processing_status
from api.auth import json_load_limited
from api.schemas import (
    DocumentResult,
    DocumentStatus,
    Error,
    NotQueued,
    SubmitForm,
    Submitted,
    inlined,
)
from core.errors import Refused
from documents.models import Document
from documents.services import DuplicateUpload, document_upload
from reliability.extraction import ProcessingOptions
from reliability.models import Extraction, Run
from review.models import ReviewPacket
from review.selectors import current_ground_truth
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
    if "options" in request.POST:
        raw = json_load_limited(request.POST["options"], what="The 'options' field")
        if not isinstance(raw, dict):
            raise Refused(status=400, message="The 'options' field must be a JSON object.")
    else:
        raw = {k: v for k, v in request.POST.items()}
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
            extra={"details": details},
        ) from None


def _links(document: Document) -> dict[str, str]:
    return {
        "status_url": reverse("api:status", args=[document.pk]),
        "result_url": reverse("api:result", args=[document.pk]),
    }


ERRORS = {400: Error, 401: Error, 403: Error, 409: Error, 503: Error}


@router.post(
    "/documents/",
    url_name="submit",
    summary="Submit a document (PDF or text) with processing options",
    response={202: Submitted, 200: Submitted, **ERRORS, 503: NotQueued},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"multipart/form-data": {"schema": inlined(SubmitForm.model_json_schema())}},
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
        raise Refused(status=403, message="This token's user may not submit documents.")
    upload = request.FILES.get("file")
    if upload is None:
        raise Refused(status=400, message="Attach the document as the multipart field 'file'.")
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
    summary="Processing status",
    response={200: DocumentStatus, 401: Error, 403: Error, 404: Error},
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
    summary="Type, segments, fields and loop metadata",
    response={200: DocumentResult, 401: Error, 403: Error, 404: Error, 409: Error},
    exclude_unset=True,
)
def result(request: HttpRequest, document_id: UUID, history: bool = False) -> dict[str, Any]:
    document = own_document(request, document_id)
    state, run = processing_status(document)
    if state != "completed" or run is None:
        raise Refused(
            status=409,
            message=f"The result is not ready: the document is {state}.",
            extra={"state": state},
        )
    if not label_view(request.user, document).everything:
        raise Refused(
            status=409, message=HELD_BACK, code="labels_hidden", extra={"state": "checking"}
        )
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
