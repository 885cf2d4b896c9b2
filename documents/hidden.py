"""Text a reader of the page cannot see. Pure (no Django).

What the page shows is what is classified: a character PDFium reads from the text layer is
kept only when it is drawn where and how a reader sees it. ``find_hidden`` decides, for every
character of a page, whether it is hidden and why:

* ``render_mode``: drawn invisibly (text render mode 3) or only as a clipping path (mode 7);
* ``outside_crop``: its box lies outside the crop box, the part of the page a viewer shows;
* ``tiny``: drawn smaller than ``TINY_POINTS`` (a glyph no reader can make out);
* ``background``: drawn in the colour of what lies beneath it (white on white, transparent);
* ``under_image``: covered by an image or a filled shape drawn after it.

The first three are read from the text objects (render mode, matrix, font size, place). So is
the colour of text with nothing under it but the white page. Text over an image, under an
image or a filled shape, or over a shape of a colour close to its own, needs the page drawn:
the part of the page around those characters is drawn twice at a low resolution, once as it is
and once with their text objects made invisible; a word whose pixels do not change between the
two is not seen by a reader. Ordinary pages (dark text on white, on light table shading) are
never drawn.

An invisible layer over an image is what a searchable scan is: the OCR text of the scanned
page. Those characters are returned apart (``Found.scan_layer``) for documents.pages to
compare with what OCR reads on the rendered page (``confirmed_lines``): the lines of the layer
that the page does not show are hidden too (``disagrees``).
"""

from __future__ import annotations

import bisect
import ctypes
import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from documents.pdftext import Char, Matrix, PageGeometry, _compose, _page_transform, _words

RENDER_MODE = "render_mode"
OUTSIDE_CROP = "outside_crop"
TINY = "tiny"
BACKGROUND = "background"
UNDER_IMAGE = "under_image"
DISAGREES = "disagrees"
NOT_SHOWN = "not_shown"
PARTLY_SHOWN = "partly_shown"

# The kind codes are the contract with the engine, which words them for people
# (engine.document.HIDDEN_KINDS).

# Smaller than this (points, the glyph's em height or width) no reader makes a glyph out:
# 1.5 pt is about half a millimetre, a third of the smallest print a form uses (4-6 pt).
TINY_POINTS = 1.5
# The drawing compared: 1.5 x 72 dpi keeps a 10 pt stem over a full pixel; a word is seen
# when some pixel of its box changes by MIN_CONTRAST of 255 (8%: a faint watermark, grey at
# half opacity, changes its pixels by 30 to 40; white on the #f5f5f5 of a shaded row, by 10)
# once its text is made invisible.
RENDER_SCALE = 1.5
MIN_CONTRAST = 20
# A line of a scan's text layer is confirmed when at least this share of its words is read
# by OCR at that place; a layer confirmed for less than LAYER_AGREEMENT of its words is not
# the scan's layer at all (the page is read by OCR instead).
LINE_AGREEMENT = 0.5
LAYER_AGREEMENT = 0.5
WORD_SIMILARITY = 75  # rapidfuzz ratio at which an OCR word matches a layer word

# The reading check (``_not_shown``): the page as a viewer draws it (annotations, form
# fields, optional content as displayed, clips, covers, strokes) against the same page
# without its text. A letter or digit is shown when at least MIN_ROWS of the pixel rows of
# its glyph's tight box change: a cover over part of a line's height (a white bar, a thick
# white stroke) leaves slivers no reader reads. Set on the build half of the generated set
# and of the dev PDFs (benchmarks.hiddengen), at 72 dpi (a 10 pt glyph is 7 rows).
READ_SCALE = 1.5
MIN_ROWS = 0.5

_INVISIBLE_MODES = {3, 7}  # FPDF_TEXTRENDERMODE_INVISIBLE, _CLIP
_STROKE_ONLY_MODES = {1, 5}  # painted with the stroke colour
_MAX_BOXES = 200  # boxes kept per kind and page


Box = tuple[float, float, float, float]  # x0, top, x1, bottom in top-left page points


@dataclass
class Found:
    """``hidden``: position in the page's character list -> kind; ``scan_layer``: positions of
    invisible characters drawn over an image (a searchable scan's OCR layer, undecided)."""

    hidden: dict[int, str] = field(default_factory=dict)
    scan_layer: list[int] = field(default_factory=list)
    rendered: bool = False  # whether the page had to be drawn to decide


@dataclass(frozen=True)
class _Object:
    mode: int
    paint: Colour  # the colour its glyphs are painted in, with its opacity
    size: float  # the glyphs' smaller em dimension, points
    order: tuple[int, ...]  # drawing order on the page (forms: their place, then inside)
    handle: Any
    # The images and filled shapes its box overlaps; none (the common case): each of its
    # characters is seen or not by its colour against the white page alone (``faint``).
    covers: tuple[_Cover, ...] = ()
    faint: bool = False
    # Of those: the ones that may hide it, and the others (shapes beneath it, of known
    # colours), each with whether the text is faint on it.
    hiding: tuple[_Cover, ...] = ()
    beneath: tuple[tuple[_Cover, bool], ...] = ()


