"""Characters and text lines of a PDF page read with PDFium (pypdfium2). Pure (no Django).

PDFium reads a page's text layer about a hundred times faster than pdfminer. This module gives
each character the box pdfplumber would give it (x0/x1 from the glyph's origin and advance,
bottom = baseline + font descent, top = bottom + font size, in top-left page coordinates with
the page rotation applied) and then groups characters into words and lines with pdfplumber's
own rules (``extract_text_lines`` with its default tolerances), so that documents.pages builds
the same paragraphs as when it read pages with pdfplumber. Where PDFium's text page leaves
out glyphs pdfminer keeps (see _with_dropped_objects), the page is marked not exact and
documents.pages reads it with pdfplumber instead.

Per character only two calls cross into PDFium (its text object and its origin, through
cffi); the font size, descent and matrix are read once per text object. Where it is built,
the same loop in C (documents/_pdfchars.c, page_lines) reads the page and groups its lines;
the Python code here stays the reference and reads the pages the C loop leaves to it. Ruled
tables are found by pdfplumber's own table finder on the edges of the paths PDFium reads
(page_table_boxes), without pdfminer's parse of the page.
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NamedTuple

import cffi
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pypdfium2_raw.bindings as pdfium_bindings
from pdfminer.fontmetrics import FONT_METRICS
from pdfplumber.table import TableFinder

X_TOLERANCE = 3.0  # pdfplumber's defaults
Y_TOLERANCE = 3.0

# pdfplumber (pdfminer) expands these ligatures when it writes text.
LIGATURES = {
    "\ufb00": "ff",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb06": "st",
    "\ufb05": "st",
}


class Char(NamedTuple):
    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    upright: bool


# Char(...) without the generated __new__ in between: a character is made per glyph.
_new_char = tuple.__new__


class PageText(NamedTuple):
    chars: list[Char]
    exact: bool  # False: PDFium left out glyphs pdfminer reads; read the page with pdfplumber


# How far (points) a text object may reach left of its first kept glyph's box.
_DROPPED_GLYPH_MARGIN = 0.05


@dataclass(frozen=True)
class Line:
    text: str
    x0: float
    top: float
    bottom: float
    chars: tuple[Any, ...] = ()
    # The line's words, each (text, x0, top, x1, bottom) in points; empty: not known.
    words: tuple[tuple[str, float, float, float, float], ...] = ()

    @property
    def height(self) -> float:
        return max(self.bottom - self.top, 0.1)


@dataclass(frozen=True)
class PageGeometry:
    """The page box as pdfplumber reports it: ``bbox`` (x0, top, x1, bottom), width, height."""

    bbox: tuple[float, float, float, float]
    width: float
    height: float


def page_geometry(page: Any) -> PageGeometry:
    x0, y0, x1, y1 = page.get_mediabox()
    x0, x1 = sorted((x0, x1))
    y0, y1 = sorted((y0, y1))
    rotation = page.get_rotation() % 360
    if rotation in (90, 270):
        x0, y0, x1, y1 = y0, x0, y1, x1
    height = y1 - y0
    bbox = (x0, height - y1, x1, height - y0)
    return PageGeometry(bbox=bbox, width=bbox[2] - bbox[0], height=bbox[3] - bbox[1])


def _page_transform(page: Any) -> tuple[float, float, float, float, float, float]:
    """pdfminer's page matrix (rotation and mediabox origin), as in PDFPageInterpreter."""
    x0, y0, x1, y1 = page.get_mediabox()
    rotation = page.get_rotation() % 360
    if rotation == 90:
        return (0, -1, 1, 0, -y0, x1)
    if rotation == 180:
        return (-1, 0, 0, -1, x1, y1)
    if rotation == 270:
        return (0, 1, -1, 0, y1, -x0)
    return (1, 0, 0, 1, -x0, -y0)


def _function(name: str, restype: Any, *argtypes: Any) -> Any:
    """Our own handle on a PDFium function, so that its result type can differ from the
    one pypdfium2 declares (a raw address compares and hashes without a ctypes.cast)."""
    function = pdfium_bindings._libs["pdfium"][name]
    function.restype = restype
    function.argtypes = argtypes
    return function


