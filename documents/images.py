"""Page images: a PDF page rendered to PNG. Pure (no Django).

Evidence is not painted into the image: the review pages draw it over the image from the
page's word boxes (documents.boxes), so one cached image serves every packet and highlight.
"""

from __future__ import annotations

import io
import threading

import pdfplumber

# PDFium (pypdfium2, beneath pdfplumber's rendering) is not thread-safe: two threads rendering
# at once crash the process. Every render in this process takes this lock: page images served
# by a threaded server, and OCR rendering in jobs run inline by the web process.
PDFIUM_LOCK = threading.RLock()


def render_page_png(data: bytes, number: int, *, dpi: int) -> bytes:
    """Page ``number`` (1-based) of a PDF as PNG at ``dpi``."""
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        page = pdf.pages[number - 1]
        with PDFIUM_LOCK:
            image = page.to_image(resolution=dpi)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return buffer.getvalue()
