"""Page images: a PDF page rendered to PNG. Pure (no Django).

Evidence is not painted into the image: the review pages draw it over the image from the
page's word boxes (documents.boxes), so one cached image serves every packet and highlight.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Sequence

import pypdfium2 as pdfium
from PIL import Image, ImageChops

# PDFium (pypdfium2) is not thread-safe: two threads rendering at once crash the process. Every
# render in this process takes this lock: OCR rendering in jobs run inline by the web process,
# and page images (rendered in a sandboxed child, where it costs nothing).
PDFIUM_LOCK = threading.RLock()

# The two sizes the review pages show: the viewer's page (settings.PAGE_IMAGE_DPI) and the
# thumbnail in the page strip (a letter page 153 px wide).
THUMBNAIL_DPI = 18


def render_page_pngs(data: bytes, number: int, *, dpis: Sequence[int]) -> list[bytes]:
    """Page ``number`` (1-based) of a PDF as PNG at each of ``dpis``, the file opened once.
    Text and lines are anti-aliased (readable at a thumbnail's 18 dpi)."""
    with PDFIUM_LOCK:
        pdf = pdfium.PdfDocument(data)
        try:
            page = pdf[number - 1]
            try:
                images = [page.render(scale=dpi / 72).to_pil().convert("RGB") for dpi in dpis]
            finally:
                page.close()
        finally:
            pdf.close()
    return [_png(image) for image in images]


def _png(image: Image.Image) -> bytes:
    """PNG of an RGB image; a grey one (most clinical pages: the three bands identical) as
    8-bit grey, the same pixels in half the bytes and half the encoding time."""
    red, green, blue = image.split()
    if ImageChops.difference(red, green).getbbox() is None and (
        ImageChops.difference(red, blue).getbbox() is None
    ):
        image = red
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