# The two calls made for every character go through cffi, whose calls into a C library cost
# about half of what ctypes' do; they reach the library pypdfium2 loaded (same handles).
_FFI = cffi.FFI()
_FFI.cdef(
    """
    void* FPDFText_GetTextObject(void* text_page, int index);
    int FPDFText_GetCharOrigin(void* text_page, int index, double* x, double* y);
    """
)
_PDFIUM = _FFI.dlopen(pdfium_bindings._libs["pdfium"]._name)


def _integer_address(pointer: Any) -> int:
    """A PDFium handle from pypdfium2 (ctypes) as the compiled reader sees it."""
    return ctypes.cast(pointer, ctypes.c_void_p).value or 0


def _address(pointer: Any) -> Any:
    """A PDFium handle from pypdfium2 (ctypes) as cffi sees it; equal to the handles that
    FPDFText_GetTextObject returns for the same object."""
    return _FFI.cast("void *", _integer_address(pointer))


_GET_FONT = _function("FPDFTextObj_GetFont", ctypes.c_void_p, ctypes.c_void_p)
_GET_DESCENT = _function(
    "FPDFFont_GetDescent", ctypes.c_int, ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p
)
_GET_BASE_FONT_NAME = _function(
    "FPDFFont_GetBaseFontName", ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
)
_GET_GLYPH_WIDTH = _function(
    "FPDFFont_GetGlyphWidth",
    ctypes.c_int,
    ctypes.c_void_p,
    ctypes.c_uint32,
    ctypes.c_float,
    ctypes.c_void_p,
)


def _descent(font: Any, value: ctypes.c_float) -> float:
    """The font's descent at size 1, as pdfminer takes it: from its own metrics of the
    standard fonts when the font has such a name (PDFium measures its substitute font), else
    from the font."""
    if not font:
        return 0.0
    size = _GET_BASE_FONT_NAME(font, None, 0)
    if 0 < size <= 256:
        buffer = ctypes.create_string_buffer(size)
        _GET_BASE_FONT_NAME(font, buffer, size)
        metrics = FONT_METRICS.get(buffer.value.decode("latin-1"))
        if metrics is not None:
            descent: Any = metrics[0].get("Descent", 0)
            return -abs(float(descent)) * 0.001
    if _GET_DESCENT(font, 1.0, ctypes.byref(value)):
        return float(value.value)
    return 0.0


# The per-character loop in C (documents/_pdfchars.c), built at install where a C compiler is
# found; it reads upright pages and leaves every other page to page_chars and text_lines.
COMPILED_VERSION = 1  # documents/_pdfchars.c's VERSION that this code calls

_compiled: ModuleType | None = None
try:
    from documents import _pdfchars
except ImportError:  # built without a C compiler: the Python reader alone
    pass
else:
    if getattr(_pdfchars, "VERSION", None) == COMPILED_VERSION:
        _compiled = _pdfchars
    else:
        logging.getLogger(__name__).warning(
            "documents/_pdfchars was built from an older source: pages are read by the Python "
            "code until it is rebuilt (pip install -e .)"
        )
if _compiled is not None:
    _compiled.bind(
        *(
            _integer_address(pdfium_bindings._libs["pdfium"][name])
            for name in (
                "FPDFText_GetText",
                "FPDFText_GetTextObject",
                "FPDFText_GetCharOrigin",
                "FPDFText_GetMatrix",
                "FPDFText_GetFontSize",
                "FPDFTextObj_GetFont",
                "FPDFFont_GetGlyphWidth",
                "FPDFText_GetLooseCharBox",
                "FPDFText_IsGenerated",
            )
        )
    )


def compiled_reader() -> bool:
    """Whether pages are read by the compiled loop (else by the Python code alone)."""
    return _compiled is not None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _all_text(raw: Any, count: int) -> str | None:
    """The page's characters in one call; None when some take two UTF-16 units (then the
    string's indexes are not the characters' and each is read alone)."""
    buffer = ctypes.create_string_buffer((count + 1) * 2)
    pdfium_c.FPDFText_GetText(raw, 0, count, ctypes.cast(buffer, ctypes.POINTER(ctypes.c_ushort)))
    text = buffer.raw[: count * 2].decode("utf-16-le", errors="surrogatepass")
    if len(text) != count or _SURROGATE.search(text):
        return None
    return text


Matrix = tuple[float, float, float, float, float, float]
Point = tuple[float, float]
BBox = tuple[float, float, float, float]


