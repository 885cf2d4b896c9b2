"""The document list (the landing page) and a document's page: what became of each document,
its run, its packet and its ground truth, as far as the user may see them
(review.visibility: nothing of a label under a blind check the user takes no part in)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from core.http import HtmxHttpRequest, require_permission
from documents.models import Document
from engine.schemas import DISPLAY_NAMES
from review import selectors
from review.views.common import page_png
from review.visibility import label_view

PAGE_SIZE = 50
RUN_WORKING = {"pending", "running"}
OUTCOME_LABELS = {
    "AUTO_ACCEPTED": "Auto-accepted",
    "SME_VALIDATED": "Validated",
    "SME_CORRECTED": "Corrected",
}


def _outcome(doc: Document) -> dict[str, Any]:
    """Where a document stands, in one badge, for its row in the list (from the annotations
    of selectors.documents_with_outcome): being read, classified, waiting for a clinician,
    being checked, or decided. Green only when it is decided; "Ready" (read) alone is not an
    outcome, so it is never shown as one."""
    a = vars(doc)
    type_value = a["truth_type"] or a["packet_type"] or ""
    run_status, source = a["run_status"], a["truth_source"]
    outcome: dict[str, Any] = {
        "type": DISPLAY_NAMES.get(type_value, type_value),
        "type_is_claim": not a["truth_type"] and bool(a["packet_type"]),
        "packet_id": a["packet_id"],
        "working": doc.is_working or run_status in RUN_WORKING,
        "code": doc.status,
        "label": doc.get_status_display(),
        "css": f"status-{doc.status}",
        "detail": "",
    }
    if doc.status == Document.Status.UPLOADED:
        outcome.update(label="Waiting to be read")
    elif doc.status == Document.Status.INGESTING:
        outcome.update(label="Reading…")
    elif doc.status == Document.Status.FAILED:
        outcome.update(label="Could not be read")
    elif a["blind"]:
        # Under a blind check this user takes no part in: no type, no source, no decider.
        outcome.update(type="", code="checking", label="Being checked", css="outcome-checking")
    elif run_status == "pending":
        outcome.update(code="classifying", label="Waiting to classify", css="status-uploaded")
    elif run_status == "running":
        outcome.update(code="classifying", label="Classifying…", css="status-ingesting")
    elif run_status == "waiting":
        outcome.update(code="classifying", label="Waiting for the model", css="status-waiting")
    elif run_status == "failed":
        outcome.update(code="run_failed", label="Classification failed", css="status-failed")
    elif source and source != "WITHDRAWN":
        outcome.update(code=source, label=OUTCOME_LABELS.get(source, source))
        outcome["css"] = f"outcome-{source}"
        if a["truth_state"] == "provisional":
            outcome.update(css="state-provisional", detail="provisional: a check is open")
    elif a["packet_status"] in {"pending", "in_review"}:
        outcome.update(
            code="escalated",
            label="Escalated",
            css="outcome-escalated",
            detail="waiting for a clinician"
            if a["packet_status"] == "pending"
            else "a clinician is reviewing it",
        )
    elif run_status is None:
        outcome.update(code="not_classified", label="Not classified", css="")
    return outcome


@login_required
def document_list(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "documents.view_document")
    status = request.GET.get("status", "")
    search = request.GET.get("q", "")
    page = Paginator(
        selectors.documents_with_outcome(user=request.user, status=status, search=search),
        PAGE_SIZE,
    ).get_page(request.GET.get("page"))
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


@login_required
def document_detail(request: HtmxHttpRequest, document_id: str) -> HttpResponse:
    require_permission(request, "documents.view_document")
    document = get_object_or_404(Document.objects.select_related("uploaded_by"), pk=document_id)
    template = "documents/detail.html"
    if request.htmx:
        template += "#document-status"
    full = not request.htmx
    view = label_view(request.user, document)
    context: dict[str, Any] = {
        "document": document,
        "labels": view,
        "runs": list(document.runs.all()[:20]) if full else None,
        "truth": selectors.current_ground_truth(document) if full and view.everything else None,
        "packet": document.packets.order_by("-created_at").first() if full else None,
        "pages": [],
    }
    if full and document.status == Document.Status.READY:
        # The text in the packet's viewer (page images, thumbnails, zoom, or the text).
        workspace = selectors.document_workspace(document)
        for page in workspace["pages"]:
            page["image"] = reverse("documents:page_image", args=[document.pk, page["number"]])
        context.update(workspace)
    return render(request, template, context)


@login_required
def document_page_image(
    request: HtmxHttpRequest, document_id: str, number: int
) -> HttpResponseBase:
    require_permission(request, "documents.view_document")
    document = get_object_or_404(Document, pk=document_id)
    return page_png(request, document, number)
