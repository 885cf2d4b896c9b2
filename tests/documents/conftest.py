from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest

from benchmarks.pdfgen import text_pdf

PATHOLOGY_PAGES = [
    [
        "SURGICAL PATHOLOGY REPORT",
        "Specimen: left breast, core needle biopsy.",
        "FINAL DIAGNOSIS",
        "Invasive ductal carcinoma, Nottingham grade 2.\nDuctal carcinoma in situ is also present.",
    ],
    [
        "MICROSCOPIC DESCRIPTION",
        "Nests of malignant cells in a desmoplastic stroma.",
        "- ER positive, 90%.\n- HER2 negative.",
    ],
    ["ADDENDUM", "Ki-67 proliferation index 18%."],
]


@pytest.fixture
def pathology_pdf() -> bytes:
    return text_pdf(PATHOLOGY_PAGES)


def drawn_pdf(content: Callable[[Any], None]) -> bytes:
    """A one-page letter PDF that ``content(canvas)`` draws with reportlab."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=LETTER, invariant=1)
    content(pdf)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()
