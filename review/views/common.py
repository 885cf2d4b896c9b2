"""What the review pages share: access to a packet, page images, names."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404

from core.http import HtmxHttpRequest, require_permission
from documents.models import Document
from documents.services import page_image_path
from engine.schemas import DISPLAY_NAMES, Severity
from review import selectors
from review.models import ReviewPacket

SEVERITY_CHOICES = [(s.value, s.value.title()) for s in Severity]


THUMBNAIL_DPI = 18  # a letter page 153 px wide


def get_packet_for_reviewer(request: HtmxHttpRequest, packet_id: int) -> ReviewPacket:
    require_permission(request, "review.review_packets")
    return get_object_or_404(
        ReviewPacket.objects.select_related("document", "run", "locked_by"), pk=packet_id
    )


def user_may_adjudicate(user: Any) -> bool:
    """Admins adjudicate; with ADJUDICATION_BY_REVIEWERS, so may any reviewer (the services
    refuse both reviewers of the decision either way)."""
    return user.has_perm("review.adjudicate_reviews") or (
        settings.ADJUDICATION_BY_REVIEWERS and user.has_perm("review.review_packets")
    )


def type_name(value: str) -> str:
    return DISPLAY_NAMES.get(value, value) if value else ""


def document_context(document: Document, image_url: Any) -> dict[str, Any]:
    has_images = document.mime_type == Document.MIME_PDF and bool(document.file)
    return {
        "document": document,
        "pages": [
            {
                "number": page.number,
                "text": page.text,
                "image": image_url(page.number) if has_images else "",
            }
            for page in selectors.document_pages(document)
        ],
    }


def page_png(request: HtmxHttpRequest, document: Document, number: int) -> FileResponse:
    """A PDF page as PNG; ``?size=thumb`` for the viewer's page strip."""
    if (
        document.mime_type != Document.MIME_PDF
        or not document.file
        or not 1 <= number <= document.page_count
    ):
        raise Http404("No page image for this document.")
    dpi = THUMBNAIL_DPI if request.GET.get("size") == "thumb" else settings.PAGE_IMAGE_DPI
    try:
        path = page_image_path(document=document, number=number, dpi=dpi)
    except FileNotFoundError:
        raise Http404("The document's file is missing.") from None
    response = FileResponse(path.open("rb"), content_type="image/png")
    response["Cache-Control"] = "private, max-age=3600"
    return response


def person_name(user: Any) -> str:
    return (user.get_full_name() or user.username) if user else ""
