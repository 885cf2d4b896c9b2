"""The PDF reader (documents.pdftext): characters, words, lines and ruling strokes of a page,
read through pypdfium2's public API, on drawn pages and on hostile ones."""

from __future__ import annotations

import io
import os
from typing import Any

import pdfplumber
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pytest

from benchmarks import hostile
from benchmarks.hostile import raw_pdf
from benchmarks.pdfgen import text_pdf
from documents import pages as reader
from documents import pdftext
from tests.documents.conftest import PATHOLOGY_PAGES, drawn_pdf


def _read(data: bytes, number: int = 1) -> tuple[list[pdftext.Char], list[pdftext.Line]]:
    document = pdfium.PdfDocument(data)
    try:
        page = document[number - 1]
        textpage = page.get_textpage()
        chars = pdftext.page_chars(page, textpage)
        return chars, pdftext.text_lines(chars)
    finally:
        document.close()


def _plumber_lines(data: bytes, number: int = 1) -> list[str]:
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        return [line["text"] for line in pdf.pages[number - 1].extract_text_lines(strip=True)]


def _one_font_pdf(content: bytes, font: bytes = hostile._FONT, extra: list[bytes] | None = None):
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
            b" /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
            hostile._stream(content),
            font,
            *(extra or []),
        ]
    )


# -- what pdfplumber reads, line for line ----------------------------------------------------


def _italic_upside_down_and_columns(pdf: Any) -> None:
    pdf.setFont("Helvetica", 11)
    pdf.drawString(72, 720, "Specimen received in formalin, labelled with the name.")
    pdf.saveState()
    pdf.translate(72, 650)
    pdf.skew(0, 15)  # a synthetic italic: sheared glyphs
    pdf.drawString(0, 0, "Sheared italic line of text")
    pdf.restoreState()
    pdf.saveState()
    pdf.translate(300, 500)
    pdf.rotate(180)  # upside down: upright to pdfplumber, so read right to left
    pdf.drawString(0, 0, "Upside down")
    pdf.restoreState()
    pdf.setFont("Times-Roman", 9)
    pdf.drawString(72, 400, "Gap    wide     enough to split words and a final-")
    pdf.drawString(310, 400, "second column at the same height")


def _mirrored_and_sideways(pdf: Any) -> None:
    pdf.setFont("Helvetica", 11)
    pdf.drawString(72, 720, "An ordinary line.")
    pdf.saveState()
    pdf.translate(300, 200)
    pdf.scale(-1, 1)  # mirrored: not upright, read top to bottom
    pdf.drawString(0, 0, "Mirrored text")
    pdf.restoreState()
    pdf.saveState()
    pdf.translate(500, 300)
    pdf.rotate(90)
    pdf.drawString(0, 0, "Printed sideways")
    pdf.restoreState()


def _two_columns(pdf: Any) -> None:
    pdf.setFont("Helvetica", 10)
    for line in range(3):
        pdf.drawString(72, 700 - 12 * line, f"Left column line {line}")
        pdf.drawString(320, 700 - 12 * line, f"Right column line {line}")
    pdf.drawString(320, 640, "Only the right column here")


def _rotated_page(rotation: int) -> bytes:
    def page(pdf: Any) -> None:
        pdf.setPageRotation(rotation)
        pdf.setFont("Helvetica", 11)
        for line in range(4):
            pdf.drawString(72, 700 - 14 * line, f"Line {line} of a turned page.")

    return drawn_pdf(page)


SCENES = {
    "pathology report": lambda: text_pdf(PATHOLOGY_PAGES),
    "ruled table": lambda: text_pdf([["RESULTS TABLE"]], table_on_page=1),
    "italic, upside down, two columns": lambda: drawn_pdf(_italic_upside_down_and_columns),
    "mirrored and sideways": lambda: drawn_pdf(_mirrored_and_sideways),
    "two columns": lambda: drawn_pdf(_two_columns),
    "page turned 90": lambda: _rotated_page(90),
    "page turned 180": lambda: _rotated_page(180),
}