def page_table_boxes(page: Any) -> list[BBox]:
    """pdfplumber's ``find_tables()`` (lines strategy) on the page's ruled lines, read with
    PDFium instead of pdfminer: the same edges (pdfminer's lines, rectangles and curves from
    the painted paths, form XObjects included, in pdfplumber's coordinates) go through
    pdfplumber's own table finder. Like documents.pages, no line and no rectangle: no table.
    """
    shapes: list[tuple[str, list[Point]]] = []
    _collect_shapes(page.raw, None, _page_matrix(page), shapes)
    if not any(kind in ("line", "rect") for kind, _points in shapes):
        return []
    geometry = page_geometry(page)
    left, upper, height = geometry.bbox[0], geometry.bbox[1], geometry.height
    edges: list[dict[str, Any]] = []
    for kind, points in shapes:
        coords = [(x + left, upper + height - y) for x, y in points]
        if kind == "curve":
            edges.extend(_curve_edges(coords))
            continue
        xs, tops = [x for x, _top in coords], [top for _x, top in coords]
        x0, x1, top, bottom = min(xs), max(xs), min(tops), max(tops)
        if kind == "line":
            edges.append(_edge("h" if top == bottom else "v", x0, x1, top, bottom))
        else:
            edges.append(_edge("h", x0, x1, top, top))
            edges.append(_edge("h", x0, x1, bottom, bottom))
            edges.append(_edge("v", x0, x0, top, bottom))
            edges.append(_edge("v", x1, x1, top, bottom))
    finder = TableFinder(_EdgesOnly(edges, geometry.bbox))  # type: ignore[arg-type]
    return [table.bbox for table in finder.tables]


class _EdgesOnly:
    """What pdfplumber's TableFinder reads of a page with the lines strategy."""

    def __init__(self, edges: list[dict[str, Any]], bbox: BBox) -> None:
        self.edges = edges
        self.bbox = bbox


def _edge(orientation: str, x0: float, x1: float, top: float, bottom: float) -> dict[str, Any]:
    return {
        "x0": x0,
        "x1": x1,
        "top": top,
        "bottom": bottom,
        "doctop": top,
        "width": x1 - x0,
        "height": bottom - top,
        "orientation": orientation,
        "object_type": "edge",
    }


def _curve_edges(coords: list[Point]) -> list[dict[str, Any]]:
    """pdfplumber's curve_to_edges: one edge per pair of points; a slanted one has no
    orientation, so the table finder never uses it."""
    edges = []
    for (px, ptop), (qx, qtop) in itertools.pairwise(coords):
        if px == qx:
            orientation = "v"
        elif ptop == qtop:
            orientation = "h"
        else:
            continue
        edges.append(_edge(orientation, min(px, qx), max(px, qx), min(ptop, qtop), max(ptop, qtop)))
    return edges


def _page_matrix(page: Any) -> Matrix:
    a, b, c, d, e, f = _page_transform(page)
    return (float(a), float(b), float(c), float(d), float(e), float(f))


def _collect_shapes(
    page_raw: Any, form: Any, outer: Matrix, shapes: list[tuple[str, list[Point]]]
) -> None:
    """pdfminer's paint_path on every path object: each subpath becomes a line (m l, m l h),
    a rectangle (a closed axis-aligned m l l l h) or a curve (its end points)."""
    if form is None:
        count = pdfium_c.FPDFPage_CountObjects(page_raw)
    else:
        count = pdfium_c.FPDFFormObj_CountObjects(form)
    matrix = pdfium_c.FS_MATRIX()
    x, y = ctypes.c_float(), ctypes.c_float()
    bezier = pdfium_c.FPDF_SEGMENT_BEZIERTO
    moveto = pdfium_c.FPDF_SEGMENT_MOVETO
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
        a, b, c, d, e, f = _compose(
            (matrix.a, matrix.b, matrix.c, matrix.d, matrix.e, matrix.f), outer
        )
        if kind == pdfium_c.FPDF_PAGEOBJ_FORM:
            _collect_shapes(page_raw, obj, (a, b, c, d, e, f), shapes)
            continue
        ops: list[str] = []
        points: list[Point] = []
        pending_bezier = 0
        for number in range(pdfium_c.FPDFPath_CountSegments(obj)):
            segment = pdfium_c.FPDFPath_GetPathSegment(obj, number)
            kind_of = pdfium_c.FPDFPathSegment_GetType(segment)
            if kind_of == bezier:
                pending_bezier += 1
                if pending_bezier < 3:
                    continue  # a control point: pdfminer keeps a curve's end points only
                pending_bezier = 0
            if not pdfium_c.FPDFPathSegment_GetPoint(segment, x, y):
                continue
            point = (a * x.value + c * y.value + e, b * x.value + d * y.value + f)
            if kind_of == moveto:
                if ops:
                    _paint(ops, points, shapes)
                ops, points = ["m"], [point]
            else:
                ops.append("c" if kind_of == bezier else "l")
                points.append(point)
            if pdfium_c.FPDFPathSegment_GetClose(segment) and points:
                ops.append("h")
                points.append(points[0])
        if ops:
            _paint(ops, points, shapes)


