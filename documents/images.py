"""Page images: a PDF page rendered to PNG. Pure (no Django).

Evidence is not painted into the image: the review pages draw it over the image from the
page's word boxes (documents.boxes), so one cached image serves every packet and highlight.
"""

from __future__ import annotations

import io

import pdfplumber


def render_page_png(data: bytes, number: int, *, dpi: int) -> bytes:
    """Page ``number`` (1-based) of a PDF as PNG at ``dpi``."""
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        page = pdf.pages[number - 1]
        image = page.to_image(resolution=dpi)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return buffer.getvalue()