@dataclass(frozen=True)
class _Cover:
    """An image or a filled shape: ``colour`` None for an image (its pixels are unknown)."""

    box: Box
    order: tuple[int, ...]
    colour: Colour | None = None


Colour = tuple[int, int, int, int]  # r, g, b, alpha (0-255)
WHITE: Colour = (255, 255, 255, 255)


def contrast(paint: Colour, beneath: Colour) -> float:
    """How much ``paint`` changes a pixel of ``beneath`` (0-255): its opacity times the
    largest difference of one channel."""
    return paint[3] / 255 * max(abs(paint[i] - beneath[i]) for i in range(3))


def _hides(cover: _Cover, obj: _Object) -> bool:
    """Whether ``cover`` may hide ``obj`` where they overlap: drawn over it, an image beneath
    it, or a shape beneath it in a colour too close to the text's."""
    if cover.order > obj.order or cover.colour is None:
        return True
    return contrast(obj.paint, cover.colour) < 2 * MIN_CONTRAST


@dataclass(frozen=True)
class _Drawn:
    """A text object as drawn: its order, box and handle; ``plain`` when it is painted, dark
    enough to be seen on white, and at least twice TINY_POINTS (what most text is)."""

    order: tuple[int, ...]
    box: Box
    handle: Any
    plain: bool = False


def _to_top_left(page: pdfium.PdfPage, geometry: PageGeometry) -> Matrix:
    """PDF space to top-left page coordinates, as documents.pdftext boxes characters."""
    a, b, c, d, e, f = _page_transform(page)
    return (a, -b, c, -d, e + geometry.bbox[0], geometry.height + geometry.bbox[1] - f)


def _box_of(left: float, bottom: float, right: float, top: float, matrix: Matrix) -> Box:
    a, b, c, d, e, f = matrix
    xs, ys = [], []
    for x, y in ((left, bottom), (left, top), (right, bottom), (right, top)):
        xs.append(a * x + c * y + e)
        ys.append(b * x + d * y + f)
    return min(xs), min(ys), max(xs), max(ys)


def _objects(page: pdfium.PdfPage, to_page: Matrix) -> tuple[dict[int, _Drawn], list[_Cover]]:
    """Every text object (by address) as drawn, and the images and filled shapes of the page
    with their boxes and order; form XObjects are walked."""
    texts: dict[int, _Drawn] = {}
    covers: list[_Cover] = []
    _walk(page.raw, None, to_page, (), texts, covers)
    return texts, covers


def _walk(
    page_raw: Any,
    form: Any,
    outer: Matrix,
    prefix: tuple[int, ...],
    texts: dict[int, _Drawn],
    covers: list[_Cover],
) -> None:
    count = (
        pdfium_c.FPDFPage_CountObjects(page_raw)
        if form is None
        else pdfium_c.FPDFFormObj_CountObjects(form)
    )
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    matrix = pdfium_c.FS_MATRIX()
    fill_mode, stroke = ctypes.c_int(), ctypes.c_int()
    r, g, b, a = (ctypes.c_uint() for _ in range(4))
    buffers = (r, g, b, a, ctypes.c_float(), pdfium_c.FS_MATRIX())
    for index in range(count):
        obj = (
            pdfium_c.FPDFPage_GetObject(page_raw, index)
            if form is None
            else pdfium_c.FPDFFormObj_GetObject(form, index)
        )
        if not obj:
            continue
        order = (*prefix, index)
        kind = pdfium_c.FPDFPageObj_GetType(obj)
        if kind == pdfium_c.FPDF_PAGEOBJ_TEXT:
            box = (0.0, 0.0, 0.0, 0.0)
            if pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
                box = _box_of(left.value, bottom.value, right.value, top.value, outer)
            texts[ctypes.addressof(obj.contents)] = _Drawn(
                order=order, box=box, handle=obj, plain=_plain(obj, outer, buffers)
            )
            continue
        if kind == pdfium_c.FPDF_PAGEOBJ_FORM:
            if pdfium_c.FPDFPageObj_GetMatrix(obj, matrix):
                inner = (matrix.a, matrix.b, matrix.c, matrix.d, matrix.e, matrix.f)
                _walk(page_raw, obj, _compose(inner, outer), order, texts, covers)
            continue
        if kind == pdfium_c.FPDF_PAGEOBJ_PATH:
            if not pdfium_c.FPDFPath_GetDrawMode(obj, fill_mode, stroke) or not fill_mode.value:
                continue
            if not pdfium_c.FPDFPageObj_GetFillColor(obj, r, g, b, a) or a.value == 0:
                continue
            colour: Colour | None = (r.value, g.value, b.value, a.value)
        elif kind == pdfium_c.FPDF_PAGEOBJ_IMAGE:
            colour = None
        else:
            continue
        if pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
            box = _box_of(left.value, bottom.value, right.value, top.value, outer)
            covers.append(_Cover(box=box, order=order, colour=colour))


