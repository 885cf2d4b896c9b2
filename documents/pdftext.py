"""Characters, text lines and ruling strokes of a PDF page, read with PDFium through
pypdfium2's public API (``pypdfium2`` and its raw module ``pypdfium2.raw``). Pure (no Django).

A character is one entry of PDFium's text page: its text, its box in top-left page
coordinates with the page rotation applied (PDFium's loose box: the glyph's advance across
the font's height, turned with the glyph; an upright glyph's box is as tall as its font size,
standing on the font's descent, the height documents.pages' paragraph rules were written
for), whether it is upright, and its index on the text page. The index is the way back to
everything PDFium knows of the glyph: its text object (FPDFText_GetTextObject: render mode,
fill colour, font), its font size, its exact box.

Characters are grouped into words and lines by pdfplumber's rules (``extract_text_lines``
with its default tolerances), which documents.pages was built on. Where PDFium sees a word
gap (it generates a space there), the word ends too.

What PDFium's text page leaves out, this reader does not see either: a text object repeating
the one before it (fake bold drawn two or three times), and content a tagged PDF replaces by
its /ActualText or marks as an artifact.
"""

from __future__ import annotations

import ctypes
import itertools
import operator
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

X_TOLERANCE = 3.0  # pdfplumber's defaults
Y_TOLERANCE = 3.0

# pdfplumber expands these ligatures when it writes text; so do we.
LIGATURES = {
    "\ufb00": "ff",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb06": "st",
    "\ufb05": "st",
}

_LIGATURE_TABLE = str.maketrans(LIGATURES)

# PDFium's marks for a hyphen that ends a line; the text has "-" there.
_HYPHEN_MARKS = "\x02\ufffe"
_LINE_BREAKS = "\r\n\x00"


class Char(NamedTuple):
    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    upright: bool
    char_index: int  # on PDFium's text page: FPDFText_GetTextObject(textpage, char_index)


# Char(...) without the generated __new__ in between: one is made per glyph.
_new_char = tuple.__new__

Word = tuple[str, float, float, float, float]  # text, x0, top, x1, bottom in points


@dataclass(frozen=True)
class Line:
    text: str
    x0: float
    top: float
    bottom: float
    words: tuple[Word, ...] = ()

    @property
    def height(self) -> float:
        return max(self.bottom - self.top, 0.1)


@dataclass(frozen=True)
class PageGeometry:
    """The page box as pdfplumber reports it: ``bbox`` (x0, top, x1, bottom), width, height."""

    bbox: tuple[float, float, float, float]
    width: float
    height: float


def page_geometry(page: pdfium.PdfPage) -> PageGeometry:
    x0, y0, x1, y1 = page.get_mediabox()
    x0, x1 = sorted((x0, x1))
    y0, y1 = sorted((y0, y1))
    if page.get_rotation() % 180 == 90:
        x0, y0, x1, y1 = y0, x0, y1, x1
    height = y1 - y0
    bbox = (x0, height - y1, x1, height - y0)
    return PageGeometry(bbox=bbox, width=bbox[2] - bbox[0], height=bbox[3] - bbox[1])


Matrix = tuple[float, float, float, float, float, float]


def _page_transform(page: pdfium.PdfPage) -> Matrix:
    """PDF space to the rotated page, y up, from the media box's corner (pdfminer's page
    matrix, so that boxes land where pdfplumber puts them)."""
    x0, y0, x1, y1 = page.get_mediabox()
    rotation = page.get_rotation() % 360
    if rotation == 90:
        return (0.0, -1.0, 1.0, 0.0, -y0, x1)
    if rotation == 180:
        return (-1.0, 0.0, 0.0, -1.0, x1, y1)
    if rotation == 270:
        return (0.0, 1.0, -1.0, 0.0, y1, -x0)
    return (1.0, 0.0, 0.0, 1.0, -x0, -y0)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _page_text(raw: Any, count: int) -> str | list[str]:
    """The text page's characters, one item per character index: the whole page in one
    call, or one call per character when the page has characters beyond the Basic
    Multilingual Plane. PDFium may keep such a character as two UTF-16 units at two
    indexes: it is then whole at the first and the second is empty."""
    buffer = (ctypes.c_ushort * (count + 1))()
    pdfium_c.FPDFText_GetText(raw, 0, count, buffer)
    text = bytes(buffer)[: count * 2].decode("utf-16-le", errors="surrogatepass")
    if len(text) == count and not _SURROGATE.search(text):
        return text
    codes = [pdfium_c.FPDFText_GetUnicode(raw, index) for index in range(count)]
    items: list[str] = []
    for index, code in enumerate(codes):
        following = codes[index + 1] if index + 1 < count else 0
        if 0xD800 <= code < 0xDC00 and 0xDC00 <= following < 0xE000:
            items.append(chr(0x10000 + ((code - 0xD800) << 10) + (following - 0xDC00)))
        elif 0xDC00 <= code < 0xE000 and items and len(items[-1]) == 1 and items[-1] > "\uffff":
            items.append("")  # the second half of the character before
        elif 0xD800 <= code < 0xE000 or code >= 0x110000:
            items.append("\ufffd")
        else:
            items.append(chr(code))
    return items


