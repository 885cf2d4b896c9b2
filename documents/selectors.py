"""Reads for the document pages. What became of a document (its run, its ground truth, its
review packet) is read through the document's reverse relations: documents never imports the
apps downstream of it."""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery

from documents.models import Document


def _downstream(relation: str) -> Any:
    """The model behind one of Document's reverse relations (runs, ground_truth, packets)."""
    return Document._meta.get_field(relation).related_model


def documents_with_outcome(*, status: str = "", search: str = "") -> QuerySet[Document]:
    """Documents, newest first, each annotated in the same query with its latest run's status
    and decision, its current ground truth's type and source, and its latest packet."""
    run = _downstream("runs").objects.filter(document=OuterRef("pk")).order_by("-created_at")
    truth = _downstream("ground_truth").objects.filter(
        document=OuterRef("pk"), superseded_by__isnull=True
    )
    packet = _downstream("packets").objects.filter(document=OuterRef("pk")).order_by("-created_at")
    documents = (
        Document.objects.select_related("uploaded_by")
        .defer("options")
        .annotate(
            run_status=Subquery(run.values("status")[:1]),
            run_decision=Subquery(run.values("final_decision")[:1]),
            truth_type=Subquery(truth.values("dominant_type")[:1]),
            truth_source=Subquery(truth.values("source")[:1]),
            packet_id=Subquery(packet.values("pk")[:1]),
            packet_status=Subquery(packet.values("status")[:1]),
            packet_type=Subquery(packet.values("dominant_type")[:1]),
        )
        .order_by("-created_at")
    )
    if status in Document.Status.values:
        documents = documents.filter(status=status)
    if search.strip():
        documents = documents.filter(original_filename__icontains=search.strip())
    return documents
