"""Read what a reader sees (issue 32, part 1): the text layer is checked against the page as a
viewer draws it, so every way of hiding text is one class, not a list. Any generated hiding
method, on any template, at any place, is left out of the page's text and recorded in a kind
that raises V3 hidden_text; pages a reader reads whole (shaded tables, white headings on a
band, a watermark partly under a table, small print) keep all their words."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import hiddengen
from documents import pages as reader
from documents.ocr import make_tesseract_engine, tesseract_available
from engine.document import UNCOUNTED_HIDDEN_KINDS, HiddenText
from engine.verifiers.v3_domain import MIN_HIDDEN_WORDS, hidden_text_issues
from tests.documents.conftest import drawn_pdf

DRAWN_METHODS = [m for m in hiddengen.METHODS if m != "tounicode_lie"]


def counted_words(page: reader.PageContent) -> int:
    return sum(h["words"] for h in page.hidden if h["kind"] not in UNCOUNTED_HIDDEN_KINDS)


def flat(text: str) -> str:
    return " ".join(text.split()).lower()


def assert_left_out_and_raised(case: hiddengen.Case, pages: list[reader.PageContent]) -> None:
    text = flat(" ".join(p.text for p in pages))
    for line in case.hidden:
        # No hidden line reaches the classified text (a stray letter of a sliver may).
        assert flat(line)[:20] not in text, (case.key, line)
    hidden = [
        HiddenText(page=p.number, kind=h["kind"], words=h["words"]) for p in pages for h in p.hidden
    ]
    assert [i.code for i in hidden_text_issues(hidden)] == ["hidden_text"], case.key
    # What the page shows is kept: the template's first lines are in the text.
    for line in hiddengen.TEMPLATES[case.template][1][:2]:
        assert flat(line)[:20] in text, (case.key, line)


@settings(deadline=None)
@given(
    method=st.sampled_from(DRAWN_METHODS),
    template=st.sampled_from(sorted(hiddengen.TEMPLATES)),
    data=st.data(),
)
def test_every_drawn_hiding_method_is_left_out_and_raises_hidden_text(
    method: str, template: str, data: Any
) -> None:
    variant = data.draw(st.integers(0, hiddengen.METHODS[method] - 1), label="variant")
    position = data.draw(st.sampled_from([0, 1, 3, 99]), label="position")
    label = hiddengen.TEMPLATES[template][0]
    target = data.draw(st.sampled_from([t for t in hiddengen.HIDDEN_LINES if t != label]))
    case = hiddengen.Case("t", template, label, target, method, variant, position)
    assert_left_out_and_raised(case, reader.extract_pdf(case.pdf(), ocr=None))


@pytest.mark.slow
@pytest.mark.skipif(not tesseract_available(), reason="tesseract is not installed")
@pytest.mark.parametrize("variant", [0, 1])
def test_a_font_whose_tounicode_map_lies_is_misread_and_left_out(variant: int) -> None:
    case = hiddengen.Case("t", "chest_ct", "radiology", "pathology", "tounicode_lie", variant, 3)
    pages = reader.extract_pdf(case.pdf(), ocr=make_tesseract_engine())
    assert_left_out_and_raised(case, pages)
    assert any(h["kind"] == "misread" for h in pages[0].hidden)


@pytest.mark.slow
@pytest.mark.skipif(not tesseract_available(), reason="tesseract is not installed")
def test_honest_fonts_read_by_ocr_are_kept() -> None:
    # The same page without hidden lines: Helvetica and an honest embedded font read as
    # their text layer says.
    from benchmarks.pdfgen import text_pdf

    [page] = reader.extract_pdf(
        text_pdf([list(hiddengen.TEMPLATES["surgical_pathology"][1])]),
        ocr=make_tesseract_engine(),
    )
    assert page.hidden == []
    assert "FINAL DIAGNOSIS" in page.text


def dev_like_page(pdf: Any) -> None:
    """What real reports draw and a reader reads whole."""
    pdf.setFillColorRGB(0.2, 0.4, 0.7)  # a heading band, white on blue
    pdf.rect(60, 730, 490, 22, fill=1, stroke=0)
    pdf.setFillColorRGB(1, 1, 1)
    pdf.setFont("Helvetica-Bold", 12)
    pdf.drawString(72, 736, "GENOMIC FINDINGS AND BIOMARKERS")
    pdf.setFillColorRGB(0.5, 0.5, 0.5)  # a light watermark under the table, partly covered
    pdf.saveState()
    pdf.translate(300, 500)
    pdf.rotate(40)
    pdf.setFont("Helvetica", 48)
    pdf.setFillAlpha(0.3)
    pdf.drawCentredString(0, 0, "SAMPLE REPORT")
    pdf.restoreState()
    for row in range(8):  # a table with shaded rows drawn after the watermark
        y = 680 - row * 18
        if row % 2 == 0:
            pdf.setFillColorRGB(0.93, 0.95, 0.98)
            pdf.rect(60, y - 5, 490, 18, fill=1, stroke=0)
        pdf.setFillColorRGB(0, 0, 0)
        pdf.setFont("Helvetica", 10)
        pdf.drawString(72, y, f"Biomarker {row + 1}  EGFR exon {row + 18} deletion detected")
        pdf.line(60, y - 5, 550, y - 5)
    pdf.setFont("Helvetica", 6)  # small print
    pdf.drawString(72, 60, "This test was developed and its performance determined by the lab.")
    pdf.setFont("Times-Italic", 9)
    pdf.drawString(72, 80, "Electronically signed by the laboratory director")


def test_a_page_a_reader_reads_whole_keeps_every_word_and_raises_nothing() -> None:
    [page] = reader.extract_pdf(drawn_pdf(dev_like_page), ocr=None)
    assert counted_words(page) == 0, page.hidden
    for expected in (
        "GENOMIC FINDINGS AND BIOMARKERS",
        "Biomarker 8 EGFR exon 25 deletion detected",
        "performance determined by the lab",
        "signed by the laboratory director",
    ):
        assert expected in " ".join(page.text.split()), expected


def test_words_cut_off_on_a_line_the_page_shows_are_left_out_but_not_counted() -> None:
    def clipped_cell(pdf: Any) -> None:
        pdf.setFont("Helvetica", 10)
        pdf.drawString(72, 680, "A second line anyone reads in full")
        pdf.drawString(340, 700, "Next cell")
        # A spreadsheet cell: its text runs on past the cell's border, which clips it.
        pdf.saveState()
        cell = pdf.beginPath()
        cell.rect(70, 695, 170, 16)
        pdf.clipPath(cell, stroke=0, fill=0)
        pdf.drawString(72, 700, "Test name  Wisconsin Physicians Service  Policies and limits")
        pdf.restoreState()

    [page] = reader.extract_pdf(drawn_pdf(clipped_cell), ocr=None)
    assert "limits" not in page.text
    assert "Test name" in page.text
    assert {h["kind"] for h in page.hidden} <= {"partly_shown"}
    hidden = [HiddenText(page=1, kind=h["kind"], words=h["words"]) for h in page.hidden]
    assert sum(h.words for h in hidden) >= MIN_HIDDEN_WORDS
    assert hidden_text_issues(hidden) == []


def test_misread_and_not_shown_words_raise_hidden_text() -> None:
    for kind in ("not_shown", "misread"):
        issues = hidden_text_issues([HiddenText(page=2, kind=kind, words=MIN_HIDDEN_WORDS)])
        assert [(i.code, i.location) for i in issues] == [("hidden_text", "pages[2]")]