def _paint(ops: list[str], points: list[Point], shapes: list[tuple[str, list[Point]]]) -> None:
    shape = "".join(ops)
    if not shape.startswith("m") or len(shape) < 2:
        return
    pts = list(points)
    if len(shape) > 3 and shape[-2:] == "lh" and pts[-2] == pts[0]:
        shape = shape[:-2] + "h"
        pts.pop()
    if shape in ("mlh", "ml"):
        shapes.append(("line", pts[:2]))
        return
    if shape in ("mlllh", "mllll"):
        (x0, y0), (x1, y1), (x2, y2), (x3, y3), _ = pts
        closed = pts[0] == pts[4]
        square = (x0 == x1 and y1 == y2 and x2 == x3 and y3 == y0) or (
            y0 == y1 and x1 == x2 and y2 == y3 and x3 == x0
        )
        if closed and square:
            shapes.append(("rect", [pts[0], pts[2]]))
            return
    shapes.append(("curve", pts))


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


def page_chars(page: Any, textpage: Any) -> PageText:
    """The page's characters in content order, without PDFium's generated spaces and breaks,
    and whether they are all the characters pdfminer would read (see _with_dropped_objects)."""
    raw = textpage.raw
    count = pdfium_c.FPDFText_CountChars(raw)
    if count <= 0:
        return PageText([], True)
    geometry = page_geometry(page)
    a, b, c, d, e, f = _page_transform(page)
    # Page coordinates straight from a glyph origin (ox, oy) in PDF space:
    # x = a*ox + c*oy + left; bottom = base - (b*ox + d*oy) - descent; top = bottom - size.
    left = e + geometry.bbox[0]
    unrotated = (a, b, c, d) == (1, 0, 0, 1)
    base = geometry.height + geometry.bbox[1] - f
    rect = pdfium_c.FS_RECTF()
    matrix = pdfium_c.FS_MATRIX()
    origin = _FFI.new("double[2]")
    origin_x_at, origin_y_at = origin, origin + 1
    descent_value = ctypes.c_float()
    glyph_width = ctypes.c_float()
    width_ref = ctypes.byref(glyph_width)
    raw_address = _address(raw)
    get_object = _PDFIUM.FPDFText_GetTextObject
    get_origin = _PDFIUM.FPDFText_GetCharOrigin
    all_text = _all_text(raw, count)
    get_box = pdfium_c.FPDFText_GetLooseCharBox
    get_unicode = pdfium_c.FPDFText_GetUnicode
    is_generated = pdfium_c.FPDFText_IsGenerated
    chars: list[Char] = []
    append_char = chars.append
    new_char = _new_char
    current_object: Any = None
    size = descent = advance_scale = 0.0
    font: Any = None
    widths: dict[str, float] = {}
    widths_of: dict[Any, dict[str, float]] = {}
    descents: dict[Any, float] = {}
    # Each text object's [first, last] character index on the text page and where its
    # characters start in chars (the shape the compiled loop gives too).
    spans: dict[Any, list[int]] = {}
    span: list[int] = []
    last_kept = 0
    upright = turned = True
    text_matrix = (1.0, 0.0, 0.0, 1.0)
    descent_ratio = 0.0
    last_key: Any = None
    last_ox = last_oy = float("nan")
    texts: Any = all_text
    if texts is None:
        codes = [get_unicode(raw, index) for index in range(count)]
        texts = [chr(code) if code < 0x110000 else "\ufffd" for code in codes]
    for index, text in enumerate(texts):
        if not ("!" <= text <= "~"):
            if text in "\x02\ufffe":
                text = "-"  # PDFium's mark for a hyphen that ends a line: pdfminer keeps "-"
            if text in "\r\n\x00" or (text.isspace() and is_generated(raw, index)):
                continue
        key = get_object(raw_address, index)
        if not key:
            continue
        if key != current_object:
            if current_object is not None:
                span[1] = last_kept
            current_object = key
            span = spans.setdefault(key, [index, index, len(chars)])
            pdfium_c.FPDFText_GetMatrix(raw, index, matrix)
            font_size = pdfium_c.FPDFText_GetFontSize(raw, index)
            # The character's matrix in pdfminer's page space decides size and uprightness.
            ma = matrix.a * a + matrix.b * c
            mb = matrix.a * b + matrix.b * d
            mc = matrix.c * a + matrix.d * c
            md = matrix.c * b + matrix.d * d
            upright = ma * md > 0 and mb * mc <= 0
            scale = (mc * mc + md * md) ** 0.5
            size = font_size * scale
            advance_scale = font_size * (ma * ma + mb * mb) ** 0.5
            font = _GET_FONT(int(_FFI.cast("uintptr_t", key)))
            if font not in descents:
                descents[font] = _descent(font, descent_value)
                widths_of[font] = {}
            widths = widths_of[font]
            descent_ratio = descents[font]
            descent = descent_ratio * size
            # A turned glyph (rotated, upside down or mirrored) is boxed as pdfminer does:
            # the box around the four corners of its (advance x font size) cell.
            turned = not (mb == 0.0 and mc == 0.0 and ma > 0.0 and md > 0.0)
            text_matrix = (ma * font_size, mb * font_size, mc * font_size, md * font_size)
        get_origin(raw_address, index, origin_x_at, origin_y_at)
        ox = origin[0]
        oy = origin[1]
        # The advance width from the font's /Widths, as pdfminer measures a glyph.
        width = widths.get(text)
        if width is None:
            if font and _GET_GLYPH_WIDTH(font, ord(text[0]), 1.0, width_ref):
                width = glyph_width.value
            else:
                get_box(raw, index, rect)
                width = (rect.right - rect.left) / advance_scale if advance_scale else 0.0
            widths[text] = width
        if ox == last_ox and oy == last_oy and key == last_key and text.isalpha():
            # PDFium splits a ligature glyph into its letters at one origin; pdfminer keeps
            # one character whose advance is the glyph's: take the glyph's loose box.
            get_box(raw, index, rect)
            previous = chars[-1]
            chars[-1] = Char(
                previous.text + text,
                previous.x0,
                previous.top,
                max(previous.x1, previous.x0 + (rect.right - rect.left) * abs(a + b)),
                previous.bottom,
                previous.upright,
            )
            last_kept = index
            continue
        last_key, last_ox, last_oy, last_kept = key, ox, oy, index
        if turned:
            x0, y0, x1, y1 = _turned_box(
                a * ox + c * oy + e, b * ox + d * oy + f, text_matrix, width, descent_ratio
            )
            x0 += geometry.bbox[0]
            x1 += geometry.bbox[0]
            append_char(new_char(Char, (text, x0, base + f - y1, x1, base + f - y0, upright)))
        elif unrotated:
            x0 = ox + left
            bottom = base - oy - descent
            append_char(
                new_char(
                    Char, (text, x0, bottom - size, x0 + width * advance_scale, bottom, upright)
                )
            )
        else:
            x0 = a * ox + c * oy + left
            bottom = base - (b * ox + d * oy) - descent
            append_char(
                new_char(
                    Char, (text, x0, bottom - size, x0 + width * advance_scale, bottom, upright)
                )
            )
    if current_object is not None:
        span[1] = last_kept
    return _with_dropped_objects(page, textpage, chars, spans)