def _plain(obj: Any, outer: Matrix, buffers: tuple[Any, ...]) -> bool:
    """Whether a text object is painted (not render mode 3 or 7), in a colour that shows on
    white, at twice TINY_POINTS or more: the quick look that spares most pages the look at
    each character. Any doubt is not plain."""
    mode = pdfium_c.FPDFTextObj_GetTextRenderMode(obj)
    if mode in _INVISIBLE_MODES:
        return False
    r, g, b, a, size, matrix = buffers
    paint = (
        pdfium_c.FPDFPageObj_GetStrokeColor
        if mode in _STROKE_ONLY_MODES
        else pdfium_c.FPDFPageObj_GetFillColor
    )
    if not paint(obj, r, g, b, a) or contrast((r.value, g.value, b.value, a.value), WHITE) < (
        2 * MIN_CONTRAST
    ):
        return False
    if not pdfium_c.FPDFTextObj_GetFontSize(obj, size) or not pdfium_c.FPDFPageObj_GetMatrix(
        obj, matrix
    ):
        return False
    ma, mb, mc, md, _e, _f = _compose(
        (matrix.a, matrix.b, matrix.c, matrix.d, matrix.e, matrix.f), outer
    )
    return size.value * min(math.hypot(ma, mb), math.hypot(mc, md)) >= 2 * TINY_POINTS


def _object_of(
    textpage_raw: Any, index: int, obj: Any, texts: dict[int, _Drawn], grid: _Grid
) -> _Object:
    """What decides how the text object ``obj`` (of character ``index``) is seen."""
    mode = pdfium_c.FPDFTextObj_GetTextRenderMode(obj)
    r, g, b, a = (ctypes.c_uint() for _ in range(4))
    paint = (
        pdfium_c.FPDFPageObj_GetStrokeColor
        if mode in _STROKE_ONLY_MODES
        else pdfium_c.FPDFPageObj_GetFillColor
    )
    colour = (r.value, g.value, b.value, a.value) if paint(obj, r, g, b, a) else (0, 0, 0, 255)
    drawn = texts.get(ctypes.addressof(obj.contents))
    near = grid.near(drawn.box) if drawn is not None else grid.all
    matrix = pdfium_c.FS_MATRIX()
    # The object's font size and matrix (CTM included), read through its first character.
    font_size = pdfium_c.FPDFText_GetFontSize(textpage_raw, index)
    if font_size > 0 and pdfium_c.FPDFText_GetMatrix(textpage_raw, index, matrix):
        size = font_size * min(math.hypot(matrix.a, matrix.b), math.hypot(matrix.c, matrix.d))
    else:
        size = math.inf  # unknown: never called tiny
    found = _Object(
        mode=mode, paint=colour, size=size, order=drawn.order if drawn else (), handle=obj
    )
    if drawn is None:
        return _with_covers(found, list(near))  # its box unknown: all of them
    return _with_covers(found, [c for c in near if _overlaps(drawn.box, c.box)])


def _with_covers(obj: _Object, covers: list[_Cover]) -> _Object:
    hiding = [c for c in covers if _hides(c, obj)]
    return dataclasses.replace(
        obj,
        covers=tuple(covers),
        faint=contrast(obj.paint, WHITE) < MIN_CONTRAST,
        hiding=tuple(hiding),
        beneath=tuple(
            (c, contrast(obj.paint, c.colour or WHITE) < MIN_CONTRAST)
            for c in covers
            if c not in hiding
        ),
    )


class _Grid:
    """Covers by horizontal bands of the page, so that a character is compared only with the
    covers of its bands (a form has hundreds of filled boxes)."""

    BAND = 24.0

    def __init__(self, covers: Sequence[_Cover]) -> None:
        self.bands: dict[int, list[_Cover]] = {}
        self.spans: dict[tuple[int, int], list[_Cover]] = {}
        self.all = list(covers)
        for cover in covers:
            first, last = self._span(cover.box)
            for band in range(first, last + 1):
                self.bands.setdefault(band, []).append(cover)

    def _span(self, box: Box) -> tuple[int, int]:
        first = math.floor(box[1] / self.BAND)
        return first, max(first, min(math.floor(box[3] / self.BAND), first + 1000))

    def near(self, box: Box) -> list[_Cover]:
        span = self._span(box)
        if span[0] == span[1]:
            return self.bands.get(span[0], [])
        found = self.spans.get(span)
        if found is None:
            seen: dict[int, _Cover] = {}
            for band in range(span[0], span[1] + 1):
                seen.update((id(c), c) for c in self.bands.get(band, []))
            found = self.spans[span] = list(seen.values())
        return found


def _box(ch: Char) -> Box:
    return (ch.x0, ch.top, ch.x1, ch.bottom)


def _overlaps(box: Box, other: Box) -> bool:
    return box[0] < other[2] and other[0] < box[2] and box[1] < other[3] and other[1] < box[3]


def _centre_in(box: Box, other: Box, tolerance: float = 0.0) -> bool:
    x, y = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return (
        other[0] - tolerance <= x <= other[2] + tolerance
        and other[1] - tolerance <= y <= other[3] + tolerance
    )


