"""The PDFium reader's compiled character loop (documents/_pdfchars.c) against its Python code,
which stays the reference: the same lines, word boxes and page fractions, bit for bit."""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

from benchmarks.pdfgen import long_text_pdf, text_pdf
from documents import pdftext
from documents.pdftext import (
    Char,
    compiled_reader,
    loops_agree,
    page_chars,
    text_lines,
    text_pages,
)
from tests.documents.conftest import PATHOLOGY_PAGES, drawn_pdf


def _italic_and_upside_down(pdf: Any) -> None:
    pdf.setFont("Helvetica", 11)
    pdf.drawString(72, 720, "Specimen received in formalin, labelled with the name.")
    pdf.saveState()
    pdf.translate(72, 650)
    pdf.skew(0, 15)  # a synthetic italic: sheared glyphs, boxed around their corners
    pdf.drawString(0, 0, "Sheared italic line of text")
    pdf.restoreState()
    pdf.saveState()
    pdf.translate(300, 500)
    pdf.rotate(180)  # upright to pdfminer, but turned
    pdf.drawString(0, 0, "Upside down")
    pdf.restoreState()
    pdf.setFont("Times-Roman", 9)
    pdf.drawString(72, 400, "Gap    wide     enough to split words, tabs\tand a final-")
    pdf.drawString(310, 400, "second column at the same height")
    text = pdf.beginText(72, 380)
    text.setFont("Helvetica", 10)
    # Kerned apart by 2.5 pt (one word: within pdfplumber's 3 pt) and by 3.5 pt (two words).
    text._code.append("[(Gap) -250 (ped) -350 (words)] TJ")
    pdf.drawText(text)


def _mirrored(pdf: Any) -> None:
    pdf.setFont("Helvetica", 11)
    pdf.drawString(72, 720, "An ordinary line.")
    pdf.saveState()
    pdf.translate(300, 200)
    pdf.scale(-1, 1)  # not upright: words read top to bottom, left to the Python code
    pdf.drawString(0, 0, "Mirrored text")
    pdf.restoreState()


DOCUMENTS = {
    "pathology report": lambda: text_pdf(PATHOLOGY_PAGES),
    "ruled table": lambda: text_pdf([["GENOMIC FINDINGS"], ["RESULTS TABLE"]], table_on_page=2),
    "long report": lambda: long_text_pdf(3),
    "italic and upside down": lambda: drawn_pdf(_italic_and_upside_down),
}

needs_compiled = pytest.mark.skipif(not compiled_reader(), reason="the C loop is not built")


def test_the_compiled_loop_is_built_by_the_install():
    # scripts/bootstrap.sh (and so CI) builds it with the machine's C compiler; without it the
    # reader still works, in Python, and bench_ingest says so.
    assert compiled_reader(), "documents/_pdfchars.c was not built: run scripts/bootstrap.sh"


@needs_compiled
@pytest.mark.parametrize("name", DOCUMENTS)
def test_the_compiled_loop_reads_every_page_as_the_python_code(name):
    # Each page is compared while it is open (text_pages closes it when the loop moves on).
    agree = [loops_agree(page, textpage) for page, textpage in text_pages(DOCUMENTS[name]())]
    assert agree and agree == [True] * len(agree)


@needs_compiled
def test_a_page_with_text_that_is_not_upright_is_left_to_the_python_code():
    for page, textpage in text_pages(drawn_pdf(_mirrored)):
        assert pdftext._compiled_lines(pdftext._compiled, page, textpage) is None
        lines, exact = pdftext.page_lines(page, textpage)
        chars, python_exact = page_chars(page, textpage)
        assert (lines, exact) == (text_lines(chars), python_exact)
        assert "An ordinary line." in [line.text for line in lines]


@needs_compiled
def test_blanks_for_word_spaces_drawn_alone_go_where_the_python_code_puts_them(monkeypatch):
    # Word draws some word spaces as text objects PDFium leaves out; each becomes a blank before
    # the next kept object's characters (or after the last). Here two such blanks are added to
    # what the real check finds: one inside the first line, splitting a word, and one at the end.
    real = pdftext._dropped_objects

    def with_blanks(page, textpage, spans, key_of):
        blanks, exact = real(page, textpage, spans, key_of)
        second = list(spans.values())[1][2]  # where the second object's characters start
        first_line = Char(" ", 100.0, 71.0, 100.0, 83.0, True)
        far_below = Char(" ", 300.0, 700.0, 300.0, 712.0, True)
        return [*blanks, (second, first_line), (-1, far_below)], exact

    monkeypatch.setattr(pdftext, "_dropped_objects", with_blanks)
    data = drawn_pdf(_italic_and_upside_down)
    for page, textpage in text_pages(data):
        compiled = pdftext._compiled_lines(pdftext._compiled, page, textpage)
        chars, exact = page_chars(page, textpage)
        assert any(ch.text == " " and ch.x0 == 300.0 for ch in chars)
        assert len(chars) > 100
        assert repr(compiled) == repr((text_lines(chars), exact))  # bit for bit


@needs_compiled
def test_word_fractions_are_the_same_doubles_as_pythons_round_even_at_ties(monkeypatch):
    rng = random.Random(13)
    special = [0.0, -0.0, 1.0, 0.03125, 0.5, 0.00005, 0.99995, float("nan"), float("inf"), -4.0]
    for width, height, left, upper in [(612.0, 792.0, 0.0, 0.0), (595.2756, 841.8898, 12.5, 18.0)]:
        words = []
        for n in range(20_000):
            if n % 3 == 0:  # exact halves of the last kept digit and their neighbours
                values = [left + rng.randrange(0, 20_001) / 20_000 * width for _ in range(4)]
            elif n % 3 == 1:
                values = [rng.uniform(-10.0, width + 10.0) for _ in range(4)]
            else:
                values = [left + rng.choice(special) * width for _ in range(4)]
            words.append(("word", *values))
        compiled = pdftext.word_fractions(words, left, upper, width, height)
        with monkeypatch.context() as python_only:
            python_only.setattr(pdftext, "_compiled", None)
            python = pdftext.word_fractions(words, left, upper, width, height)
        assert [[struct.pack("d", v) for v in box[1:]] for box in compiled] == [
            [struct.pack("d", v) for v in box[1:]] for box in python
        ]
        assert [box[0] for box in compiled] == ["word"] * len(words)


@needs_compiled
def test_the_compiled_loop_refuses_a_missing_text_page():
    with pytest.raises(ValueError, match="no text page"):
        pdftext._compiled.page_lines(0, 1, (1, 0, 0, 1, 0, 0), 0.0, 792.0, float, None)