def page_chars(page: pdfium.PdfPage, textpage: pdfium.PdfTextPage) -> list[Char]:
    """The page's characters in the order PDFium reads them. A space PDFium generates (it
    sees a word gap) is a blank after the character before it; the line breaks it generates
    are left out (lines are found by position). A ligature glyph PDFium spells as several
    letters at one place stays one character, as pdfplumber has it."""
    raw = textpage.raw
    count = pdfium_c.FPDFText_CountChars(raw)
    if count <= 0:
        return []
    geometry = page_geometry(page)
    a, b, c, d, e, f = _page_transform(page)
    # Top-left page coordinates of a point (x, y) in PDF space:
    # x' = a*x + c*y + shift_x, top' = shift_y - (b*x + d*y).
    shift_x = e + geometry.bbox[0]
    shift_y = geometry.height + geometry.bbox[1] - f
    unrotated = (a, b, c, d) == (1.0, 0.0, 0.0, 1.0)
    rect = pdfium_c.FS_RECTF()
    matrix = pdfium_c.FS_MATRIX()
    get_object = pdfium_c.FPDFText_GetTextObject
    get_box = pdfium_c.FPDFText_GetLooseCharBox
    is_generated = pdfium_c.FPDFText_IsGenerated
    address_of = ctypes.addressof
    chars: list[Char] = []
    append = chars.append
    new_char = _new_char
    current = last_address = 0  # the text object being read; the last character's
    upright = plain = True
    size = 0.0
    previous_x0 = previous_top = float("nan")
    for index, text in enumerate(_page_text(raw, count)):
        if not ("!" <= text <= "~"):
            if not text:
                continue
            if text in _HYPHEN_MARKS:
                text = "-"
            elif text in _LINE_BREAKS:
                continue
            elif text.isspace() and is_generated(raw, index):
                # E.g. a word space drawn as a text object of its own, which the text page
                # leaves out, or words set closer than pdfplumber's gap of 3 points.
                if chars:
                    last = chars[-1]
                    append(Char(" ", last.x1, last.top, last.x1, last.bottom, last.upright, index))
                continue
        obj = get_object(raw, index)
        if not obj:
            continue
        address = address_of(obj.contents)
        if address != current:
            current = address
            # The object's matrix (CTM included) in page space decides how to box its glyphs.
            pdfium_c.FPDFText_GetMatrix(raw, index, matrix)
            ma = matrix.a * a + matrix.b * c
            mb = matrix.a * b + matrix.b * d
            mc = matrix.c * a + matrix.d * c
            md = matrix.c * b + matrix.d * d
            upright = ma * md > 0 and mb * mc <= 0
            plain = mb == 0 and mc == 0 and ma > 0 and md > 0
            size = pdfium_c.FPDFText_GetFontSize(raw, index) * md
        get_box(raw, index, rect)
        if unrotated:
            x0, x1 = rect.left + shift_x, rect.right + shift_x
            bottom = shift_y - rect.bottom
            top = bottom - size if plain else shift_y - rect.top
        else:
            x0, top, x1, bottom = _rotated_box(rect, a, b, c, d, shift_x, shift_y)
            if plain:
                top = bottom - size
        if x0 == previous_x0 and top == previous_top and text.isalpha() and chars:
            # One ligature glyph, spelled as its letters at one place: one character.
            last = chars[-1]
            if last.text.isalpha() and address == last_address:
                chars[-1] = last._replace(text=last.text + text)
                continue
        previous_x0, previous_top, last_address = x0, top, address
        append(new_char(Char, (text, x0, top, x1, bottom, upright, index)))
    return chars