def crop_box(page: pdfium.PdfPage, geometry: PageGeometry) -> Box:
    """The crop box (what a viewer shows, what PDFium draws) in top-left page points."""
    x0, y0, x1, y1 = page.get_cropbox()
    return _box_of(x0, y0, x1, y1, _to_top_left(page, geometry))


def find_hidden(
    page: pdfium.PdfPage,
    textpage: pdfium.PdfTextPage,
    chars: Sequence[Char],
    geometry: PageGeometry,
) -> Found:
    """Which of ``chars`` (documents.pdftext.page_chars of this page and text page, the text
    page still open) a reader cannot see, and why; see the module's docstring."""
    found = Found()
    if not chars:
        return found
    raw = textpage.raw
    to_page = _to_top_left(page, geometry)
    texts, covers = _objects(page, to_page)
    crop = crop_box(page, geometry)
    grid = _Grid(covers)
    if all(
        drawn.plain
        and crop[0] - 1 <= drawn.box[0]
        and drawn.box[2] <= crop[2] + 1
        and crop[1] - 1 <= drawn.box[1]
        and drawn.box[3] <= crop[3] + 1
        and not any(_overlaps(drawn.box, c.box) for c in grid.near(drawn.box))
        for drawn in texts.values()
    ):
        # Every text object is seen whole by its own properties: what the page draws over
        # it, around it or instead of it is the reading check's.
        _not_shown(page, raw, chars, found, texts, to_page, crop)
        return found
    # Within a point of the crop box is on the page.
    crop_x0, crop_top, crop_x1, crop_bottom = crop[0] - 1, crop[1] - 1, crop[2] + 1, crop[3] + 1
    objects: dict[int, _Object] = {}  # by the text object's address
    of_char: dict[int, _Object] = {}  # by position
    candidates: list[int] = []
    get_object, address_of = pdfium_c.FPDFText_GetTextObject, ctypes.addressof
    for position, ch in enumerate(chars):
        if ch.text.isspace():
            continue
        handle = get_object(raw, ch.char_index)
        if not handle:
            continue
        address = address_of(handle.contents)
        obj = objects.get(address)
        if obj is None:
            obj = objects[address] = _object_of(raw, ch.char_index, handle, texts, grid)
        of_char[position] = obj
        if obj.mode in _INVISIBLE_MODES:
            box = (ch.x0, ch.top, ch.x1, ch.bottom)
            if obj.mode == 3 and any(_centre_in(box, c.box) for c in obj.covers):
                found.scan_layer.append(position)
            else:
                found.hidden[position] = RENDER_MODE
            continue
        x, y = (ch.x0 + ch.x1) / 2, (ch.top + ch.bottom) / 2
        if not (crop_x0 <= x <= crop_x1 and crop_top <= y <= crop_bottom):
            found.hidden[position] = OUTSIDE_CROP
        elif obj.size < TINY_POINTS:
            found.hidden[position] = TINY
        elif not obj.covers:
            if obj.faint:
                found.hidden[position] = BACKGROUND  # white (or transparent) on the white page
        else:
            # A cover hides a glyph whose middle it covers (not one an underline or a
            # cell's border touches).
            over = [
                c for c in obj.covers if c.box[0] <= x <= c.box[2] and c.box[1] <= y <= c.box[3]
            ]
            if any(_hides(c, obj) for c in over):
                candidates.append(position)
            elif over:  # on shapes drawn before it, of known colours
                beneath = max(over, key=lambda c: c.order).colour or WHITE
                if contrast(obj.paint, beneath) < MIN_CONTRAST:
                    found.hidden[position] = BACKGROUND
            elif obj.faint:
                found.hidden[position] = BACKGROUND
    if candidates:
        found.rendered = True
        # Text objects PDFium's text page leaves out (one drawn again over the one before
        # it: fake bold, a watermark drawn twice) are made invisible too where they overlap a
        # candidate, or the copy would be taken for the page showing nothing of it.
        around = _Grid([_Cover(box=_box(chars[p]), order=()) for p in candidates])
        copies = [
            drawn.handle
            for address, drawn in texts.items()
            if address not in objects
            and any(_overlaps(drawn.box, c.box) for c in around.near(drawn.box))
        ]
        for position in _unseen(page, chars, candidates, of_char, crop, copies):
            ch = chars[position]
            obj = of_char[position]
            box = (ch.x0, ch.top, ch.x1, ch.bottom)
            covered = any(c.order > obj.order and _centre_in(box, c.box) for c in obj.covers)
            found.hidden[position] = UNDER_IMAGE if covered else BACKGROUND
    _not_shown(page, raw, chars, found, texts, to_page, crop)
    return found


