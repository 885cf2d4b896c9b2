"""What the review pages share: access to a packet, page images, names."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import FileResponse, Http404, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404
from django.utils.html import escape

from core.http import HtmxHttpRequest, require_permission
from documents.models import Document, Page
from documents.services import page_image
from engine.schemas import DISPLAY_NAMES, Severity
from review import selectors, visibility
from review.models import ReviewPacket

SEVERITY_CHOICES = [(s.value, s.value.title()) for s in Severity]


def get_packet_for_reviewer(request: HtmxHttpRequest, packet_id: int) -> ReviewPacket:
    require_permission(request, "review.review_packets")
    return get_object_or_404(
        ReviewPacket.objects.select_related("document", "run", "locked_by"), pk=packet_id
    )


def user_may_adjudicate(user: Any) -> bool:
    return visibility.may_adjudicate(user)


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


def page_png(request: HtmxHttpRequest, document: Document, number: int) -> HttpResponseBase:
    """A PDF page as PNG, at the viewer's size or (``?size=thumb``) the page strip's: drawn
    ahead by the render job, or now (documents.services.page_image). The caller has checked
    the user's access. A page that cannot be drawn is answered 422 and one that another process
    is still drawing after PAGE_IMAGE_WAIT_SECONDS 503 (Retry-After), both with a placeholder
    image that says so and header X-Page-Image ("failed:<code>" or "pending")."""
    if (
        document.mime_type != Document.MIME_PDF
        or not document.file
        or not 1 <= number <= document.page_count
    ):
        raise Http404("No page image for this document.")
    size = "thumb" if request.GET.get("size") == "thumb" else "page"
    try:
        image = page_image(
            document=document, number=number, size=size, wait=settings.PAGE_IMAGE_WAIT_SECONDS
        )
    except FileNotFoundError:
        raise Http404("The document's file is missing.") from None
    if image.name is not None:
        # Patient data: core.middleware.NoStoreMiddleware keeps browsers from storing it.
        try:
            return FileResponse(image.open(), content_type="image/png")
        except FileNotFoundError:  # deleted (documents.retention) since it was found
            raise Http404("No page image for this document.") from None
    return _placeholder(document, number, size=size, error=image.error)


def _placeholder(document: Document, number: int, *, size: str, error: str) -> HttpResponse:
    """A page-sized image saying why the page is not shown (the page's text still is)."""
    width, height = next(
        iter(Page.objects.filter(document=document, number=number).values_list("width", "height")),
        (None, None),
    )
    width, height = round(width or 612), round(height or 792)
    if error:
        lines = [
            f"Page {number} cannot be shown as an image.",
            f"{Page.ImageError(error).label}.",
            "Its text is in the Text view.",
        ]
    else:
        lines = [
            f"Page {number} is still being drawn.",
            "Open the page again in a moment.",
            "Its text is in the Text view.",
        ]
    if size == "thumb":  # too small to read: a sign, with the sentence as its title
        text = (
            f'<text x="50%" y="50%" font-size="{width // 3}" text-anchor="middle" '
            f'dominant-baseline="middle" fill="#666">{"!" if error else "…"}</text>'
        )
    else:
        text = "".join(
            f'<text x="50%" y="{40 + 6 * i}%" font-size="{18 if i else 22}" '
            f'text-anchor="middle" fill="#444">{escape(line)}</text>'
            for i, line in enumerate(lines)
        )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" font-family="sans-serif" role="img">'
        f"<title>{escape(' '.join(lines))}</title>"
        f'<rect width="100%" height="100%" fill="#f3f3f3" stroke="#bbb" stroke-width="2"/>'
        f"{text}</svg>"
    )
    response = HttpResponse(svg, content_type="image/svg+xml", status=422 if error else 503)
    response["X-Page-Image"] = f"failed:{error}" if error else "pending"
    if not error:
        response["Retry-After"] = "2"
    return response


def person_name(user: Any) -> str:
    return (user.get_full_name() or user.username) if user else ""
