"""JSON API: submit a document with options, poll its status, fetch the result.

Token authentication (``Authorization: Bearer <key>``); a client sees only the documents it
submitted. The OpenAPI schema is served at /api/v1/openapi.json.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from pydantic import ValidationError

from documents.models import Document
from documents.services import document_create
from documents.validation import UploadRefused, check_size
from reliability.extraction_service import ProcessingOptions
from reliability.models import ApiToken, Extraction, Run
from reliability.pipeline import PRESETS
from reliability.schemas import DOC_TYPES
from review.models import GroundTruth, ReviewPacket

View = Callable[..., HttpResponse]


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def token_create(*, user: Any, name: str) -> tuple[ApiToken, str]:
    """A new token; the key is returned once and only its hash is stored."""
    key = f"vt_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(user=user, name=name, key_hash=hash_key(key), prefix=key[:8])
    return token, key


def error(status: int, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def token_required(view: View) -> View:
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer "):
            return error(401, "Authentication required: send 'Authorization: Bearer <token>'.")
        token = (
            ApiToken.objects.select_related("user")
            .filter(key_hash=hash_key(header[7:].strip()), revoked=False)
            .first()
        )
        if token is None or not token.user.is_active:
            return error(401, "The API token is not valid (unknown or revoked).")
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        request.user = token.user
        return view(request, *args, **kwargs)

    return csrf_exempt(login_not_required(wrapper))


def _options(request: HttpRequest) -> ProcessingOptions:
    if "options" in request.POST:
        raw: dict[str, Any] = json.loads(request.POST["options"])
    else:
        raw = {k: v for k, v in request.POST.items()}
    return ProcessingOptions.model_validate(raw)


def _links(document: Document) -> dict[str, str]:
    return {
        "status_url": reverse("api:status", args=[document.pk]),
        "result_url": reverse("api:result", args=[document.pk]),
    }


@token_required
@require_POST
def submit(request: HttpRequest) -> HttpResponse:
    upload = request.FILES.get("file")
    if upload is None:
        return error(400, "Attach the document as the multipart field 'file'.")
    try:
        options = _options(request)
    except json.JSONDecodeError:
        return error(400, "The 'options' field is not valid JSON.")
    except ValidationError as exc:
        details = [
            {"option": ".".join(map(str, e["loc"])) or "options", "message": e["msg"]}
            for e in exc.errors()
        ]
        return error(
            400,
            "Invalid options: " + "; ".join(f"{d['option']}: {d['message']}" for d in details),
            details=details,
        )
    name = upload.name or "upload"
    try:
        check_size(name=name, size=upload.size or 0, max_bytes=settings.UPLOAD_MAX_BYTES)
        document = document_create(
            filename=name,
            content=upload.read(),
            user=request.user,
            options=options.model_dump(mode="json", exclude_none=True),
        )
    except UploadRefused as refused:
        if refused.code == "duplicate":
            return error(409, refused.message)
        return error(400, refused.message, code=refused.code)
    document.refresh_from_db()
    return JsonResponse(
        {"id": str(document.pk), "status": _status(document)[0], **_links(document)}, status=202
    )


def _own_document(request: HttpRequest, document_id: str) -> Document | None:
    documents = Document.objects.all()
    if not request.user.is_staff:
        documents = documents.filter(uploaded_by_id=request.user.pk)
    return documents.filter(pk=document_id).first()


def _latest_run(document: Document) -> Run | None:
    return Run.objects.filter(document=document).order_by("-created_at", "-pk").first()


def _status(document: Document) -> tuple[str, Run | None]:
    """uploaded, ingesting, classifying, completed or failed."""
    if document.status == Document.Status.FAILED:
        return "failed", None
    if document.status != Document.Status.READY:
        return document.status, None
    run = _latest_run(document)
    if run is None or run.status in (Run.Status.PENDING, Run.Status.RUNNING):
        return "classifying", run
    if run.status == Run.Status.FAILED:
        return "failed", run
    return "completed", run


@token_required
@require_GET
def status(request: HttpRequest, document_id: str) -> HttpResponse:
    document = _own_document(request, document_id)
    if document is None:
        return error(404, "No such document for this token.")
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
    return JsonResponse(body)


@token_required
@require_GET
def result(request: HttpRequest, document_id: str) -> HttpResponse:
    document = _own_document(request, document_id)
    if document is None:
        return error(404, "No such document for this token.")
    state, run = _status(document)
    if state != "completed" or run is None:
        return error(409, f"The result is not ready: the document is {state}.", state=state)
    history = request.GET.get("history") in {"1", "true", "yes"}
    truth = GroundTruth.objects.filter(document=document, superseded_by__isnull=True).first()
    packet = ReviewPacket.objects.filter(run=run).first()
    classification = truth.classification if truth else (packet.classification if packet else {})
    extractions = list(Extraction.objects.filter(run=run).order_by("segment_index"))
    warnings = [w for e in extractions for w in e.warnings]
    warnings += [e.refused_reason for e in extractions if e.refused_reason]
    if document.quality_message:
        warnings.append(document.quality_message)
    return JsonResponse(
        {
            "id": str(document.pk),
            "type": classification.get("dominant_type_overall"),
            "decision": run.final_decision,
            "review": {
                "status": packet.status if packet else "not_needed",
                "ground_truth_source": truth.source if truth else None,
            },
            "segments": [
                {
                    "start_page": s["start_page"],
                    "end_page": s["end_page"],
                    "type": s["dominant_type"],
                }
                for s in classification.get("segments", [])
            ],
            "fields": [
                {
                    "segment": e.segment_index,
                    "pages": [e.start_page, e.end_page],
                    "doc_type": e.doc_type,
                    "status": e.status,
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
    )


@login_not_required
@require_GET
def openapi(request: HttpRequest) -> HttpResponse:
    return JsonResponse(openapi_schema())


def openapi_schema() -> dict[str, Any]:
    option_props = {
        "enable_reliability_loop": {
            "type": "boolean",
            "default": True,
            "description": "Run the evaluator-optimizer loop; false "
            "means a single extraction pass.",
        },
        "quality_threshold": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "Stop the loop at this score (default 0.95).",
        },
        "max_iterations": {"type": "integer", "minimum": 1, "maximum": 10},
        "preset": {"type": "string", "enum": list(PRESETS)},
        "type_override": {
            "type": "string",
            "enum": [t.value for t in DOC_TYPES],
            "description": "Extract with this type's template.",
        },
    }
    err = {
        "description": "Error",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    doc_id = [
        {
            "name": "document_id",
            "in": "path",
            "required": True,
            "schema": {"type": "string", "format": "uuid"},
        }
    ]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Vetted API",
            "version": "1.0.0",
            "description": "Submit clinical documents, poll, and fetch the verified "
            "classification and extracted fields.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {"error": {"type": "string"}},
                },
                "Options": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": option_props,
                },
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/api/v1/documents/": {
                "post": {
                    "summary": "Submit a document (PDF or text) with processing options",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "multipart/form-data": {
                                "schema": {
                                    "type": "object",
                                    "required": ["file"],
                                    "properties": {
                                        "file": {"type": "string", "format": "binary"},
                                        "options": {
                                            "type": "string",
                                            "description": "JSON object of Options (or send each "
                                            "option as its own form field)",
                                        },
                                        **option_props,
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "202": {"description": "Accepted; poll status_url"},
                        "400": err,
                        "401": err,
                        "409": err,
                    },
                }
            },
            "/api/v1/documents/{document_id}/": {
                "get": {
                    "summary": "Processing status",
                    "parameters": doc_id,
                    "responses": {
                        "200": {
                            "description": "uploaded, ingesting, classifying, completed or failed"
                        },
                        "401": err,
                        "404": err,
                    },
                }
            },
            "/api/v1/documents/{document_id}/result/": {
                "get": {
                    "summary": "Type, segments, fields and loop metadata",
                    "parameters": [
                        *doc_id,
                        {"name": "history", "in": "query", "schema": {"type": "boolean"}},
                    ],
                    "responses": {
                        "200": {"description": "The result"},
                        "401": err,
                        "404": err,
                        "409": err,
                    },
                }
            },
        },
    }
