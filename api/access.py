"""What a token may read: the documents its user submitted, or every document when its user
may_read_all (the Admins role's permission; staff status alone adds nothing), and where each
stands. Every document read in the API goes through here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.http import HttpRequest

from core.errors import Refused
from documents.models import Document
from reliability.models import Run
from review.models import GroundTruth, ReviewPacket
from review.selectors import current_ground_truth

# The Admins role's permission that opens the whole corpus: the one that exports every
# document's ground truth (review.roles.ROLE_PERMISSIONS), so what a token may read and what
# it may export never part ways.
READ_ALL_PERMISSION = "review.export_ground_truth"


def may_read_all(user: Any) -> bool:
    """Whether the user reads every document, not only the ones it submitted. A role's
    permission decides, never is_staff: staff status is for Django admin."""
    return bool(user.has_perm(READ_ALL_PERMISSION))


def own_document(request: HttpRequest, document_id: UUID) -> Document:
    """A document this token's user may read (see may_read_all); 404 for any other, so an
    id of someone else's document reads like an unknown one."""
    documents = Document.objects.all()
    if not may_read_all(request.user):
        documents = documents.filter(uploaded_by_id=request.user.pk)
    document = documents.filter(pk=document_id).first()
    if document is None:
        raise Refused(status=404, message="No such document for this token.", code="not_found")
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


@dataclass(frozen=True)
class Standing:
    """Where a document's label stands, whatever ran last: its standing ground truth and the
    state of that version, or the open packet it waits in. The run is the one the label (or
    the packet) comes from, not necessarily the latest: a re-run never replaces either."""

    state: str  # final, provisional, awaiting_review or none
    truth: GroundTruth | None
    packet: ReviewPacket | None
    run: Run | None


def document_standing(document: Document) -> Standing:
    truth = current_ground_truth(document)
    open_packet = (
        ReviewPacket.objects.filter(document=document, status__in=ReviewPacket.OPEN_STATUSES)
        .select_related("run")
        .order_by("-created_at")
        .first()
    )
    if truth is not None:
        packet = ReviewPacket.objects.filter(run_id=truth.run_id).first() if truth.run_id else None
        run = truth.run if truth.run_id else latest_run(document)
        return Standing(state=truth.state, truth=truth, packet=packet, run=run)
    if open_packet is not None:
        return Standing(
            state="awaiting_review", truth=None, packet=open_packet, run=open_packet.run
        )
    run = latest_run(document)
    packet = ReviewPacket.objects.filter(run=run).first() if run else None
    return Standing(state="none", truth=None, packet=packet, run=run)