Fractions = tuple[str, float, float, float, float]


def word_fractions(
    words: Sequence[tuple[str, float, float, float, float]],
    left: float,
    upper: float,
    width: float,
    height: float,
) -> list[Fractions]:
    """Word boxes in points as fractions of the page (``width`` and ``height`` above 0),
    rounded to 4 places: documents.boxes.fraction on each edge, by the compiled loop where it
    is built (the same doubles, checked bit for bit by the tests)."""
    if _compiled is not None:
        found: list[Fractions] = _compiled.fractions(words, left, upper, width, height)
        return found
    return [
        (
            text,
            round(min(1.0, max(0.0, (x0 - left) / width)), 4),
            round(min(1.0, max(0.0, (top - upper) / height)), 4),
            round(min(1.0, max(0.0, (x1 - left) / width)), 4),
            round(min(1.0, max(0.0, (bottom - upper) / height)), 4),
        )
        for text, x0, top, x1, bottom in words
    ]


def page_lines(page: Any, textpage: Any) -> tuple[list[Line], bool]:
    """``text_lines(page_chars(page, textpage).chars)`` and whether the page is exact: by the
    compiled loop where it reads the page, else by the Python code."""
    if _compiled is not None:
        read = _compiled_lines(_compiled, page, textpage)
        if read is not None:
            return read
    chars, exact = page_chars(page, textpage)
    return text_lines(chars), exact


