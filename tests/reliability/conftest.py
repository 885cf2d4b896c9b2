from __future__ import annotations

import pytest

from reliability.faults import clean_output
from reliability.verifiers.context import DocumentContext

PAGES = [
    "SURGICAL PATHOLOGY REPORT\n\nFINAL DIAGNOSIS\n\nLeft breast, core biopsy: invasive ductal "
    "carcinoma, Nottingham grade 2.",
    "MICROSCOPIC DESCRIPTION\n\nNests of malignant epithelial cells infiltrate a desmoplastic "
    "stroma with lymphovascular invasion.",
]


@pytest.fixture
def pages() -> list[str]:
    return list(PAGES)


@pytest.fixture
def context(pages) -> DocumentContext:
    return DocumentContext(pages=pages, min_dominant_confidence=0.6)


@pytest.fixture
def clean(pages):
    output = clean_output(pages, "pathology")
    assert output is not None
    return output
