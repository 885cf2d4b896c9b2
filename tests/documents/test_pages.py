"""Pages, paragraphs, block types, tables and OCR, from real generated PDFs."""

from __future__ import annotations

import pytest

from benchmarks.pdfgen import image_pdf, text_pdf
from documents import pages as reader
from documents.ocr import make_tesseract_engine
from tests.documents.conftest import PATHOLOGY_PAGES


def test_every_page_is_split_into_paragraphs_in_reading_order(pathology_pdf):
    pages = reader.extract_pdf(pathology_pdf, ocr=None)

    assert [p.number for p in pages] == [1, 2, 3]
    for page, expected in zip(pages, PATHOLOGY_PAGES, strict=True):
        expected_paragraphs = [p for p in expected if not p.startswith("- ")]
        list_items = [line for p in expected if p.startswith("- ") for line in p.split("\n")]
        assert page.paragraphs[-1] == f"Page {page.number} of 3"
        body = page.paragraphs[:-1]
        assert [p for p in body if not p.startswith("- ")] == expected_paragraphs
        assert [p for p in body if p.startswith("- ")] == list_items
        assert page.text == "\n\n".join(page.paragraphs)
        assert page.method == reader.TEXT_LAYER
        assert page.ocr_confidence is None


def test_a_multi_line_paragraph_keeps_its_lines_together(pathology_pdf):
    first = reader.extract_pdf(pathology_pdf, ocr=None)[0]
    assert (
        "Invasive ductal carcinoma, Nottingham grade 2.\nDuctal carcinoma in situ is also present."
        in first.paragraphs
    )


def test_headings_and_list_items_are_typed(pathology_pdf):
    second = reader.extract_pdf(pathology_pdf, ocr=None)[1]
    types = dict(zip(second.paragraphs, second.block_types, strict=True))
    assert types["MICROSCOPIC DESCRIPTION"] == reader.HEADING
    assert types["Nests of malignant cells in a desmoplastic stroma."] == reader.PARAGRAPH
    assert types["- ER positive, 90%."] == reader.LIST_ITEM


def test_a_ruled_table_sets_the_tables_flag_on_its_page_only():
    pdf = text_pdf([["GENOMIC FINDINGS"], ["RESULTS TABLE"]], table_on_page=2)
    first, second = reader.extract_pdf(pdf, ocr=None)
    assert not first.has_tables
    assert second.has_tables
    assert second.block_types[second.paragraphs.index("KRAS G12D 31%")] == reader.TABLE


def test_a_text_file_splits_pages_on_form_feeds_and_paragraphs_on_blank_lines():
    text = (
        "CHIEF COMPLAINT\nCough.\n\nHPI\nTwo weeks of cough.\n\f\nASSESSMENT AND PLAN\n1. Rest.\n\f"
    )
    pages = reader.extract_text_file(text)
    assert [p.paragraphs for p in pages] == [
        ["CHIEF COMPLAINT\nCough.", "HPI\nTwo weeks of cough."],
        ["ASSESSMENT AND PLAN\n1. Rest."],
    ]


def test_an_image_only_page_is_read_by_ocr_with_its_confidence():
    scan = image_pdf(
        [
            "RADIOLOGY REPORT",
            "FINDINGS: The lungs are clear.",
            "IMPRESSION: No acute cardiopulmonary disease.",
        ]
    )
    [page] = reader.extract_pdf(scan, ocr=make_tesseract_engine())

    assert page.method == reader.OCR
    assert page.ocr_confidence is not None and page.ocr_confidence > 0.8
    assert "RADIOLOGY REPORT" in page.paragraphs
    assert "IMPRESSION: No acute cardiopulmonary disease." in page.text
    assert page.ocr_word_count >= 10


def test_without_an_ocr_engine_a_scanned_page_stops_with_a_clear_message():
    with pytest.raises(reader.UnreadableDocument) as error:
        reader.extract_pdf(image_pdf(["SCANNED"]), ocr=None)
    assert error.value.message == (
        "Page 1 is a scanned image and OCR is not available on this server. "
        "Ask an administrator to install tesseract."
    )