def text_pages(data: bytes) -> Iterator[tuple[Any, Any]]:
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


def loops_agree(page: Any, textpage: Any, python: PageText | None = None) -> bool | None:
    """Whether the compiled loop reads the page exactly as the Python code does (the same
    lines, word boxes and exactness); None when it is not built or leaves the page to the
    Python code. ``python``: the page's page_chars, when the caller has it. For manage.py
    compare_ingestion and the tests."""
    if _compiled is None:
        return None
    read = _compiled_lines(_compiled, page, textpage)
    if read is None:
        return None
    chars, exact = python or page_chars(page, textpage)
    # By repr, which tells -0.0 from 0.0 and writes each double so that it reads back the same.
    return repr(read) == repr((text_lines(chars), exact))


def _compiled_lines(
    compiled: ModuleType, page: Any, textpage: Any
) -> tuple[list[Line], bool] | None:
    """The compiled loop's lines (page_chars' boxes, text_lines' grouping); None for a page it
    leaves to the Python code: glyphs that are not upright, characters beyond the Basic
    Multilingual Plane, or boxes that are not finite numbers."""
    raw = textpage.raw
    count = pdfium_c.FPDFText_CountChars(raw)
    if count <= 0:
        return [], True
    geometry = page_geometry(page)
    transform = _page_transform(page)
    descent_value = ctypes.c_float()

    def check(
        spans: dict[int, list[int]],
    ) -> tuple[list[tuple[int, float, float, float, float]], bool]:
        blanks, exact = _dropped_objects(page, textpage, spans, _integer_address)
        return [
            (position, blank.x0, blank.top, blank.x1, blank.bottom) for position, blank in blanks
        ], exact

    read = compiled.page_lines(
        _integer_address(raw),
        count,
        transform,
        geometry.bbox[0],
        geometry.height + geometry.bbox[1] - transform[5],
        lambda font: _descent(font, descent_value),
        check,
    )
    if read is None:
        return None
    found, exact = read
    lines = [
        Line(text=text, x0=x0, top=top, bottom=bottom, words=words)
        for text, x0, top, bottom, words in found
    ]
    return lines, exact


def _turned_box(
    px: float,
    py: float,
    matrix: tuple[float, float, float, float],
    width: float,
    descent: float,
) -> tuple[float, float, float, float]:
    """pdfminer's box of a glyph under a rotated or skewed matrix (font size included): the
    bounds of the corners of (0, descent) - (advance, descent + 1) in text space."""
    ma, mb, mc, md = matrix
    xs, ys = [], []
    for u in (0.0, width):
        for v in (descent, descent + 1.0):
            xs.append(px + ma * u + mc * v)
            ys.append(py + mb * u + md * v)
    return min(xs), min(ys), max(xs), max(ys)


def _object_bounds(obj: Any) -> tuple[float, float, float, float]:
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top)
    return left.value, bottom.value, right.value, top.value


def _with_dropped_objects(
    page: Any, textpage: Any, chars: list[Char], spans: Mapping[Any, Sequence[int]]
) -> PageText:
    """The characters with a blank for each word space drawn alone, and whether the page is
    exact (see _dropped_objects)."""
    blanks, exact = _dropped_objects(page, textpage, spans, _address)
    if not blanks:
        return PageText(chars, exact)
    inserts: dict[int, list[Char]] = {}
    for position, blank in blanks:
        inserts.setdefault(position, []).append(blank)
    merged: list[Char] = []
    for position, ch in enumerate(chars):
        merged.extend(inserts.get(position, ()))
        merged.append(ch)
    merged.extend(inserts.get(-1, ()))
    return PageText(merged, exact)