def _not_shown(
    page: pdfium.PdfPage,
    textpage_raw: Any,
    chars: Sequence[Char],
    found: Found,
    texts: dict[int, _Drawn],
    to_page: Matrix,
    crop: Box,
) -> None:
    """The reading check: the characters that the page as a viewer draws it does not show,
    whatever hides them. The page is drawn twice at READ_SCALE, as it is and with every text
    object made invisible; a glyph (its tight box) must change enough of its rows between
    the two. A glyph not shown on a line whose glyphs the page mostly shows
    is ``PARTLY_SHOWN`` (a cell's text cut off at its border, a watermark's letter under a
    table); otherwise ``NOT_SHOWN``."""
    import numpy as np

    skip = found.hidden.keys() | set(found.scan_layer)
    # Letters and digits: a stop or a colon is two dots whose rows do not meet, and carries
    # no word.
    todo = [p for p, ch in enumerate(chars) if p not in skip and ch.text.isalnum()]
    if not todo or not texts:
        return
    handles = [drawn.handle for drawn in texts.values()]
    modes = [pdfium_c.FPDFTextObj_GetTextRenderMode(h) for h in handles]

    def draw() -> Any:
        bitmap = page.render(
            scale=READ_SCALE, grayscale=True, draw_annots=True, may_draw_forms=True
        )
        return bitmap.to_numpy().reshape(bitmap.height, -1)[:, : bitmap.width].astype(np.int16)

    before = draw()
    try:
        for handle in handles:
            pdfium_c.FPDFTextObj_SetTextRenderMode(handle, 3)
        after = draw()
    finally:
        for handle, mode in zip(handles, modes, strict=True):
            pdfium_c.FPDFTextObj_SetTextRenderMode(handle, mode)
    changed = np.abs(before - after) >= MIN_CONTRAST
    height, width = changed.shape
    left, bottom, right, top = (ctypes.c_double() for _ in range(4))
    get_box = pdfium_c.FPDFText_GetCharBox
    ox, oy = crop[0], crop[1]
    a, b, c, d, e, f = to_page
    # Every glyph judged: its position, its middle and height (top-left points), shown.
    judged: list[tuple[int, float, float, bool]] = []
    for position in todo:
        if not get_box(textpage_raw, chars[position].char_index, left, right, bottom, top):
            continue
        if right.value <= left.value or top.value <= bottom.value:
            continue
        xa, ya = a * left.value + c * bottom.value + e, b * left.value + d * bottom.value + f
        xb, yb = a * right.value + c * top.value + e, b * right.value + d * top.value + f
        # A pixel either side: a thin stem's ink may fall in the next column.
        c0 = max(0, math.floor((min(xa, xb) - ox) * READ_SCALE) - 1)
        c1 = min(width, math.ceil((max(xa, xb) - ox) * READ_SCALE) + 1)
        r0 = max(0, math.floor((min(ya, yb) - oy) * READ_SCALE))
        r1 = min(height, math.ceil((max(ya, yb) - oy) * READ_SCALE))
        if c1 - c0 < 1 or r1 - r0 < 1:
            continue  # outside the drawn page: the crop box check's
        shown = bool(changed[r0:r1, c0:c1].any(axis=1).mean() >= MIN_ROWS)
        ch = chars[position]
        judged.append((position, (ch.top + ch.bottom) / 2, ch.bottom - ch.top, shown))
    if all(shown for *_rest, shown in judged):
        return
    judged.sort(key=lambda item: item[1])
    middles = [item[1] for item in judged]
    for position, middle, size, shown in judged:
        if shown:
            continue
        # Its line: the glyphs whose middle is within half its height of its middle.
        low = bisect.bisect_left(middles, middle - size / 2)
        high = bisect.bisect_right(middles, middle + size / 2)
        level = [item[3] for item in judged[low:high]]
        found.hidden[position] = PARTLY_SHOWN if 2 * sum(level) > len(level) else NOT_SHOWN


