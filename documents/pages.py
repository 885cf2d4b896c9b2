"""Turn a PDF or a text file into pages of text split into paragraphs, in reading order.

Pure module (no Django): it can be tested and benchmarked alone. A page's ``text`` is its
paragraphs joined by blank lines, so a character offset into the text maps to one paragraph,
which the review pages use to show the context around a piece of evidence. Every PDF page also
gets its word boxes (see documents.boxes), so that a span of the text maps to where it is drawn.
"""

from __future__ import annotations

import io
import re
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pdfplumber
import pypdfium2 as pdfium

from documents import hidden as hidden_text
from documents.boxes import Box, Word, align_words
from documents.images import PDFIUM_LOCK
from documents.pdftext import (
    Char,
    Line,
    PageGeometry,
    Rule,
    page_chars,
    page_geometry,
    page_rules,
    text_lines,
)

HEADING = "heading"
PARAGRAPH = "paragraph"
LIST_ITEM = "list_item"
TABLE = "table"

TEXT_LAYER = "text_layer"
OCR = "ocr"

_LIST_MARKER = re.compile(r"^\s*(?:[-\u2022\u25cf\u25aa*\u2013]|\(?\d{1,2}[.)]|\(?[a-z][.)])\s+")
_BLANK_LINES = re.compile(r"\n[ \t]*\n+")