def _dropped_objects(
    page: Any,
    textpage: Any,
    spans: Mapping[Any, Sequence[int]],
    key_of: Callable[[Any], Any],
) -> tuple[list[tuple[int, Char]], bool]:
    """Check the page's text objects against what PDFium's text page kept of them: ``spans``
    holds, by ``key_of(object)``, each kept object's first and last character index and where
    its characters start among the page's characters.

    PDFium's text page leaves out what it takes for repeats: a glyph drawn again over itself
    within 0.07 em (fake bold), and a whole text object repeating a recent one. pdfminer keeps
    every glyph, so such a page is not exact (its characters cannot be recovered here). A
    dropped object with no extent is a word space drawn alone: a blank goes where it was,
    which keeps the words on either side apart, as pdfminer's space character does. Returns
    the blanks, each with the position of the character it goes before (that of the next kept
    object; -1: after the last), and whether the page is exact.
    """
    raw = page.raw
    box = [ctypes.c_double() for _ in range(4)]
    blanks: list[tuple[int, Char]] = []
    pending: list[Char] = []
    exact = True
    for index in range(pdfium_c.FPDFPage_CountObjects(raw)):
        obj = pdfium_c.FPDFPage_GetObject(raw, index)
        if pdfium_c.FPDFPageObj_GetType(obj) != pdfium_c.FPDF_PAGEOBJ_TEXT:
            continue
        key = key_of(obj)
        left, bottom, right, top = _object_bounds(obj)
        span = spans.get(key)
        if span is None:
            if right - left < 0.01 or top - bottom < 0.01:
                pending.append(_blank(page, obj, left, bottom))
            else:
                exact = False
            continue
        blanks.extend((span[2], blank) for blank in pending)
        pending = []
        # A glyph dropped as drawn over the first one shows as object bounds reaching left
        # of the first glyph kept (the last one, when the text runs right to left).
        first, last = span[0], span[1]
        pdfium_c.FPDFText_GetCharBox(textpage.raw, first, *box)
        leftmost = box[0].value
        if last != first:
            pdfium_c.FPDFText_GetCharBox(textpage.raw, last, *box)
            leftmost = min(leftmost, box[0].value)
        if left < leftmost - _DROPPED_GLYPH_MARGIN:
            exact = False
    blanks.extend((-1, blank) for blank in pending)
    return blanks, exact


def _blank(page: Any, obj: Any, x: float, y: float) -> Char:
    """A space character at a text object's origin, boxed as pdfminer would box it."""
    geometry = page_geometry(page)
    a, b, c, d, e, f = _page_transform(page)
    matrix = pdfium_c.FS_MATRIX()
    pdfium_c.FPDFPageObj_GetMatrix(obj, matrix)
    font_size = ctypes.c_float()
    pdfium_c.FPDFTextObj_GetFontSize(obj, font_size)
    size = font_size.value * abs(matrix.d or 1.0)
    px, py = a * x + c * y + e, b * x + d * y + f
    y0, y1 = py - 0.2 * size, py + 0.8 * size
    top = geometry.height - y1 + geometry.bbox[1]
    bottom = geometry.height - y0 + geometry.bbox[1]
    return Char(" ", px + geometry.bbox[0], top, px + geometry.bbox[0], bottom, True)


def _cluster(values: list[float], tolerance: float) -> dict[float, int]:
    """pdfplumber's cluster_list/make_cluster_dict: sorted values chained within tolerance."""
    ordered = sorted(set(values))
    clusters: dict[float, int] = {}
    group = -1
    last: float | None = None
    for value in ordered:
        if last is None or value > last + tolerance:
            group += 1
        clusters[value] = group
        last = value
    return clusters


def _begins_new_word(previous: Char, current: Char) -> bool:
    return (
        current.x0 < previous.x0
        or current.x0 > previous.x1 + X_TOLERANCE
        or abs(current.top - previous.top) > Y_TOLERANCE
    )


def _begins_new_turned_word(previous: Char, current: Char) -> bool:
    """pdfplumber's test for turned text, read top to bottom: tops instead of x."""
    return (
        current.top < previous.top
        or current.top > previous.bottom + Y_TOLERANCE
        or abs(current.x0 - previous.x0) > X_TOLERANCE
    )


