from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import FileResponse, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from core.http import HtmxHttpRequest, require_permission
from documents import services
from documents.forms import UploadForm
from documents.models import Document
from documents.selectors import documents_with_outcome
from documents.validation import UploadRefused
from engine.schemas import DISPLAY_NAMES

PAGE_SIZE = 50


RUN_WORKING = {"pending", "running"}
OUTCOME_LABELS = {
    "AUTO_ACCEPTED": "Auto-accepted",
    "SME_VALIDATED": "Validated",
    "SME_CORRECTED": "Corrected",
}


def _outcome(doc: Document) -> dict[str, Any]:
    """What became of a document, in words, for its row in the list (from the annotations of
    documents_with_outcome)."""
    a = vars(doc)
    type_value = a["truth_type"] or a["packet_type"] or ""
    run_status, source = a["run_status"], a["truth_source"]
    outcome: dict[str, Any] = {
        "type": DISPLAY_NAMES.get(type_value, type_value),
        "type_is_claim": not a["truth_type"] and bool(a["packet_type"]),
        "packet_id": a["packet_id"],
        "working": doc.is_working or run_status in RUN_WORKING,
        "label": "",
        "css": "",
    }
    if doc.is_working:
        pass
    elif run_status == "pending":
        outcome.update(label="Waiting to classify", css="status-uploaded")
    elif run_status == "running":
        outcome.update(label="Classifying…", css="status-ingesting")
    elif run_status == "failed":
        outcome.update(label="Classification failed", css="status-failed")
    elif source and source != "WITHDRAWN":
        outcome.update(label=OUTCOME_LABELS.get(source, source), css=f"outcome-{source}")
    elif a["packet_status"] in {"pending", "in_review"}:
        outcome.update(label="Escalated", css="outcome-escalated")
    elif run_status is None and doc.status == Document.Status.READY:
        outcome.update(label="Not classified")
    return outcome


@login_required
def document_list(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "documents.view_document")
    status = request.GET.get("status", "")
    search = request.GET.get("q", "")
    page = Paginator(documents_with_outcome(status=status, search=search), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    rows = [(doc, _outcome(doc)) for doc in page.object_list]
    filters = request.GET.copy()
    filters.pop("page", None)
    context = {
        "page": page,
        "rows": rows,
        "status": status,
        "q": search,
        "statuses": Document.Status.choices,
        "working": any(outcome["working"] for _, outcome in rows),
        "filters": filters.urlencode(),
        "can_review": request.user.has_perm("review.review_packets"),
    }
    template = "documents/list.html"
    if request.htmx:
        template += "#document-table"
    return render(request, template, context)


def _upload_limits() -> dict[str, int]:
    return {
        "max_mb": settings.UPLOAD_MAX_BYTES // (1024 * 1024),
        "max_pages": settings.UPLOAD_MAX_PAGES,
    }


def _tax_forms() -> bool:
    """A form pack (us_tax) is in force besides the clinical templates."""
    return any(pack != "clinical" for pack in settings.EXTRACTION_PACKS)


@login_required
@require_http_methods(["GET", "POST"])
def document_upload(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "documents.add_document")
    if request.method == "GET":
        form = UploadForm(tax_forms=_tax_forms())
        return render(request, "documents/upload.html", {"form": form, **_upload_limits()})

    form = UploadForm(request.POST, request.FILES, tax_forms=_tax_forms())
    created: list[Document] = []
    if form.is_valid():
        for upload in form.cleaned_data["documents"]:
            try:
                created.append(
                    services.document_upload(
                        upload=upload, user=request.user, options=form.options()
                    )
                )
            except UploadRefused as refused:
                form.add_error("documents", refused.message)
    unqueued = [d for d in created if d.error_code == Document.QUEUE_UNREACHABLE]
    queued = [d for d in created if d not in unqueued]
    if queued:
        names = ", ".join(f"“{doc.original_filename}”" for doc in queued)
        messages.success(request, f"Uploaded {len(queued)} file(s): {names}.")
    if unqueued:
        names = ", ".join(f"“{doc.original_filename}”" for doc in unqueued)
        messages.warning(
            request,
            f"Stored but not queued for reading: {names}. The job queue is unreachable; "
            "the file(s) will be read automatically when it is back.",
        )
    if form.is_valid():  # still valid: nothing was refused
        if request.htmx:
            return HttpResponseClientRedirect(reverse("documents:list"))
        return redirect("documents:list")
    return render(
        request,
        "documents/upload.html",
        {"form": form, "created": created, **_upload_limits()},
        status=400,
    )


@login_required
def document_detail(request: HtmxHttpRequest, document_id: str) -> HttpResponse:
    require_permission(request, "documents.view_document")
    document = get_object_or_404(Document.objects.select_related("uploaded_by"), pk=document_id)
    template = "documents/detail.html"
    if request.htmx:
        template += "#document-status"
    full = not request.htmx
    return render(
        request,
        template,
        {
            "document": document,
            "pages": document.pages.defer("boxes") if full else [],
            # The document's downstream history, through its reverse relations.
            "runs": list(document.runs.all()[:20]) if full else None,
            "truth": document.ground_truth.filter(superseded_by__isnull=True)
            .select_related("reviewer")
            .first()
            if full
            else None,
        },
    )


@login_required
@require_POST
def document_retry_view(request: HtmxHttpRequest, document_id: str) -> HttpResponse:
    require_permission(request, "documents.add_document")
    document = get_object_or_404(Document, pk=document_id)
    if services.document_retry(document=document):
        messages.success(request, f"Ingestion of “{document.original_filename}” restarted.")
    else:
        messages.error(request, "This document is not waiting for a retry.")
    return redirect("documents:detail", document_id=document.pk)


@login_required
def document_file(request: HtmxHttpRequest, document_id: str) -> FileResponse:
    """The original file, shown inline. Exports (FHIR attachments) link here instead of
    carrying the bytes, so reading a document always needs a login and a role."""
    require_permission(request, "documents.view_document")
    document = get_object_or_404(Document, pk=document_id)
    return FileResponse(
        document.file.open("rb"),
        content_type=document.mime_type,
        filename=document.original_filename,
    )