def _unseen(
    page: pdfium.PdfPage,
    chars: Sequence[Char],
    candidates: list[int],
    of_char: dict[int, _Object],
    crop: Box,
    copies: Sequence[Any] = (),
) -> list[int]:
    """The candidates whose word does not change the drawn page when its text is made
    invisible."""
    from PIL import ImageChops

    handles = {ctypes.addressof(of_char[p].handle.contents): of_char[p].handle for p in candidates}
    handles.update((ctypes.addressof(handle.contents), handle) for handle in copies)
    modes = {address: pdfium_c.FPDFTextObj_GetTextRenderMode(h) for address, h in handles.items()}
    # Only the part of the page around the candidates is drawn (PDFium's crop: points cut
    # off each side of the turned page, left, bottom, right, top).
    boxes = [_box(chars[p]) for p in candidates]
    left = max(0.0, min(b[0] for b in boxes) - 2 - crop[0])
    top = max(0.0, min(b[1] for b in boxes) - 2 - crop[1])
    right = max(0.0, crop[2] - max(b[2] for b in boxes) - 2)
    bottom = max(0.0, crop[3] - max(b[3] for b in boxes) - 2)
    if left + right >= crop[2] - crop[0] or top + bottom >= crop[3] - crop[1]:
        return list(candidates)  # all of them outside what PDFium draws
    origin = (crop[0] + left, crop[1] + top)

    def draw() -> Any:
        bitmap = page.render(scale=RENDER_SCALE, crop=(left, bottom, right, top))
        return bitmap.to_pil().convert("RGB")

    before = draw()
    try:
        for handle in handles.values():
            pdfium_c.FPDFTextObj_SetTextRenderMode(handle, 3)
        after = draw()
    finally:
        for address, handle in handles.items():
            pdfium_c.FPDFTextObj_SetTextRenderMode(handle, modes[address])
    difference = ImageChops.difference(before, after).convert("L")
    width, height = difference.size
    unseen: list[int] = []
    # Decided word by word: a thin character (a period, an "l") may change few pixels.
    positions = {id(chars[p]): p for p in candidates}
    for word in _words([chars[p] for p in candidates]):
        x0 = max(0, math.floor((min(ch.x0 for ch in word) - origin[0]) * RENDER_SCALE))
        y0 = max(0, math.floor((min(ch.top for ch in word) - origin[1]) * RENDER_SCALE))
        x1 = min(width, math.ceil((max(ch.x1 for ch in word) - origin[0]) * RENDER_SCALE))
        y1 = min(height, math.ceil((max(ch.bottom for ch in word) - origin[1]) * RENDER_SCALE))
        if x1 <= x0 or y1 <= y0:
            seen = False
        else:
            extrema: Any = difference.crop((x0, y0, x1, y1)).getextrema()  # (low, high): "L"
            seen = extrema[1] >= MIN_CONTRAST
        if not seen:
            unseen.extend(positions[id(ch)] for ch in word)
    return unseen


# -- a scan's text layer against what OCR reads ---------------------------------------------------

_TOKEN = re.compile(r"[^\W_]{2,}")
OcrWord = tuple[str, float, float, float, float]  # text, box in fractions of the page


def _tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def confirmed_lines(
    lines: Sequence[tuple[list[int], str, Box]],
    ocr_words: Sequence[OcrWord],
) -> tuple[set[int], float]:
    """Which lines of a scan's text layer OCR reads at their place: each line is (its
    characters' positions, its text, its box in fractions of the page). Returns the indexes
    of the confirmed lines and the share of the layer's words they hold."""
    from rapidfuzz import fuzz

    placed = [(_tokens(text), box) for text, *box in ocr_words]
    confirmed: set[int] = set()
    words_total = words_confirmed = 0
    for index, (_positions, text, box) in enumerate(lines):
        tokens = _tokens(text)
        if not tokens:
            confirmed.add(index)
            continue
        height = box[3] - box[1]
        band = (box[0] - height, box[1] - height / 2, box[2] + height, box[3] + height / 2)
        near = [t for ts, b in placed if _centre_in(tuple(b), band) for t in ts]  # type: ignore[arg-type]
        found = sum(
            1
            for token in tokens
            if token in near or any(fuzz.ratio(token, other) >= WORD_SIMILARITY for other in near)
        )
        words_total += len(tokens)
        if found >= LINE_AGREEMENT * len(tokens):
            confirmed.add(index)
            words_confirmed += len(tokens)
    share = words_confirmed / words_total if words_total else 1.0
    return confirmed, share


# -- what a page records ------------------------------------------------------------------------


def summary(
    hidden: Sequence[tuple[Char, str]], geometry: PageGeometry
) -> tuple[list[dict[str, Any]], str]:
    """The record of a page's hidden characters: one entry per kind (its code, how many words
    of two letters or digits or more, the boxes of every word in fractions of the page), and
    their text (for an auditor; never classified, never logged)."""
    by_kind: dict[str, list[Char]] = {}
    for ch, kind in hidden:
        by_kind.setdefault(kind, []).append(ch)
    left, upper = geometry.bbox[0], geometry.bbox[1]
    width, height = max(geometry.width, 1e-6), max(geometry.height, 1e-6)

    def fraction(value: float, origin: float, span: float) -> float:
        return round(min(1.0, max(0.0, (value - origin) / span)), 4)

    record: list[dict[str, Any]] = []
    texts: list[str] = []
    for kind, chars in by_kind.items():
        words = _runs(chars)
        boxes = [
            [
                fraction(min(ch.x0 for ch in word), left, width),
                fraction(min(ch.top for ch in word), upper, height),
                fraction(max(ch.x1 for ch in word), left, width),
                fraction(max(ch.bottom for ch in word), upper, height),
            ]
            for word in words
        ]
        # A word is two letters or digits or more: a lone glyph (a checkbox drawn as a
        # letter of a symbol font, a period under a logo) is boxed but not counted.
        counted = sum(1 for word in words if sum(c.isalnum() for ch in word for c in ch.text) >= 2)
        record.append({"kind": kind, "words": counted, "boxes": boxes[:_MAX_BOXES]})
        texts.append(" ".join("".join(ch.text for ch in word) for word in words))
    return record, "\n".join(texts)


