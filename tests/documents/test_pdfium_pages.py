"""The PDFium reader's pages against pdfplumber reading the same file alone (the reader it
replaced; benchmarks compare_ingestion.plumber_pages): the same paragraphs, block types,
sizes and word places on ordinary pages, and where they part, the reader's reading."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pdfplumber
import pypdfium2 as pdfium
import pytest
from django.core.management import call_command

from benchmarks.management.commands.compare_ingestion import plumber_pages
from benchmarks.pdfgen import image_pdf, long_text_pdf, text_pdf
from documents import pages as reader
from documents.boxes import fraction
from documents.ocr import make_tesseract_engine
from documents.pdftext import page_rules
from tests.documents.conftest import PATHOLOGY_PAGES, drawn_pdf


def _both(data: bytes) -> tuple[list[reader.PageContent], list[reader.PageContent]]:
    return plumber_pages(data), reader.extract_pdf(data, ocr=None)


def _plumber_word_boxes(data: bytes) -> list[list[tuple[float, ...]]]:
    """pdfplumber's word boxes of every page, in page fractions (documents.boxes.fraction:
    off the page is its edge), in reading order."""
    found = []
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        for page in pdf.pages:
            words = sorted(page.extract_words(), key=lambda w: (round(w["top"], 1), w["x0"]))
            found.append(
                [
                    tuple(
                        fraction(w[edge] - origin, size)
                        for edge, origin, size in (
                            ("x0", page.bbox[0], page.width),
                            ("top", page.bbox[1], page.height),
                            ("x1", page.bbox[0], page.width),
                            ("bottom", page.bbox[1], page.height),
                        )
                    )
                    for w in words
                ]
            )
    return found


def test_pdfium_gives_the_same_paragraphs_block_types_and_sizes(pathology_pdf):
    old, new = _both(pathology_pdf)
    assert [p.paragraphs for p in new] == [p.paragraphs for p in old]
    assert [p.block_types for p in new] == [p.block_types for p in old]
    assert [(p.width, p.height) for p in new] == [(p.width, p.height) for p in old]
    assert new[0].paragraphs[0] == PATHOLOGY_PAGES[0][0]
    assert reader.LIST_ITEM in new[1].block_types


def test_pdfium_word_boxes_match_pdfplumbers_within_a_hundredth_of_the_page(pathology_pdf):
    new = reader.extract_pdf(pathology_pdf, ocr=None)
    for page, plumber_boxes in zip(new, _plumber_word_boxes(pathology_pdf), strict=True):
        assert len(page.boxes) == len(plumber_boxes) == len(page.text.split())
        for box, expected in zip(page.boxes, plumber_boxes, strict=True):
            assert box[2:] == pytest.approx(list(expected), abs=0.01)


def test_pdfium_finds_the_ruled_table_with_pdfplumber_on_that_page_only():
    pdf = text_pdf([["GENOMIC FINDINGS"], ["RESULTS TABLE"]], table_on_page=2)
    first, second = reader.extract_pdf(pdf, ocr=None)
    assert not first.has_tables
    assert second.has_tables
    assert second.block_types[second.paragraphs.index("KRAS G12D 31%")] == reader.TABLE


def test_pdfium_finds_the_table_from_its_own_path_edges_as_pdfplumber_does(monkeypatch):
    pdf = text_pdf([["RESULTS TABLE"]], table_on_page=1)
    with pdfplumber.open(io.BytesIO(pdf)) as plumber:
        [expected] = [table.bbox for table in plumber.pages[0].find_tables()]

    def no_layout(self: object) -> object:
        raise AssertionError("pdfminer was asked to lay out the page")

    # pdfplumber only gets the strokes PDFium read: it never parses the page's content.
    monkeypatch.setattr(pdfplumber.page.Page, "objects", property(no_layout))
    tables = reader._Tables(pdf)
    document = pdfium.PdfDocument(pdf)
    try:
        [found] = tables.boxes(1, page_rules(document[0]))
    finally:
        document.close()
        tables.close()
    assert found == pytest.approx(expected, abs=0.01)
    [page] = reader.extract_pdf(pdf, ocr=None)
    assert page.has_tables
    assert page.block_types[page.paragraphs.index("KRAS G12D 31%")] == reader.TABLE


def test_a_page_with_glyphs_drawn_over_themselves_is_read_once_where_pdfminer_reads_each():
    def fake_bold(pdf: Any) -> None:
        pdf.setFont("Helvetica", 11)
        pdf.drawString(72, 720, "Ordering physician and the usual text below.")
        text = pdf.beginText(72, 700)
        text.setFont("Helvetica", 9)
        # Each letter three times, 0.18 pt apart: O (778) and K (667) in Helvetica.
        text._code.append("[(O) 798 (O) 738 (O) 20 (K) 687 (K) 627 (K)] TJ")
        pdf.drawText(text)

    old, new = _both(drawn_pdf(fake_bold))
    assert old[0].paragraphs[-1] == "OOOKKK"  # pdfminer keeps every copy of the glyph
    assert new[0].paragraphs == [*old[0].paragraphs[:-1], "OK"]  # a reader sees "OK"


def test_pdfium_reads_a_turned_watermark_in_a_standard_font_as_pdfminer_does():
    def watermark(pdf: Any) -> None:
        pdf.setFont("Helvetica", 11)
        for line in range(8):
            pdf.drawString(72, 700 - 14 * line, f"Line {line} of the report with some words.")
        pdf.saveState()
        pdf.translate(150, 400)
        pdf.rotate(45)
        pdf.setFont("Helvetica", 30)
        pdf.drawString(0, 0, "SAMPLE REPORT")
        pdf.restoreState()
        pdf.saveState()
        pdf.translate(500, 300)
        pdf.rotate(90)
        pdf.setFont("Helvetica", 10)
        pdf.drawString(0, 0, "Printed sideways")
        pdf.restoreState()

    old, new = _both(drawn_pdf(watermark))
    assert [p.paragraphs for p in new] == [p.paragraphs for p in old]


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_pdfium_reads_rotated_pages_and_upside_down_or_mirrored_text_as_pdfminer(rotation):
    def page(pdf: Any) -> None:
        pdf.setPageRotation(rotation)
        pdf.setFont("Helvetica", 11)
        # Within the media box whichever way it is turned (reportlab turns a 90 or 270 page
        # by giving it a landscape media box, 612 pt high): text above it is off the page.
        for line in range(6):
            pdf.drawString(72, 550 - 14 * line, f"Line {line} of a page with words.")
        pdf.saveState()
        pdf.translate(300, 300)
        pdf.rotate(180)
        pdf.drawString(0, 0, "Upside down text")
        pdf.restoreState()
        pdf.saveState()
        pdf.translate(300, 200)
        pdf.scale(-1, 1)
        pdf.drawString(0, 0, "Mirrored text")
        pdf.restoreState()

    data = drawn_pdf(page)
    old, new = _both(data)
    assert [p.paragraphs for p in new] == [p.paragraphs for p in old]
    # Every word is where pdfplumber puts it, on the turned page too.
    plumber = _plumber_word_boxes(data)[0]
    assert len(new[0].boxes) == len(plumber) == len(new[0].text.split()) >= 42
    for box in new[0].boxes:
        assert any(box[2:] == pytest.approx(list(other), abs=0.01) for other in plumber)


def test_pdfium_reads_a_long_report_the_same_way():
    old, new = _both(long_text_pdf(3))
    assert [p.text for p in new] == [p.text for p in old]


def test_pdfium_sends_an_image_only_page_to_ocr():
    scan = image_pdf(["RADIOLOGY REPORT", "IMPRESSION: No acute cardiopulmonary disease."])
    [page] = reader.extract_pdf(scan, ocr=make_tesseract_engine())
    assert page.method == reader.OCR
    assert "RADIOLOGY REPORT" in page.paragraphs
    assert page.boxes


def test_pdfium_refuses_a_damaged_file_and_a_password_with_the_usual_message():
    with pytest.raises(reader.UnreadableDocument, match="damaged or protected"):
        reader.extract_pdf(b"%PDF-1.7 not really", ocr=None)
    locked = text_pdf([["SECRET"]], password="s3cret")
    with pytest.raises(reader.UnreadableDocument, match="damaged or protected"):
        reader.extract_pdf(locked, ocr=None)


def test_compare_ingestion_reports_the_share_of_identical_pages(tmp_path, pathology_pdf):
    (tmp_path / "a.pdf").write_bytes(pathology_pdf)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.pdf").write_bytes(text_pdf([["GENOMIC FINDINGS"]], table_on_page=1))
    out = io.StringIO()
    call_command("compare_ingestion", str(tmp_path), "--json", str(tmp_path / "c.json"), stdout=out)
    text = out.getvalue()
    assert "2 PDF file(s), 4 page(s)" in text
    assert re.search(r"same paragraphs .*: 4/4 = 100\.0%", text)
    figures = json.loads((tmp_path / "c.json").read_text())
    assert figures["same_paragraphs_share"] == 1.0
    assert figures["same_paragraphs_and_block_types"] == 4
    assert figures["v4_grounded_on_pdfium_text"] == figures["v4_grounded_on_pdfplumber_text"]
    assert figures["v4_snippets"] > 0
    assert not any("compiled" in key or "hands_to" in key for key in figures)