@pytest.mark.parametrize("scene", SCENES)
def test_lines_are_pdfplumbers_on_drawn_pages(scene):
    data = SCENES[scene]()
    _chars, lines = _read(data)
    assert lines, "nothing read"
    assert [line.text for line in lines] == _plumber_lines(data)


def test_two_columns_at_one_height_are_one_line_left_to_right():
    _chars, lines = _read(drawn_pdf(_two_columns))
    assert [line.text for line in lines] == [
        "Left column line 0 Right column line 0",
        "Left column line 1 Right column line 1",
        "Left column line 2 Right column line 2",
        "Only the right column here",
    ]
    assert lines[3].x0 == pytest.approx(320)


def test_mirrored_and_sideways_text_is_kept_and_only_it_is_not_upright():
    chars, lines = _read(drawn_pdf(_mirrored_and_sideways))
    assert lines[0].text == "An ordinary line."
    turned = [ch.text for ch in chars if not ch.upright and not ch.text.isspace()]
    assert sorted(turned) == sorted("MirroredtextPrintedsideways")
    letters = "".join(line.text for line in lines[1:]).replace(" ", "")
    assert sorted(letters) == sorted(turned)  # every turned glyph is in a line


# -- boxes -------------------------------------------------------------------------------


def test_every_glyph_is_inside_its_character_box_and_every_word_box_holds_its_characters():
    data = text_pdf(PATHOLOGY_PAGES)
    document = pdfium.PdfDocument(data)
    try:
        page = document[1]  # a heading, a paragraph and list items
        textpage = page.get_textpage()
        chars = pdftext.page_chars(page, textpage)
        height = page.get_height()
        letters = [ch for ch in chars if not ch.text.isspace()]
        for ch in letters:
            left, bottom, right, top = textpage.get_charbox(ch.char_index)  # the glyph's ink
            assert ch.x0 - 0.5 <= left <= right <= ch.x1 + 0.5, ch
            assert ch.top - 0.5 <= height - top <= height - bottom <= ch.bottom + 0.5, ch
        lines = pdftext.text_lines(chars)
        for line in lines:
            assert [word[0] for word in line.words] == line.text.split()
            for text, x0, top, x1, bottom in line.words:
                held = [c for c in letters if x0 <= c.x0 and c.x1 <= x1 and top <= c.top]
                held = [c for c in held if c.bottom <= bottom]
                assert "".join(c.text for c in held) == text
    finally:
        document.close()
    [content] = reader.extract_pdf(text_pdf([PATHOLOGY_PAGES[1]]), ocr=None)
    assert [content.text[start:end] for start, end, *_box in content.boxes] == (
        content.text.split()
    )


def test_an_upright_box_is_as_tall_as_the_font_size_and_as_wide_as_the_advance():
    def page(pdf: Any) -> None:
        pdf.setFont("Helvetica", 11)
        pdf.drawString(72, 720, "Plain")
        pdf.saveState()
        pdf.translate(72, 600)
        pdf.scale(2, 2)
        pdf.drawString(0, 0, "Scaled")
        pdf.restoreState()
        text = pdf.beginText(72, 500)
        text.setFont("Helvetica", 11)
        text.setHorizScale(50)
        text.textLine("Squeezed")
        pdf.drawText(text)

    chars, _lines = _read(drawn_pdf(page))
    first = {ch.text + str(round(ch.bottom)): ch for ch in chars}
    plain, scaled, squeezed = first["P74"], first["S197"], first["S294"]
    assert plain.bottom - plain.top == pytest.approx(11)
    assert scaled.bottom - scaled.top == pytest.approx(22)
    assert squeezed.bottom - squeezed.top == pytest.approx(11)
    # Helvetica's S is 667/1000 em wide.
    assert scaled.x1 - scaled.x0 == pytest.approx(2 * 11 * 0.667, abs=0.01)
    assert squeezed.x1 - squeezed.x0 == pytest.approx(0.5 * 11 * 0.667, abs=0.01)


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_the_page_box_is_pdfplumbers_with_the_rotation_applied(rotation):
    data = _rotated_page(rotation)
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        page = pdf.pages[0]
        expected = (page.bbox, page.width, page.height)
    document = pdfium.PdfDocument(data)
    try:
        geometry = pdftext.page_geometry(document[0])
    finally:
        document.close()
    assert (geometry.bbox, geometry.width, geometry.height) == expected
    # reportlab draws the turned pages on a landscape media box: turned, it is a letter page.
    assert (geometry.width, geometry.height) == (612, 792)