def _rotated_box(
    rect: Any, a: float, b: float, c: float, d: float, shift_x: float, shift_y: float
) -> tuple[float, float, float, float]:
    """A box in PDF space, in top-left coordinates of a page turned by a multiple of 90
    degrees (``a, b, c, d``: the turn)."""
    xs = (a * rect.left + c * rect.bottom, a * rect.right + c * rect.top)
    ys = (b * rect.left + d * rect.bottom, b * rect.right + d * rect.top)
    return min(xs) + shift_x, shift_y - max(ys), max(xs) + shift_x, shift_y - min(ys)


Rule = tuple[float, float, float, float]  # x0, top, x1, bottom: x0 == x1 or top == bottom


def page_rules(page: pdfium.PdfPage) -> list[Rule]:
    """The horizontal and vertical straight strokes of the page's vector paths (each side
    of a rectangle, each straight segment of a path; form XObjects included), in top-left
    page coordinates: what a ruled table is drawn with."""
    geometry = page_geometry(page)
    a, b, c, d, e, f = _page_transform(page)
    # PDF space to top-left page coordinates (as for characters, see page_chars).
    to_page = (a, -b, c, -d, e + geometry.bbox[0], geometry.height + geometry.bbox[1] - f)
    rules: list[Rule] = []
    _collect_rules(page.raw, None, to_page, rules)
    return rules


def _collect_rules(page_raw: Any, form: Any, outer: Matrix, rules: list[Rule]) -> None:
    """Every straight segment of the path objects below ``form`` (the page when None) that
    is horizontal or vertical once ``outer`` and the objects' own matrices are applied."""
    if form is None:
        count = pdfium_c.FPDFPage_CountObjects(page_raw)
    else:
        count = pdfium_c.FPDFFormObj_CountObjects(form)
    matrix = pdfium_c.FS_MATRIX()
    x, y = ctypes.c_float(), ctypes.c_float()
    for index in range(count):
        if form is None:
            obj = pdfium_c.FPDFPage_GetObject(page_raw, index)
        else:
            obj = pdfium_c.FPDFFormObj_GetObject(form, index)
        kind = pdfium_c.FPDFPageObj_GetType(obj)
        if kind not in (pdfium_c.FPDF_PAGEOBJ_PATH, pdfium_c.FPDF_PAGEOBJ_FORM):
            continue
        if not pdfium_c.FPDFPageObj_GetMatrix(obj, matrix):
            continue
        ma, mb, mc, md, me, mf = _compose(
            (matrix.a, matrix.b, matrix.c, matrix.d, matrix.e, matrix.f), outer
        )
        if kind == pdfium_c.FPDF_PAGEOBJ_FORM:
            _collect_rules(page_raw, obj, (ma, mb, mc, md, me, mf), rules)
            continue
        start = last = None  # the subpath's first point, the current point
        for number in range(pdfium_c.FPDFPath_CountSegments(obj)):
            segment = pdfium_c.FPDFPath_GetPathSegment(obj, number)
            if not pdfium_c.FPDFPathSegment_GetPoint(segment, x, y):
                continue
            point = (ma * x.value + mc * y.value + me, mb * x.value + md * y.value + mf)
            kind_of = pdfium_c.FPDFPathSegment_GetType(segment)
            if kind_of == pdfium_c.FPDF_SEGMENT_LINETO and last is not None:
                _add_rule(last, point, rules)
            elif kind_of == pdfium_c.FPDF_SEGMENT_MOVETO:
                start = point
            last = point
            if pdfium_c.FPDFPathSegment_GetClose(segment) and start is not None:
                _add_rule(point, start, rules)
                last = start


def _add_rule(p: tuple[float, float], q: tuple[float, float], rules: list[Rule]) -> None:
    if p[0] == q[0] or p[1] == q[1]:
        rules.append((min(p[0], q[0]), min(p[1], q[1]), max(p[0], q[0]), max(p[1], q[1])))


def _compose(inner: Matrix, outer: Matrix) -> Matrix:
    """The matrix applying ``inner`` then ``outer`` (PDF row-vector convention)."""
    a1, b1, c1, d1, e1, f1 = inner
    a2, b2, c2, d2, e2, f2 = outer
    return (
        a1 * a2 + b1 * c2,
        a1 * b2 + b1 * d2,
        c1 * a2 + d1 * c2,
        c1 * b2 + d1 * d2,
        e1 * a2 + f1 * c2 + e2,
        e1 * b2 + f1 * d2 + f2,
    )


def text_pages(data: bytes) -> Iterator[tuple[pdfium.PdfPage, pdfium.PdfTextPage]]:
    """Each page of a PDF with its PDFium text page, both closed when the caller moves on."""
    document = pdfium.PdfDocument(data)
    try:
        for index in range(len(document)):
            page = document[index]
            textpage = page.get_textpage()
            try:
                yield page, textpage
            finally:
                textpage.close()
                page.close()
    finally:
        document.close()


