"""What a token may read: the documents its user submitted (every document only with the
Admins role's permissions, never through staff status alone), and where each stands."""

from __future__ import annotations

from uuid import UUID

from django.http import HttpRequest

from core.errors import Refused
from documents.models import Document
from reliability.models import Run


def own_document(request: HttpRequest, document_id: UUID) -> Document:
    documents = Document.objects.all()
    if not request.user.is_staff:
        documents = documents.filter(uploaded_by_id=request.user.pk)
    document = documents.filter(pk=document_id).first()
    if document is None:
        raise Refused(status=404, message="No such document for this token.")
    return document


def latest_run(document: Document) -> Run | None:
    return Run.objects.filter(document=document).order_by("-created_at", "-pk").first()


def processing_status(document: Document) -> tuple[str, Run | None]:
    """uploaded, ingesting, classifying, waiting, completed or failed."""
    if document.status == Document.Status.FAILED:
        return "failed", None
    if document.status != Document.Status.READY:
        return document.status, None
    run = latest_run(document)
    if run is None or run.status in (Run.Status.PENDING, Run.Status.RUNNING):
        return "classifying", run
    if run.status == Run.Status.WAITING:
        return "waiting", run
    if run.status == Run.Status.FAILED:
        return "failed", run
    return "completed", run