# -- characters -----------------------------------------------------------------------------


def test_a_ligature_character_is_written_out_as_its_letters():
    import reportlab
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    vera = os.path.join(os.path.dirname(reportlab.__file__), "fonts", "Vera.ttf")
    pdfmetrics.registerFont(TTFont("Vera", vera))

    def page(pdf: Any) -> None:
        pdf.setFont("Vera", 12)
        pdf.drawString(72, 700, "The \ufb01nal \ufb02ow of \ufb01les")

    data = drawn_pdf(page)
    chars, lines = _read(data)
    # PDFium spells the ligature glyphs out; each stays one character, as pdfplumber has it.
    assert [ch.text for ch in chars if len(ch.text) > 1] == ["fi", "fl", "fi"]
    assert [line.text for line in lines] == ["The final flow of files"] == _plumber_lines(data)


def test_a_ligature_glyph_pdfium_spells_as_two_letters_stays_one_character():
    # The font maps code A to "fi" (ToUnicode): one glyph, two letters at one place.
    cmap = (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /L def\n"
        b"1 begincodespacerange <00> <FF> endcodespacerange\n"
        b"1 beginbfchar <41> <00660069> endbfchar endcmap\n"
        b"CMapName currentdict /CMap defineresource pop end end"
    )
    data = _one_font_pdf(
        b"BT /F1 12 Tf 72 700 Td (ProAle) Tj ET",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
        [hostile._stream(cmap)],
    )
    chars, lines = _read(data)
    assert [ch.text for ch in chars] == ["P", "r", "o", "fi", "l", "e"]
    ligature = chars[3]
    assert ligature.x1 - ligature.x0 == pytest.approx(12 * 0.667, abs=0.01)  # Helvetica's A
    assert chars[4].x0 == pytest.approx(ligature.x1, abs=0.01)
    assert [line.text for line in lines] == ["Profile"] == _plumber_lines(data)


def test_a_character_beyond_the_basic_multilingual_plane_is_one_character():
    cmap = (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /E def\n"
        b"1 begincodespacerange <00> <FF> endcodespacerange\n"
        b"1 beginbfchar <42> <D83DDE00> endbfchar endcmap\n"
        b"CMapName currentdict /CMap defineresource pop end end"
    )
    data = _one_font_pdf(
        b"BT /F1 12 Tf 72 700 Td (Smile B here) Tj ET",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
        [hostile._stream(cmap)],
    )
    chars, lines = _read(data)
    assert "\U0001f600" in [ch.text for ch in chars]
    assert not any("\ud800" <= ch.text[0] <= "\udfff" for ch in chars)
    assert [line.text for line in lines] == ["Smile \U0001f600 here"] == _plumber_lines(data)


