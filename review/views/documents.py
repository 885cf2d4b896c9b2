"""The document list (the landing page) and a document's page: what became of each document,
its run, its packet and its ground truth, as far as the user may see them
(review.visibility: nothing of a label under a blind check the user takes no part in)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render

from core.http import HtmxHttpRequest, require_permission
from documents.models import Document
from engine.schemas import DISPLAY_NAMES
from review import selectors
from review.visibility import label_view

PAGE_SIZE = 50
RUN_WORKING = {"pending", "running"}
OUTCOME_LABELS = {
    "AUTO_ACCEPTED": "Auto-accepted",
    "SME_VALIDATED": "Validated",
    "SME_CORRECTED": "Corrected",
}


def _outcome(doc: Document) -> dict[str, Any]:
    """What became of a document, in words, for its row in the list (from the annotations of
    selectors.documents_with_outcome)."""
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
    elif a["blind"]:
        # Under a blind check this user takes no part in: no type, no source, no decider.
        outcome.update(type="", label="Being checked", css="outcome-checking")
    elif run_status == "pending":
        outcome.update(label="Waiting to classify", css="status-uploaded")
    elif run_status == "running":
        outcome.update(label="Classifying…", css="status-ingesting")
    elif run_status == "failed":
        outcome.update(label="Classification failed", css="status-failed")
    elif source and source != "WITHDRAWN":
        outcome.update(label=OUTCOME_LABELS.get(source, source), css=f"outcome-{source}")
        if a["truth_state"] == "provisional":
            outcome["label"] += " (provisional)"
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
    return render(
        request,
        template,
        {
            "document": document,
            "labels": view,
            "pages": document.pages.defer("boxes") if full else [],
            "runs": list(document.runs.all()[:20]) if full else None,
            "truth": selectors.current_ground_truth(document) if full and view.everything else None,
            "packet": document.packets.order_by("-created_at").first() if full else None,
        },
    )
