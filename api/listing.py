"""The documents a token may list, a page at a time: newest first, by a cursor that names the
last document seen (its submission time and id), so pages neither skip nor repeat a document
while new ones arrive. Every filter on a label asks review.visibility, so a filter cannot tell a
hidden label by elimination."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db.models import (
    BooleanField,
    Case,
    CharField,
    Exists,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.urls import reverse

from documents.models import Document
from reliability.models import Run
from review.models import GroundTruth, ReviewPacket
from review.visibility import blind_documents, sees_all

# "<microseconds since 1970>_<document id, 32 hex digits>": every string of this shape is a
# cursor the server can follow, so the schema can say exactly what it accepts.
CURSOR_PATTERN = r"^([0-9]{1,16}_[0-9a-f]{32})?$"


@dataclass(frozen=True)
class DocumentFilters:
    status: str | None = None
    decision: str | None = None
    doc_type: str | None = None
    source: str | None = None
    label_state: str | None = None
    submitted_from: date | None = None
    submitted_to: date | None = None

    @property
    def on_labels(self) -> bool:
        return bool(self.doc_type or self.source or self.label_state)


def _cursor(document: Document) -> str:
    micros = int(document.created_at.timestamp() * 1_000_000)
    return f"{micros}_{document.pk.hex}"


def _after(cursor: str) -> Q:
    micros, _, hex_id = cursor.partition("_")
    at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=int(micros))
    return Q(created_at__lt=at) | Q(created_at=at, pk__lt=hex_id)


def _annotated(documents: QuerySet[Document]) -> QuerySet[Any]:
    """Each document with where it stands, in columns a filter can use."""
    latest = Run.objects.filter(document=OuterRef("pk")).order_by("-created_at", "-pk")
    standing = GroundTruth.objects.filter(
        document=OuterRef("pk"), superseded_by__isnull=True
    ).exclude(source=GroundTruth.Source.WITHDRAWN)
    waiting = ReviewPacket.objects.filter(
        document=OuterRef("pk"), status__in=ReviewPacket.OPEN_STATUSES
    )
    documents = documents.annotate(
        run_status=Subquery(latest.values("status")[:1]),
        run_decision=Subquery(latest.values("final_decision")[:1]),
        truth_type=Subquery(standing.values("dominant_type")[:1]),
        truth_source=Subquery(standing.values("source")[:1]),
        truth_state=Subquery(standing.values("state")[:1]),
        truth_version=Subquery(standing.values("version")[:1]),
        awaiting=Exists(waiting),
    )
    ready = Q(status=Document.Status.READY)
    return documents.annotate(
        processing=Case(
            When(~ready, then="status"),
            When(ready & Q(run_status=Run.Status.WAITING), then=Value("waiting")),
            When(ready & Q(run_status=Run.Status.FAILED), then=Value("failed")),
            When(ready & Q(run_status=Run.Status.COMPLETED), then=Value("completed")),
            default=Value("classifying"),
            output_field=CharField(),
        ),
        label=Case(
            When(truth_state__isnull=False, then="truth_state"),
            When(awaiting=True, then=Value("awaiting_review")),
            default=Value("none"),
            output_field=CharField(),
        ),
    )


def documents_page(
    *, user: Any, read_all: bool, cursor: str, limit: int, filters: DocumentFilters
) -> dict[str, Any]:
    mine = Document.objects.all()
    if not read_all:
        mine = mine.filter(uploaded_by_id=user.pk)
    documents = _annotated(mine)
    blind = blind_documents(user)
    if filters.on_labels:
        documents = documents.exclude(blind)
    if filters.status:
        documents = documents.filter(processing=filters.status)
    if filters.decision is not None:
        documents = documents.filter(run_decision=filters.decision)
    if filters.doc_type:
        documents = documents.filter(truth_type=filters.doc_type)
    if filters.source:
        documents = documents.filter(truth_source=filters.source)
    if filters.label_state:
        documents = documents.filter(label=filters.label_state)
    first, last = filters.submitted_from, filters.submitted_to
    if first and last and last < first:  # a range, in either order
        first, last = last, first
    if first:
        documents = documents.filter(created_at__date__gte=first)
    if last:
        documents = documents.filter(created_at__date__lte=last)
    if cursor:
        documents = documents.filter(_after(cursor))
    documents = documents.annotate(
        hidden=Value(False)
        if sees_all(user)
        else Case(When(blind, then=Value(True)), default=Value(False), output_field=BooleanField())
    )
    rows = list(documents.order_by("-created_at", "-pk")[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    return {
        "items": [_item(document) for document in rows],
        "next_cursor": _cursor(rows[-1]) if more and rows else None,
    }


def _item(document: Any) -> dict[str, Any]:
    hidden = bool(document.hidden)
    labelled = document.label in (GroundTruth.State.FINAL, GroundTruth.State.PROVISIONAL)
    return {
        "id": str(document.pk),
        "filename": document.original_filename,
        "status": document.processing,
        "created_at": document.created_at.isoformat(),
        "page_count": document.page_count,
        "decision": document.run_decision or "",
        "label": {"state": "checking"}
        if hidden
        else {
            "state": document.label,
            "source": document.truth_source if labelled else None,
            "version": document.truth_version if labelled else None,
        },
        "type": None if hidden or not labelled else document.truth_type,
        "status_url": reverse("api:status", args=[document.pk]),
        "result_url": reverse("api:result", args=[document.pk]),
    }