def _words(chars: list[Char]) -> list[list[Char]]:
    """pdfplumber's WordExtractor with default settings: runs of upright chars, lines by
    clustered tops, chars left to right, a blank or a gap ending a word. Runs of turned chars
    are read the other way: lines by clustered x0, chars top to bottom."""
    words: list[list[Char]] = []
    for upright, group in itertools.groupby(chars, key=_UPRIGHT):
        run = list(group)
        if upright:
            keys = [ch.top for ch in run]
            clusters = _cluster(keys, Y_TOLERANCE)
            order: Any = _UPRIGHT_ORDER
            begins = _begins_new_word
        else:
            keys = [ch.x0 for ch in run]
            clusters = _cluster(keys, X_TOLERANCE)
            order = _TURNED_ORDER
            begins = _begins_new_turned_word
        lines: dict[int, list[Char]] = {}
        # Characters come in runs on one line: look the line up once per run.
        previous_key: float | None = None
        bucket: list[Char] = []
        for ch, key in zip(run, keys, strict=True):
            if key != previous_key:
                bucket = lines.setdefault(clusters[key], [])
                previous_key = key
            bucket.append(ch)
        for line_id in sorted(lines):
            current: list[Char] = []
            line = sorted(lines[line_id], key=order)
            if upright:
                words.extend(_upright_words(line))
                continue
            for ch in line:
                if ch.text.isspace():
                    if current:
                        words.append(current)
                    current = []
                elif current and begins(current[-1], ch):
                    words.append(current)
                    current = [ch]
                else:
                    current.append(ch)
            if current:
                words.append(current)
    return words


def _upright_words(line: list[Char]) -> list[list[Char]]:
    """The words of one upright line (sorted by x0): _begins_new_word inlined."""
    words: list[list[Char]] = []
    current: list[Char] = []
    previous: Char | None = None
    for ch in line:
        if ch.text.isspace():
            if current:
                words.append(current)
            current = []
            previous = None
        elif previous is not None and (
            ch.x0 < previous.x0
            or ch.x0 > previous.x1 + X_TOLERANCE
            or abs(ch.top - previous.top) > Y_TOLERANCE
        ):
            words.append(current)
            current = [ch]
            previous = ch
        else:
            current.append(ch)
            previous = ch
    if current:
        words.append(current)
    return words


# Char fields by position, for sorting and grouping at C speed.
_UPRIGHT = operator.itemgetter(5)
_UPRIGHT_ORDER = operator.itemgetter(1)  # x0
_TURNED_ORDER = operator.itemgetter(2, 4)  # top, bottom


def text_lines(chars: list[Char]) -> list[Line]:
    """pdfplumber's ``extract_text_lines(strip=True)`` on these chars: words clustered into
    lines by their tops (order kept), joined by one space, ligatures expanded. Each line also
    has its words with their boxes (points)."""
    words = _words(chars)
    if not words:
        return []
    ligatures = LIGATURES
    boxed: list[tuple[str, float, float, float, float]] = []
    for word in words:
        if len(word) == 1:
            ch = word[0]
            boxed.append((ligatures.get(ch.text, ch.text), ch.x0, ch.top, ch.x1, ch.bottom))
            continue
        boxed.append(
            (
                "".join([ligatures.get(ch.text, ch.text) for ch in word]),
                min([ch.x0 for ch in word]),
                min([ch.top for ch in word]),
                max([ch.x1 for ch in word]),
                max([ch.bottom for ch in word]),
            )
        )
    clusters = _cluster([box[2] for box in boxed], Y_TOLERANCE)
    lines: list[Line] = []
    start = 0
    count = len(words)
    while start < count:
        line_id = clusters[boxed[start][2]]
        end = start + 1
        while end < count and clusters[boxed[end][2]] == line_id:
            end += 1
        line_boxes = tuple(boxed[start:end])
        text = " ".join([box[0] for box in line_boxes]).strip(" ")
        if text:
            lines.append(
                Line(
                    text=text,
                    x0=min([box[1] for box in line_boxes]),
                    top=min([box[2] for box in line_boxes]),
                    bottom=max([box[4] for box in line_boxes]),
                    words=line_boxes,
                )
            )
        start = end
    return lines
