"""Page images: a PDF page rendered to PNG with chosen snippets highlighted. Pure (no Django)."""

from __future__ import annotations

import io
import re

import pdfplumber


def render_page_png(data: bytes, number: int, *, dpi: int, highlights: list[str]) -> bytes:
    """Page ``number`` (1-based) of a PDF as PNG, each snippet's words boxed in yellow."""
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        page = pdf.pages[number - 1]
        image = page.to_image(resolution=dpi)
        for snippet in highlights:
            words = [re.escape(w) for w in snippet.split()]
            if not words:
                continue
            for hit in page.search(r"\s*".join(words), regex=True, case=False):
                image.draw_rect(
                    (hit["x0"] - 1, hit["top"] - 1, hit["x1"] + 1, hit["bottom"] + 1),
                    fill=(255, 213, 0, 90),
                    stroke=(230, 160, 0),
                    stroke_width=2,
                )
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return buffer.getvalue()