def page_lines(page: pdfium.PdfPage, textpage: pdfium.PdfTextPage) -> list[Line]:
    return text_lines(page_chars(page, textpage))


# -- pdfplumber's word and line rules -------------------------------------------------------


def _cluster(values: list[float], tolerance: float) -> dict[float, int]:
    """pdfplumber's cluster_list/make_cluster_dict: sorted values chained within tolerance."""
    clusters: dict[float, int] = {}
    group = -1
    last: float | None = None
    for value in sorted(set(values)):
        if last is None or value > last + tolerance:
            group += 1
        clusters[value] = group
        last = value
    return clusters


# Char fields by position, for sorting and grouping at C speed.
_UPRIGHT = operator.itemgetter(5)
_UPRIGHT_ORDER = operator.itemgetter(1)  # x0
_TURNED_ORDER = operator.itemgetter(2, 4)  # top, bottom


def _words(chars: list[Char]) -> list[list[Char]]:
    """pdfplumber's WordExtractor with default settings: runs of upright chars, lines by
    clustered tops, chars left to right, a blank or a gap ending a word. Runs of turned chars
    are read the other way: lines by clustered x0, chars top to bottom."""
    words: list[list[Char]] = []
    for upright, group in itertools.groupby(chars, key=_UPRIGHT):
        run = list(group)
        keys = [ch.top if upright else ch.x0 for ch in run]
        clusters = _cluster(keys, Y_TOLERANCE if upright else X_TOLERANCE)
        lines: dict[int, list[Char]] = {}
        for ch, key in zip(run, keys, strict=True):
            lines.setdefault(clusters[key], []).append(ch)
        for line_id in sorted(lines):
            order = _UPRIGHT_ORDER if upright else _TURNED_ORDER
            words.extend(_line_words(sorted(lines[line_id], key=order), upright=upright))
    return words


# Where a word runs along its line (start, end) and where it sits across it, as Char fields,
# and the tolerance each way: upright words run along x, turned words along the page's height.
_UPRIGHT_AXES = (1, 3, 2, X_TOLERANCE, Y_TOLERANCE)  # x0, x1, top
_TURNED_AXES = (2, 4, 1, Y_TOLERANCE, X_TOLERANCE)  # top, bottom, x0


def _line_words(line: list[Char], *, upright: bool) -> list[list[Char]]:
    """The words of one line, sorted along it (upright: by x0; turned: top to bottom): a
    blank, a step back, a gap wider than the tolerance or a move across the line ends a
    word."""
    start, end, across, along_tolerance, across_tolerance = (
        _UPRIGHT_AXES if upright else _TURNED_AXES
    )
    words: list[list[Char]] = []
    # Any: a Char's fields are read by position (the axis), which mypy cannot type.
    current: list[Any] = []
    for ch in cast("list[Any]", line):
        if ch.text.isspace():
            if current:
                words.append(current)
            current = []
        elif current and (
            ch[start] < current[-1][start]
            or ch[start] > current[-1][end] + along_tolerance
            or abs(ch[across] - current[-1][across]) > across_tolerance
        ):
            words.append(current)
            current = [ch]
        else:
            current.append(ch)
    if current:
        words.append(current)
    return words


def text_lines(chars: list[Char]) -> list[Line]:
    """pdfplumber's ``extract_text_lines(strip=True)`` on these chars: words clustered into
    lines by their tops (order kept), joined by one space, ligatures expanded. Each line also
    has its words with their boxes (points)."""
    boxed: list[Word] = []
    for word in _words(chars):
        texts, x0s, tops, x1s, bottoms, _upright, _index = zip(*word, strict=True)
        text = "".join(texts).translate(_LIGATURE_TABLE)
        boxed.append((text, min(x0s), min(tops), max(x1s), max(bottoms)))
    clusters = _cluster([box[2] for box in boxed], Y_TOLERANCE)
    lines: list[Line] = []
    for _line_id, group in itertools.groupby(boxed, key=lambda box: clusters[box[2]]):
        words = tuple(group)
        texts, x0s, tops, _x1s, bottoms = zip(*words, strict=True)
        text = " ".join(texts).strip(" ")
        if text:
            lines.append(
                Line(text=text, x0=min(x0s), top=min(tops), bottom=max(bottoms), words=words)
            )
    return lines
