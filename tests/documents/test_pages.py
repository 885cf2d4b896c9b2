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


# -- word boxes ----------------------------------------------------------------------------------


def _words(page):
    return [page.text[start:end] for start, end, *_ in page.boxes]


def test_text_layer_pages_keep_a_box_for_every_word_aligned_with_the_text(pathology_pdf):
    first = reader.extract_pdf(pathology_pdf, ocr=None)[0]
    assert _words(first) == first.text.split()  # every word once, in reading order
    assert (first.width, first.height) == (612.0, 792.0)
    for _start, _end, x0, top, x1, bottom in first.boxes:
        assert 0 <= x0 < x1 <= 1 and 0 <= top < bottom <= 1
    # The heading is drawn at 72 pt from the left and the top of a letter page.
    heading = first.boxes[0]
    assert first.text[heading[0] : heading[1]] == "SURGICAL"
    assert heading[2] == pytest.approx(72 / 612, abs=0.002)
    assert heading[3] == pytest.approx(62 / 792, abs=0.02)


def test_ocr_pages_keep_tesseracts_word_boxes_aligned_with_the_text():
    scan = image_pdf(["RADIOLOGY REPORT", "IMPRESSION: No acute cardiopulmonary disease."])
    [page] = reader.extract_pdf(scan, ocr=make_tesseract_engine())
    assert _words(page) == page.text.split()
    first_word = page.boxes[0]
    assert page.text[first_word[0] : first_word[1]] == "RADIOLOGY"
    lines = {round(box[3], 2) for box in page.boxes}
    assert len(lines) >= 2  # two lines of text, two different heights on the page


def test_a_span_of_the_text_maps_to_one_rectangle_per_line():
    from documents.boxes import align_words, span_rects

    text = "Left breast core\nbiopsy: carcinoma"
    words = [
        ("Left", 0.1, 0.1, 0.15, 0.12),
        ("breast", 0.16, 0.1, 0.25, 0.12),
        ("core", 0.26, 0.1, 0.3, 0.12),
        ("biopsy:", 0.1, 0.13, 0.2, 0.15),
        ("carcinoma", 0.21, 0.13, 0.35, 0.15),
        ("missing", 0.5, 0.5, 0.6, 0.6),  # not in the text: left out, never misplaced
    ]
    boxes = align_words(text, words)
    assert [text[a:b] for a, b, *_ in boxes] == text.split()
    start = text.index("breast")
    end = text.index("biopsy") + len("biopsy")
    assert span_rects(boxes, start, end) == [(0.16, 0.1, 0.3, 0.12), (0.1, 0.13, 0.2, 0.15)]
    assert span_rects(boxes, 100, 120) == []