def test_a_word_gap_pdfium_sees_ends_a_word_that_pdfplumbers_3_points_would_join():
    def page(pdf: Any) -> None:
        text = pdf.beginText(72, 380)
        text.setFont("Helvetica", 10)
        # Kerned apart by 2.5 pt (a quarter em: a word space to PDFium) and by 3.5 pt.
        text._code.append("[(Gap) -250 (ped) -350 (words)] TJ")
        pdf.drawText(text)
        pdf.setFont("Helvetica", 11)
        pdf.drawString(72, 300, "kerning")
        pdf.drawString(72 + pdf.stringWidth("kerning", "Helvetica", 11) + 1.0, 300, "tight")

    data = drawn_pdf(page)
    chars, lines = _read(data)
    assert _plumber_lines(data) == ["Gapped words", "kerningtight"]
    assert [line.text for line in lines] == ["Gap ped words", "kerningtight"]
    assert all(ch.text not in "\r\n" for ch in chars)  # PDFium's line breaks are not kept


def test_a_hyphen_that_ends_a_line_is_kept():
    def page(pdf: Any) -> None:
        pdf.setFont("Helvetica", 11)
        pdf.drawString(72, 700, "a well-")
        pdf.drawString(72, 686, "known fact")

    _chars, lines = _read(drawn_pdf(page))
    assert [line.text for line in lines] == ["a well-", "known fact"]


def test_each_character_leads_back_to_its_text_object_render_mode_and_font_size():
    # What a check for hidden text will read: invisible (render mode 3), tiny type.
    def page(pdf: Any) -> None:
        pdf.setFont("Helvetica", 11)
        pdf.drawString(72, 700, "Visible words")
        text = pdf.beginText(72, 680)
        text.setFont("Helvetica", 4)
        text.setTextRenderMode(3)
        text.textLine("Invisible instruction")
        pdf.drawText(text)

    document = pdfium.PdfDocument(drawn_pdf(page))
    try:
        page_ = document[0]
        textpage = page_.get_textpage()
        seen = {}
        for ch in pdftext.page_chars(page_, textpage):
            if ch.text.isspace():
                continue
            obj = pdfium_c.FPDFText_GetTextObject(textpage.raw, ch.char_index)
            mode = pdfium_c.FPDFTextObj_GetTextRenderMode(obj)
            size = pdfium_c.FPDFText_GetFontSize(textpage.raw, ch.char_index)
            seen.setdefault((mode, size), []).append(ch.text)
    finally:
        document.close()
    assert {key: "".join(value) for key, value in seen.items()} == {
        (pdfium_c.FPDF_TEXTRENDERMODE_FILL, 11.0): "Visiblewords",
        (pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE, 4.0): "Invisibleinstruction",
    }


# -- ruling strokes and tables ----------------------------------------------------------------


def test_rules_are_the_straight_strokes_where_they_are_drawn_forms_included():
    form = hostile._stream(
        b"0 0 100 20 re S",
        extra=b" /Type /XObject /Subtype /Form /BBox [0 0 200 200] /Matrix [1 0 0 1 50 100]",
    )
    content = (
        b"72 700 m 272 700 l S\n"  # a horizontal line
        b"72 690 m 272 600 l S\n"  # slanted: not a rule
        b"300 700 m 300 750 400 750 400 700 c S\n"  # a curve: not a rule
        b"q 1 0 0 1 10 20 cm /X Do Q"  # a box in a form, moved twice
    )
    data = raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
            b" /Resources << /XObject << /X 5 0 R >> >> /Contents 4 0 R >>",
            hostile._stream(content),
            form,
        ]
    )
    document = pdfium.PdfDocument(data)
    try:
        rules = pdftext.page_rules(document[0])
    finally:
        document.close()
    real = sorted({tuple(round(v, 3) for v in rule) for rule in rules if rule[:2] != rule[2:]})
    # Top-left coordinates: y 700 is 92 pt from the top; the box is at (60, 120) + 100 x 20.
    assert real == [
        (60.0, 652.0, 60.0, 672.0),
        (60.0, 652.0, 160.0, 652.0),
        (60.0, 672.0, 160.0, 672.0),
        (72.0, 92.0, 272.0, 92.0),
        (160.0, 652.0, 160.0, 672.0),
    ]


