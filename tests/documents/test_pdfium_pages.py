"""The PDFium page reader against the pdfplumber reader it stands in for (issue 13)."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pdfplumber
import pypdfium2 as pdfium
import pytest
from django.core.management import call_command

from benchmarks.management.commands import compare_ingestion
from benchmarks.pdfgen import image_pdf, long_text_pdf, text_pdf
from documents import pages as reader
from documents import pdftext
from documents.ocr import make_tesseract_engine
from documents.pdftext import page_chars, page_table_boxes
from tests.documents.conftest import PATHOLOGY_PAGES, drawn_pdf


@pytest.fixture(autouse=True, params=["compiled loop", "python loop"])
def character_loop(request, monkeypatch):
    """Every test here runs with the compiled character loop (where built) and without it."""
    if request.param == "python loop":
        monkeypatch.setattr(pdftext, "_compiled", None)
    elif not pdftext.compiled_reader():
        pytest.skip("the C loop is not built")
    return request.param


def _both(data: bytes, **kwargs: object) -> tuple[list[reader.PageContent], ...]:
    return tuple(
        reader.extract_pdf(data, ocr=None, reader=name, **kwargs)  # type: ignore[arg-type]
        for name in ("pdfplumber", "pdfium")
    )


def test_pdfium_gives_the_same_paragraphs_block_types_and_sizes(pathology_pdf):
    old, new = _both(pathology_pdf)
    assert [p.paragraphs for p in new] == [p.paragraphs for p in old]
    assert [p.block_types for p in new] == [p.block_types for p in old]
    assert [(p.width, p.height) for p in new] == [(p.width, p.height) for p in old]
    assert new[0].paragraphs[0] == PATHOLOGY_PAGES[0][0]
    assert reader.LIST_ITEM in new[1].block_types


def test_pdfium_word_boxes_match_pdfplumbers_within_a_hundredth_of_the_page(pathology_pdf):
    old, new = _both(pathology_pdf)
    for a, b in zip(old, new, strict=True):
        assert len(a.boxes) == len(b.boxes) == len(a.text.split())
        for box_a, box_b in zip(a.boxes, b.boxes, strict=True):
            assert box_a[:2] == box_b[:2]  # the same characters of the text
            assert box_b[2:] == pytest.approx(box_a[2:], abs=0.01)


def test_pdfium_finds_the_ruled_table_with_pdfplumber_on_that_page_only():
    pdf = text_pdf([["GENOMIC FINDINGS"], ["RESULTS TABLE"]], table_on_page=2)
    first, second = reader.extract_pdf(pdf, ocr=None, reader="pdfium")
    assert not first.has_tables
    assert second.has_tables
    assert second.block_types[second.paragraphs.index("KRAS G12D 31%")] == reader.TABLE


def test_pdfium_finds_the_table_from_its_own_path_edges_as_pdfplumber_does(monkeypatch):
    pdf = text_pdf([["RESULTS TABLE"]], table_on_page=1)
    with pdfplumber.open(io.BytesIO(pdf)) as plumber:
        expected = reader._table_boxes(plumber.pages[0])

    def no_pdfminer(self: object, number: int) -> object:
        raise AssertionError("pdfminer was asked to parse the page")

    monkeypatch.setattr(reader._Plumber, "_page", no_pdfminer)
    document = pdfium.PdfDocument(pdf)
    try:
        [found] = page_table_boxes(document[0])
        assert len(expected) == 1
        assert found == pytest.approx(expected[0], abs=0.01)
    finally:
        document.close()
    [page] = reader.extract_pdf(pdf, ocr=None, reader="pdfium")
    assert page.has_tables
    assert page.block_types[page.paragraphs.index("KRAS G12D 31%")] == reader.TABLE


def test_a_page_with_glyphs_drawn_over_themselves_is_read_as_pdfminer_reads_it():
    def fake_bold(pdf: Any) -> None:
        pdf.setFont("Helvetica", 11)
        pdf.drawString(72, 720, "Ordering physician and the usual text below.")
        text = pdf.beginText(72, 700)
        text.setFont("Helvetica", 9)
        # Each letter three times, 0.18 pt apart: O (778) and K (667) in Helvetica.
        text._code.append("[(O) 798 (O) 738 (O) 20 (K) 687 (K) 627 (K)] TJ")
        pdf.drawText(text)

    data = drawn_pdf(fake_bold)
    document = pdfium.PdfDocument(data)
    try:
        page = document[0]
        assert not page_chars(page, page.get_textpage()).exact  # PDFium keeps one of each
    finally:
        document.close()
    assert compare_ingestion.pages_not_exact(data) == 1
    old, new = _both(data)
    assert "OOOKKK" in old[0].text
    assert [p.paragraphs for p in new] == [p.paragraphs for p in old]


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
        for line in range(6):
            pdf.drawString(72, 700 - 14 * line, f"Line {line} of a page with words.")
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
    assert compare_ingestion.pages_not_exact(data) == 0  # read by PDFium, not handed over
    old, new = _both(data)
    assert [p.paragraphs for p in new] == [p.paragraphs for p in old]
    for box_a, box_b in zip(old[0].boxes, new[0].boxes, strict=True):
        assert box_b == pytest.approx(box_a, abs=0.001)


def test_pdfium_reads_a_long_report_the_same_way():
    old, new = _both(long_text_pdf(3))
    assert [p.text for p in new] == [p.text for p in old]


def test_pdfium_sends_an_image_only_page_to_ocr():
    scan = image_pdf(["RADIOLOGY REPORT", "IMPRESSION: No acute cardiopulmonary disease."])
    [page] = reader.extract_pdf(scan, ocr=make_tesseract_engine(), reader="pdfium")
    assert page.method == reader.OCR
    assert "RADIOLOGY REPORT" in page.paragraphs
    assert page.boxes


def test_pdfium_refuses_a_damaged_file_and_a_password_with_the_usual_message():
    with pytest.raises(reader.UnreadableDocument, match="damaged or protected"):
        reader.extract_pdf(b"%PDF-1.7 not really", ocr=None, reader="pdfium")
    locked = text_pdf([["SECRET"]], password="s3cret")
    with pytest.raises(reader.UnreadableDocument, match="damaged or protected"):
        reader.extract_pdf(locked, ocr=None, reader="pdfium")


def test_an_unknown_reader_is_a_programming_error(pathology_pdf):
    with pytest.raises(ValueError, match="Unknown PDF reader"):
        reader.extract_pdf(pathology_pdf, ocr=None, reader="pdfminer")


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
    assert figures["v4_grounded_on_pdfium_text"] == figures["v4_grounded_on_pdfplumber_text"]
    assert figures["v4_snippets"] > 0
    assert figures["pages_pdfium_reader_hands_to_pdfplumber"] == 0