def _runs(chars: Sequence[Char]) -> list[list[Char]]:
    """Hidden characters as words: runs of consecutive indexes on PDFium's text page (a
    space, drawn or generated, or a line break between two characters parts them)."""
    words: list[list[Char]] = []
    last = -2
    for ch in sorted(chars, key=lambda ch: ch.char_index):
        if ch.char_index != last + 1 or not words:
            words.append([ch])
        else:
            words[-1].append(ch)
        last = ch.char_index + max(len(ch.text), 1) - 1  # a ligature spans indexes
    return words


# -- what the glyphs show against what the text layer says ---------------------------------------

# A font whose ToUnicode map lies draws one text and is read as another; only reading the
# drawn glyphs tells. The fonts of a page not yet trusted are read by OCR, a few of their
# words each drawn at OCR_SCALE (chosen to cover as many of their letters as they can), and
# judged by all of them together: when fewer than FONT_AGREEMENT of MIN_SAMPLE or more words
# read as the text layer says (rapidfuzz ratio WORD_SIMILARITY), everything the page draws
# in that font is ``MISREAD``. What was read is remembered for the document by glyph: a
# letter of a font (its name, the letter, and the outline PDFium draws for that letter,
# which a lying map changes) is trusted or not once, so a document whose pages share their
# fonts costs one OCR call, and a lying copy of a trusted font on a later page is read anew.
MISREAD = "misread"
OCR_SCALE = 4.0  # 288 dpi: tesseract's comfort for 8-12 pt print
SAMPLE_WORDS = 10
MIN_SAMPLE = 3
FONT_AGREEMENT = 0.5
KNOWN_LETTERS = 0.75  # share of a font's letters on a page trusted already: no new reading
_GAP = 24  # pixels of white between two sample words in the image OCR reads

GlyphKey = tuple[str, str, tuple[float, ...]]


@dataclass
class Fonts:
    """What a document's glyphs read as, so far: glyph key -> whether it reads as its text
    layer says (documents.pages keeps one per document)."""

    glyphs: dict[GlyphKey, bool] = field(default_factory=dict)


@dataclass
class PageFonts:
    """A page's fonts (by address, valid while the page is open): each position's font, the
    fonts' glyph keys by letter, and the verdicts known (trusted glyphs) or read."""

    font_of: dict[int, int]
    keys: dict[int, dict[str, GlyphKey]]
    honest: dict[int, bool] = field(default_factory=dict)


@dataclass
class GlyphSample:
    """Words of fonts not yet judged, drawn for OCR: ``image`` (one word per row) and, per
    row, the font and the word's text and place (fractions of the image's height)."""

    image: Any
    rows: list[tuple[int, str, float, float]]


def _outline(font: Any, letter: str) -> tuple[float, ...]:
    """A short fingerprint of the outline PDFium draws for ``letter`` in ``font``: the point
    count and the first points (the outline follows the font's own map back from the text)."""
    path = pdfium_c.FPDFFont_GetGlyphPath(font, ord(letter[0]), ctypes.c_float(10.0))
    if not path:
        return ()
    count = pdfium_c.FPDFGlyphPath_CountGlyphSegments(path)
    x, y = ctypes.c_float(), ctypes.c_float()
    points: list[float] = [float(count)]
    for index in range(0, min(count, 12)):
        segment = pdfium_c.FPDFGlyphPath_GetGlyphPathSegment(path, index)
        if segment and pdfium_c.FPDFPathSegment_GetPoint(segment, x, y):
            points.extend((round(x.value, 2), round(y.value, 2)))
    return tuple(points)


def page_fonts(textpage: pdfium.PdfTextPage, chars: Sequence[Char], fonts: Fonts) -> PageFonts:
    """Each character's font on this page (the text page open), its letters' glyph keys,
    and the fonts whose every letter the document already trusts (or one it distrusts)."""
    raw = textpage.raw
    font_of: dict[int, int] = {}
    handles: dict[int, Any] = {}
    by_object: dict[int, int] = {}
    letters: dict[int, set[str]] = {}
    for position, ch in enumerate(chars):
        if ch.text.isspace():
            continue
        handle = pdfium_c.FPDFText_GetTextObject(raw, ch.char_index)
        if not handle:
            continue
        address = ctypes.addressof(handle.contents)
        font = by_object.get(address)
        if font is None:
            pointer = pdfium_c.FPDFTextObj_GetFont(handle)
            font = by_object[address] = ctypes.addressof(pointer.contents) if pointer else 0
            if font:
                handles[font] = pointer
        if font:
            font_of[position] = font
            if ch.text.isalnum():
                letters.setdefault(font, set()).add(ch.text)
    keys: dict[int, dict[str, GlyphKey]] = {}
    buffer = ctypes.create_string_buffer(256)
    for font, used in letters.items():
        length = pdfium_c.FPDFFont_GetBaseFontName(handles[font], buffer, 256)
        name = buffer.raw[: max(0, length - 1)].decode("latin-1") if length else ""
        keys[font] = {letter: (name, letter, _outline(handles[font], letter)) for letter in used}
    found = PageFonts(font_of=font_of, keys=keys)
    for font, by_letter in keys.items():
        known = [fonts.glyphs.get(key) for key in by_letter.values()]
        if any(verdict is False for verdict in known):
            found.honest[font] = False
        elif sum(verdict is True for verdict in known) >= KNOWN_LETTERS * len(known):
            # The font read before: a page's few new letters (a Q, a digit) are taken with
            # it rather than read again (an OCR call per page otherwise).
            found.honest[font] = True
            fonts.glyphs.update((key, True) for key in by_letter.values())
    return found