def test_a_lone_box_is_not_a_table_and_a_ruled_grid_is():
    def page(pdf: Any) -> None:
        pdf.setFont("Helvetica", 11)
        pdf.drawString(80, 700, "Boxed note")
        pdf.rect(72, 690, 200, 24)

    [boxed] = reader.extract_pdf(drawn_pdf(page), ocr=None, min_text_chars=0)
    assert not boxed.has_tables and boxed.block_types == [reader.PARAGRAPH]
    [ruled] = reader.extract_pdf(text_pdf([["RESULTS TABLE"]], table_on_page=1), ocr=None)
    assert ruled.has_tables
    assert ruled.block_types.count(reader.TABLE) == 3


def test_a_table_finder_that_fails_costs_the_table_not_the_page(monkeypatch):
    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("pdfminer cannot parse this file")

    monkeypatch.setattr(reader.pdfplumber, "open", broken)
    [page] = reader.extract_pdf(text_pdf([["RESULTS TABLE"]], table_on_page=1), ocr=None)
    assert not page.has_tables
    assert "KRAS G12D 31%" in page.paragraphs


# -- damaged and hostile files -------------------------------------------------------------


def test_a_damaged_page_fails_the_document_with_its_number():
    data = raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R 6 0 R] /Count 2 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
            b" /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
            hostile._stream(b"BT /F1 12 Tf 72 700 Td (A first page that reads well.) Tj ET"),
            hostile._FONT,
            b"42",  # page 2 is a number, not a page
        ]
    )
    with pytest.raises(reader.UnreadableDocument) as refused:
        reader.extract_pdf(data, ocr=None)
    assert refused.value.message.startswith("Page 2 of the PDF could not be read")


def test_a_page_whose_media_box_refers_to_itself_is_read_without_pdfminer(monkeypatch):
    def no_pdfminer(*args: object, **kwargs: object) -> object:
        raise AssertionError("pdfplumber was asked to open the file")

    monkeypatch.setattr(reader.pdfplumber, "open", no_pdfminer)
    [page] = reader.extract_pdf(hostile.self_referencing_media_box(), ocr=None)
    assert page.paragraphs == ["A page whose MediaBox refers to itself."]


def test_a_dense_page_keeps_every_character_and_groups_it_as_pdfplumber_does():
    data = hostile.many_characters(count=20_000)
    chars, lines = _read(data)
    # 20 lines of "ab ab ... a" (1,000 characters each) in 1-point type, 1.2 points apart:
    # pdfplumber's 3-point tolerance makes them one line.
    assert len([ch for ch in chars if not ch.text.isspace()]) == 20 * 667
    assert sum(len(line.text.replace(" ", "")) for line in lines) == 20 * 667
    assert [line.text for line in lines] == _plumber_lines(data)


def _line(spec: list[tuple[str, float, float]], *, upright: bool) -> list[pdftext.Char]:
    """Chars of one line from (text, start, across) along the reading direction, 5 points
    long: upright, start is x0 and across the top; turned, the two are swapped."""
    chars = []
    for index, (text, start, across) in enumerate(spec):
        if upright:
            chars.append(pdftext.Char(text, start, across, start + 5, across + 10, True, index))
        else:
            chars.append(pdftext.Char(text, across, start, across + 10, start + 5, False, index))
    return chars


def test_a_turned_line_splits_into_words_as_the_same_line_upright_does():
    # A blank, a gap wider than 3 points, a step back and a move across the line end a word.
    spec = [
        ("a", 0, 100),
        ("b", 5, 100),
        (" ", 10, 100),
        ("c", 15, 100),
        ("d", 24, 100),
        ("e", 20, 100),
        ("f", 25, 104),
        ("g", 30, 104),
    ]
    words = {
        upright: [
            "".join(ch.text for ch in word)
            for word in pdftext._line_words(_line(spec, upright=upright), upright=upright)
        ]
        for upright in (True, False)
    }
    assert words[True] == words[False] == ["ab", "c", "d", "e", "fg"]
