from __future__ import annotations

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