class UnreadableDocument(Exception):
    """Ingestion cannot continue; ``message`` is written for the person who uploaded the file."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class PageContent:
    number: int
    paragraphs: list[str]
    block_types: list[str]
    has_tables: bool = False
    method: str = TEXT_LAYER
    ocr_confidence: float | None = None
    ocr_word_count: int = 0
    boxes: list[Box] = field(default_factory=list)  # word boxes, see documents.boxes
    width: float | None = None  # page size in PDF points; None for text files
    height: float | None = None
    # Text a reader of the page cannot see, left out of everything above (documents.hidden):
    # one entry per kind ({"kind", "words", "boxes"}), and that text, for an auditor only.
    hidden: list[dict[str, Any]] = field(default_factory=list)
    hidden_text: str = ""
    text: str = field(init=False)

    def __post_init__(self) -> None:
        self.text = "\n\n".join(self.paragraphs)


@dataclass(frozen=True)
class OcrResult:
    paragraphs: list[str]
    confidence: float  # mean word confidence, 0..1
    word_count: int
    # Each word in the order it was written into the paragraphs, boxed in image fractions.
    words: tuple[Word, ...] = ()


# An OCR engine takes a rendered page image (PIL) and returns what it read.
OcrEngine = Callable[[Any], OcrResult]


def classify_block(text: str, *, tall: bool = False) -> str:
    """A cheap guess of what a block is: heading, list item or running paragraph."""
    first_line = text.strip().split("\n", 1)[0]
    if _LIST_MARKER.match(first_line):
        return LIST_ITEM
    if "\n" not in text.strip() and len(first_line) <= 60:
        letters = [c for c in first_line if c.isalpha()]
        shouting = len(letters) >= 3 and all(c.isupper() for c in letters)
        if shouting or tall or (first_line.endswith(":") and len(first_line) <= 40):
            return HEADING
    return PARAGRAPH


def split_heading_lines(lines: list[str]) -> list[str]:
    """Split a block of lines so that each heading line stands as its own paragraph.

    Used for OCR, where tesseract often joins a heading to the text below it.
    """
    paragraphs: list[list[str]] = []
    for line in lines:
        is_heading = classify_block(line) == HEADING
        previous_is_heading = bool(paragraphs) and classify_block(paragraphs[-1][-1]) == HEADING
        if not paragraphs or is_heading or previous_is_heading:
            paragraphs.append([line])
        else:
            paragraphs[-1].append(line)
    return ["\n".join(p) for p in paragraphs]


def group_lines(lines: list[Line]) -> list[tuple[str, str, list[Line]]]:
    """Group text lines into paragraphs by vertical gaps, headings and list markers.

    Returns (paragraph text, block type, the paragraph's lines) in reading order.
    """
    if not lines:
        return []
    median_height = statistics.median(line.height for line in lines)
    blocks: list[list[Line]] = []
    for line in lines:
        if not blocks:
            blocks.append([line])
            continue
        previous = blocks[-1][-1]
        gap = line.top - previous.bottom
        previous_tall = previous.height > 1.25 * median_height
        after_lone_heading = (
            len(blocks[-1]) == 1 and classify_block(previous.text, tall=previous_tall) == HEADING
        )
        starts_new = (
            gap > 0.6 * median_height
            or _LIST_MARKER.match(line.text) is not None
            or after_lone_heading
            or line.height > 1.25 * median_height
        )
        if starts_new:
            blocks.append([line])
        else:
            blocks[-1].append(line)
    grouped = []
    for block in blocks:
        text = "\n".join(line.text for line in block)
        tall = len(block) == 1 and block[0].height > 1.25 * median_height
        grouped.append((text, classify_block(text, tall=tall), block))
    return grouped


def _in_any(line: Line, boxes: Iterable[tuple[float, float, float, float]]) -> bool:
    middle = (line.top + line.bottom) / 2
    return any(top <= middle <= bottom for (_x0, top, _x1, bottom) in boxes)


def _line_words(line: Line, geometry: PageGeometry) -> list[Word]:
    """The words of one text line, boxed in fractions of the page."""
    left, upper = geometry.bbox[0], geometry.bbox[1]
    width, height = geometry.width, geometry.height
    if width <= 0 or height <= 0:
        return [(text, 0.0, 0.0, 0.0, 0.0) for text, *_box in line.words]
    # documents.boxes.fraction on each edge, written out: this runs for every word.
    return [
        (
            text,
            round(min(1.0, max(0.0, (x0 - left) / width)), 4),
            round(min(1.0, max(0.0, (top - upper) / height)), 4),
            round(min(1.0, max(0.0, (x1 - left) / width)), 4),
            round(min(1.0, max(0.0, (bottom - upper) / height)), 4),
        )
        for text, x0, top, x1, bottom in line.words
    ]


class _Tables:
    """Ruled tables: pdfplumber's table finder on the straight strokes PDFium reads from the
    page's vector paths (documents.pdftext.page_rules), given to it as explicit lines. That
    is pdfplumber's own "lines" strategy on the same edges, without pdfminer parsing the
    page: the file is opened with pdfplumber (its page tree, not its pages' content) only once a
    page has the two horizontal and two vertical strokes a table needs."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pdf: Any = None
        self._pages: list[Any] = []
        self._unreadable = False

    def boxes(self, number: int, rules: list[Rule]) -> list[tuple[float, float, float, float]]:
        """The ruled tables' boxes on page ``number``, in top-left points (as characters are
        boxed); none when pdfplumber cannot read the file: a table is a block type, never a
        reason to refuse a page."""
        # pdfplumber's "lines" strategy leaves out strokes shorter than 1 pt before merging.
        vertical = [_edge("v", rule) for rule in rules if rule[3] - rule[1] >= 1]
        horizontal = [_edge("h", rule) for rule in rules if rule[2] - rule[0] >= 1]
        if len(vertical) < 2 or len(horizontal) < 2 or self._unreadable:
            return []
        try:
            if self._pdf is None:
                self._unreadable = True  # until pdfplumber has read the page tree: once
                self._pdf = pdfplumber.open(io.BytesIO(self._data))
                self._pages = self._pdf.pages
                self._unreadable = False
            page = self._pages[number - 1]
            settings = {
                "vertical_strategy": "explicit",
                "horizontal_strategy": "explicit",
                "explicit_vertical_lines": vertical,
                "explicit_horizontal_lines": horizontal,
            }
            return [table.bbox for table in page.find_tables(settings)]
        except Exception:
            return []

    def close(self) -> None:
        if self._pdf is not None:
            self._pdf.close()


def _edge(orientation: str, rule: Rule) -> dict[str, Any]:
    """A stroke as pdfplumber describes the edge of a line or a rectangle."""
    x0, top, x1, bottom = rule
    return {
        "object_type": "line_edge",
        "orientation": orientation,
        "x0": x0,
        "x1": x1,
        "top": top,
        "bottom": bottom,
        "doctop": top,
        "width": x1 - x0,
        "height": bottom - top,
    }


def _text_layer_page(
    page: Any,
    number: int,
    tables: _Tables,
    *,
    ocr: OcrEngine | None = None,
    dpi: int = 300,
    fonts: hidden_text.Fonts | None = None,
) -> PageContent:
    """A page read from its text layer, without the characters a reader cannot see
    (documents.hidden). A searchable scan's invisible layer is kept where OCR of the drawn
    page reads it too; when most of it is not read there, the page is the OCR's reading.
    With OCR and ``fonts`` (the document's fonts judged so far), the glyphs of each font not
    yet judged are read and compared with what the text layer says (a lying ToUnicode map):
    a font that does not read as it says is left out (``misread``)."""
    sample: hidden_text.GlyphSample | None = None
    page_fonts: hidden_text.PageFonts | None = None
    with PDFIUM_LOCK:
        textpage = page.get_textpage()
        try:
            chars = page_chars(page, textpage)
            geometry = page_geometry(page)
            # While the text page is open, each character's index leads to its text object.
            found = hidden_text.find_hidden(page, textpage, chars, geometry)
            if ocr is not None and fonts is not None and chars:
                page_fonts = hidden_text.page_fonts(textpage, chars, fonts)
                layer = set(found.scan_layer)
                shown = [p for p in range(len(chars)) if p not in found.hidden and p not in layer]
                sample = hidden_text.glyph_sample(
                    page, chars, shown, page_fonts, hidden_text.crop_box(page, geometry)
                )
        finally:
            textpage.close()
        rules = page_rules(page) if chars else []
    kinds = dict(found.hidden)
    if page_fonts is not None:
        if sample is not None and ocr is not None and fonts is not None:
            hidden_text.judge_fonts(sample, ocr(sample.image).words, page_fonts, fonts)
        kinds.update(
            (position, hidden_text.MISREAD)
            for position, font in page_fonts.font_of.items()
            if not page_fonts.honest.get(font, True) and position not in kinds
        )
    read: OcrResult | None = None
    if found.scan_layer:
        read = _read_scan_layer(page, chars, found.scan_layer, kinds, geometry, ocr=ocr, dpi=dpi)
    visible = [ch for position, ch in enumerate(chars) if position not in kinds]
    if read is not None:
        content = _ocr_content(number, read, width=geometry.width, height=geometry.height)
    else:
        lines = text_lines(visible)
        table_boxes = tables.boxes(number, rules) if lines else []
        content = layout_page(number, lines, table_boxes, geometry)
    if kinds:
        content.hidden, content.hidden_text = hidden_text.summary(
            [(chars[position], kind) for position, kind in sorted(kinds.items())], geometry
        )
    return content


def _read_scan_layer(
    page: Any,
    chars: list[Char],
    layer: list[int],
    kinds: dict[int, str],
    geometry: PageGeometry,
    *,
    ocr: OcrEngine | None,
    dpi: int,
) -> OcrResult | None:
    """Compare a searchable scan's invisible layer with OCR of the drawn page: its lines that
    OCR does not read at their place are hidden (``disagrees``, added to ``kinds``); the OCR
    reading is returned when the layer as a whole disagrees. Without OCR on this server the
    layer cannot be checked and is kept, as a scan without a layer would be refused."""
    if ocr is None:
        return None
    with PDFIUM_LOCK:
        image = page.render(scale=dpi / 72).to_pil()
    result = ocr(image)
    left, upper = geometry.bbox[0], geometry.bbox[1]
    width, height = max(geometry.width, 1e-6), max(geometry.height, 1e-6)
    lines: list[tuple[list[int], str, tuple[float, float, float, float]]] = []
    for line in text_lines([chars[position] for position in layer]):
        # The line's characters: those whose centre is in one of its words' boxes.
        positions = [
            position
            for position in layer
            if any(
                x0 - 0.5 <= (chars[position].x0 + chars[position].x1) / 2 <= x1 + 0.5
                and top - 0.5 <= (chars[position].top + chars[position].bottom) / 2 <= bottom + 0.5
                for _text, x0, top, x1, bottom in line.words
            )
        ]
        x1 = max((word[3] for word in line.words), default=line.x0)
        box = (
            (line.x0 - left) / width,
            (line.top - upper) / height,
            (x1 - left) / width,
            (line.bottom - upper) / height,
        )
        lines.append((positions, line.text, box))
    confirmed, share = hidden_text.confirmed_lines(lines, result.words)
    if share < hidden_text.LAYER_AGREEMENT:
        kinds.update((position, hidden_text.DISAGREES) for position in layer)
        return result
    for index, (positions, _text, _box) in enumerate(lines):
        if index not in confirmed:
            kinds.update(
                (position, hidden_text.DISAGREES) for position in positions if position not in kinds
            )
    return None


def layout_page(
    number: int,
    lines: list[Line],
    table_boxes: list[tuple[float, float, float, float]],
    geometry: PageGeometry,
) -> PageContent:
    """A text-layer page from its lines (whichever reader found them): paragraphs in reading
    order, block types (a paragraph inside a ruled table is a table), word boxes (from the
    lines' words)."""
    found = [line for line in lines if line.text.strip()]
    found.sort(key=lambda line: (round(line.top, 1), line.x0))
    paragraphs: list[str] = []
    block_types: list[str] = []
    words: list[Word] = []
    for text, block_type, block in group_lines(found):
        paragraphs.append(text)
        in_table = table_boxes and _in_any(block[0], table_boxes)
        block_types.append(TABLE if in_table else block_type)
        for line in block:
            words.extend(_line_words(line, geometry))
    content = PageContent(
        number=number,
        paragraphs=paragraphs,
        block_types=block_types,
        has_tables=bool(table_boxes),
        width=float(geometry.width),
        height=float(geometry.height),
    )
    content.boxes = align_words(content.text, words)
    return content


def _ocr_page(page: Any, number: int, *, ocr: OcrEngine, dpi: int) -> PageContent:
    geometry = page_geometry(page)
    with PDFIUM_LOCK:
        image = page.render(scale=dpi / 72).to_pil()
    return _ocr_content(number, ocr(image), width=geometry.width, height=geometry.height)


def _ocr_content(number: int, result: Any, *, width: float, height: float) -> PageContent:
    """A page read by OCR, with its word boxes aligned to the text."""
    content = PageContent(
        number=number,
        paragraphs=result.paragraphs,
        block_types=[classify_block(p) for p in result.paragraphs],
        method=OCR,
        ocr_confidence=result.confidence,
        ocr_word_count=result.word_count,
        width=float(width),
        height=float(height),
    )
    content.boxes = align_words(content.text, result.words)
    return content


def _ocr_for(
    content: PageContent, number: int, *, min_text_chars: int, ocr: OcrEngine | None
) -> OcrEngine | None:
    """The OCR engine to read a page with when its text layer is too thin to keep (refused
    when this server has none); None to keep the text layer."""
    if len("".join(content.text.split())) >= min_text_chars:
        return None
    if ocr is None:
        raise UnreadableDocument(
            f"Page {number} is a scanned image and OCR is not available on "
            "this server. Ask an administrator to install tesseract."
        )
    return ocr


@contextmanager
def _page_errors(number: int) -> Iterator[None]:
    """Any failure reading page ``number``, but a refusal already worded for the user, is
    reported as a damaged page."""
    try:
        yield
    except UnreadableDocument:
        raise
    except Exception as exc:
        raise UnreadableDocument(
            f"Page {number} of the PDF could not be read (it may be damaged). "
            "Upload the original file again."
        ) from exc


def extract_pdf(
    data: bytes,
    *,
    ocr: OcrEngine | None,
    min_text_chars: int = 20,
    dpi: int = 300,
    on_page: Callable[[int, int], None] | None = None,
) -> list[PageContent]:
    """Extract every page: PDFium reads the text layer (documents.pdftext), pdfplumber the
    ruled tables of pages with vector paths. Pages whose text layer has fewer than
    ``min_text_chars`` non-space characters are rendered and read by ``ocr``."""
    pages: list[PageContent] = []
    try:
        with PDFIUM_LOCK:
            pdf = pdfium.PdfDocument(data)
            total = len(pdf)
            # Form fields are drawn as a viewer shows them (the reading check,
            # documents.hidden): a field's appearance over text hides it.
            pdf.init_forms()
    except Exception as exc:  # PdfiumError: damaged, not a PDF, or protected by a password
        raise UnreadableDocument(
            "The PDF could not be opened: it is damaged or protected."
        ) from exc
    tables = _Tables(data)
    fonts = hidden_text.Fonts()  # each font's glyphs are read once per document
    try:
        for index in range(1, total + 1):
            page: Any = None
            try:
                with _page_errors(index):
                    with PDFIUM_LOCK:
                        page = pdf[index - 1]
                    content = _text_layer_page(page, index, tables, ocr=ocr, dpi=dpi, fonts=fonts)
                    engine = (
                        _ocr_for(content, index, min_text_chars=min_text_chars, ocr=ocr)
                        if content.method != OCR
                        else None
                    )
                    if engine is not None:
                        read = _ocr_page(page, index, ocr=engine, dpi=dpi)
                        read.hidden, read.hidden_text = content.hidden, content.hidden_text
                        content = read
            finally:
                if page is not None:
                    with PDFIUM_LOCK:
                        page.close()  # frees the page: memory stays flat on long files
            pages.append(content)
            if on_page is not None:
                on_page(index, total)
    finally:
        tables.close()
        with PDFIUM_LOCK:
            pdf.close()
    return pages


# Control characters that make a file binary rather than text (tab, newlines and form feed are
# text). Counted on the bytes: in UTF-8 and cp1252 each is one byte and no other character
# contains it, and bytes.translate counts 20 MB in milliseconds where a loop over the
# characters took seconds.
_CONTROL_BYTES = bytes(b for b in range(32) if chr(b) not in "\n\r\t\f")


def decode_text(data: bytes) -> str | None:
    """Decode a plain-text upload; None when it is not text (binary, unknown encoding).
    UTF-16 needs its byte order mark; UTF-8 may have one."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            data = data.decode("utf-16").encode("utf-8")
        except UnicodeDecodeError:
            return None
    if b"\x00" in data:
        return None
    controls = len(data) - len(data.translate(None, _CONTROL_BYTES))
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        if controls > max(5, len(text) // 100):
            return None
        return text
    return None


def text_page_count(text: str) -> int:
    """How many pages ``extract_text_file`` makes of ``text``, without making them: one more
    than the form feeds before the last visible character (trailing blank pages are dropped)."""
    return text.rstrip().count("\f") + 1


def extract_text_file(text: str) -> list[PageContent]:
    """A text file is one page, or several separated by form feeds; blank lines part paragraphs."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    pages = []
    for number, page_text in enumerate(text.split("\f"), start=1):
        paragraphs = [
            "\n".join(line.rstrip() for line in chunk.strip("\n").split("\n")).strip()
            for chunk in _BLANK_LINES.split(page_text)
        ]
        paragraphs = [p for p in paragraphs if p]
        pages.append(
            PageContent(
                number=number,
                paragraphs=paragraphs,
                block_types=[classify_block(p) for p in paragraphs],
            )
        )
    # Trailing form feeds make empty pages that were never pages to the author.
    while len(pages) > 1 and not pages[-1].paragraphs:
        pages.pop()
    return pages


def throttled(on_page: Callable[[int, int], None], interval: float) -> Callable[[int, int], None]:
    """``on_page(done, total)`` at most once per ``interval`` seconds, the first time once
    ``interval`` has passed: a text page takes milliseconds, less than what is done with a
    report of it, and a document read within ``interval`` needs none (its last step says
    it is done)."""
    reported_at = time.monotonic()

    def report(done: int, total: int) -> None:
        nonlocal reported_at
        now = time.monotonic()
        if now - reported_at >= interval:
            on_page(done, total)
            reported_at = now

    return report


def extract_file(
    name: str,
    data: bytes,
    *,
    ocr: OcrEngine | None,
    min_text_chars: int = 20,
    dpi: int = 300,
    on_page: Callable[[int, int], None] | None = None,
) -> list[PageContent]:
    """Pages of a .pdf (text layer, OCR where needed) or of a text file, chosen by the name.
    ``on_page(done, total)`` is called after each PDF page (progress)."""
    if name.lower().endswith(".pdf"):
        return extract_pdf(
            data,
            ocr=ocr,
            min_text_chars=min_text_chars,
            dpi=dpi,
            on_page=on_page,
        )
    text = decode_text(data)
    if text is None:
        raise UnreadableDocument("The file is not readable text.")
    return extract_text_file(text)