def glyph_sample(
    page: pdfium.PdfPage,
    chars: Sequence[Char],
    visible: Sequence[int],
    fonts: PageFonts,
    crop: Box,
) -> GlyphSample | None:
    """The words to read of the fonts of ``visible`` positions not yet judged, drawn one per
    row; None when there is nothing to read."""
    from PIL import Image

    font_of = fonts.font_of
    position_of = {id(chars[p]): p for p in visible}
    chosen: dict[int, list[list[Char]]] = {}
    covered: dict[int, set[str]] = {}
    for word in _words([chars[p] for p in visible]):
        letters = [ch for ch in word if ch.text.isalnum()]
        if len(letters) < 3 or not word[0].upright:
            continue
        font_set = {font_of.get(position_of[id(ch)], 0) for ch in word if not ch.text.isspace()}
        if len(font_set) != 1:
            continue
        font = font_set.pop()
        if not font or font in fonts.honest:
            continue
        picked = chosen.setdefault(font, [])
        seen = covered.setdefault(font, set())
        new = {ch.text for ch in letters} - seen
        # First the words that bring letters not yet read, then any, up to SAMPLE_WORDS.
        if len(picked) < SAMPLE_WORDS and (new or len(picked) < MIN_SAMPLE):
            picked.append(word)
            seen |= new
    chosen = {font: words for font, words in chosen.items() if len(words) >= MIN_SAMPLE}
    if not chosen:
        return None
    images: list[tuple[int, str, Any]] = []
    for font, words in chosen.items():
        for word in words:
            x0 = min(ch.x0 for ch in word) - 2 - crop[0]
            x1 = max(ch.x1 for ch in word) + 2 - crop[0]
            y0 = min(ch.top for ch in word) - 2 - crop[1]
            y1 = max(ch.bottom for ch in word) + 2 - crop[1]
            cut = (
                max(0.0, x0),
                max(0.0, (crop[3] - crop[1]) - y1),
                max(0.0, (crop[2] - crop[0]) - x1),
                max(0.0, y0),
            )
            if cut[0] + cut[2] >= crop[2] - crop[0] or cut[1] + cut[3] >= crop[3] - crop[1]:
                continue
            bitmap = page.render(scale=OCR_SCALE, crop=cut, draw_annots=True, grayscale=True)
            text = "".join(ch.text for ch in word)
            images.append((font, text, _dark_on_light(bitmap.to_pil().convert("L"))))
    if not images:
        return None
    width = max(image.width for _f, _t, image in images) + 2 * _GAP
    height = sum(image.height + _GAP for _f, _t, image in images) + _GAP
    sheet = Image.new("L", (width, height), 255)
    rows: list[tuple[int, str, float, float]] = []
    y = _GAP
    for font, text, image in images:
        sheet.paste(image, (_GAP, y))
        rows.append((font, text, y / height, (y + image.height) / height))
        y += image.height + _GAP
    return GlyphSample(image=sheet, rows=rows)


def _dark_on_light(image: Any) -> Any:
    """A word's picture stretched to full contrast, dark print on light (white headings on a
    coloured band are common), as OCR reads best."""
    from PIL import ImageOps

    image = ImageOps.autocontrast(image)
    histogram = image.histogram()
    dark = sum(histogram[:128])
    return ImageOps.invert(image) if dark > sum(histogram) / 2 else image


def judge_fonts(
    sample: GlyphSample, ocr_words: Sequence[OcrWord], page: PageFonts, fonts: Fonts
) -> None:
    """Whether each sampled font's words read, by OCR of the drawn sample, as its text layer
    says: recorded for the page (``page.honest``) and, glyph by glyph, for the document."""
    from rapidfuzz import fuzz

    agree: dict[int, list[bool]] = {}
    for font, text, top, bottom in sample.rows:
        read = " ".join(
            word for word, _x0, y0, _x1, y1 in ocr_words if top <= (y0 + y1) / 2 <= bottom
        )
        # Letters and digits only: letter-spaced print is read as single letters.
        said = "".join(c for c in text.lower() if c.isalnum())
        seen = "".join(c for c in read.lower() if c.isalnum())
        votes = agree.setdefault(font, [])
        if seen:  # a word OCR finds nothing in is no vote (tesseract drops some)
            votes.append(fuzz.ratio(said, seen) >= WORD_SIMILARITY)
    for font, votes in agree.items():
        honest = sum(votes) >= FONT_AGREEMENT * len(votes)
        page.honest[font] = honest
        for key in page.keys.get(font, {}).values():
            # A distrusted glyph stays distrusted: a later honest reading does not clear it.
            fonts.glyphs[key] = honest and fonts.glyphs.get(key, True)
