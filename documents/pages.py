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
from pdfplumber.utils.text import LIGATURES as PLUMBER_LIGATURES

from documents.boxes import Box, Word, align_words, fraction
from documents.images import PDFIUM_LOCK
from documents.pdftext import (
    LIGATURES,
    Line,
    PageGeometry,
    page_geometry,
    page_lines,
    page_table_boxes,
    word_fractions,
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


_Line = Line  # a text line with its characters (documents.pdftext)


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


def group_lines(lines: list[_Line]) -> list[tuple[str, str, list[_Line]]]:
    """Group text lines into paragraphs by vertical gaps, headings and list markers.

    Returns (paragraph text, block type, the paragraph's lines) in reading order.
    """
    if not lines:
        return []
    median_height = statistics.median(line.height for line in lines)
    blocks: list[list[_Line]] = []
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


def _reading_order(found: list[_Line]) -> list[_Line]:
    lines = [line for line in found if line.text.strip()]
    lines.sort(key=lambda line: (round(line.top, 1), line.x0))
    return lines


def _table_boxes(page: Any) -> list[tuple[float, float, float, float]]:
    """Ruled tables of a pdfplumber page: the lines strategy is cheap on pages without edges."""
    if not (page.lines or page.rects):
        return []
    return [table.bbox for table in page.find_tables()]


def _in_any(line: _Line, boxes: Iterable[tuple[float, float, float, float]]) -> bool:
    middle = (line.top + line.bottom) / 2
    return any(top <= middle <= bottom for (_x0, top, _x1, bottom) in boxes)


def _line_words(line: _Line, geometry: PageGeometry) -> list[Word]:
    """The words of one text line with their boxes. The line's characters carry positions
    but no spaces; a space in the line's text between two characters ends a word."""
    left, upper = geometry.bbox[0], geometry.bbox[1]
    if line.words:
        width, height = geometry.width, geometry.height
        if width <= 0 or height <= 0:
            return [(text, 0.0, 0.0, 0.0, 0.0) for text, *_box in line.words]
        return word_fractions(line.words, left, upper, width, height)
    words: list[Word] = []
    current: list[Any] | None = None  # [text, x0, top, x1, bottom] in points
    cursor = 0
    for char in line.chars:
        piece = LIGATURES.get(char.text, char.text)
        if not piece.strip():
            continue
        at = line.text.find(piece, cursor)
        if at < 0:
            continue
        if current is None or at > cursor:
            if current is not None:
                words.append(_word_in_fractions(current, geometry, left, upper))
            current = [piece, char.x0, char.top, char.x1, char.bottom]
        else:
            current[0] += piece
            current[1] = min(current[1], char.x0)
            current[2] = min(current[2], char.top)
            current[3] = max(current[3], char.x1)
            current[4] = max(current[4], char.bottom)
        cursor = at + len(piece)
    if current is not None:
        words.append(_word_in_fractions(current, geometry, left, upper))
    return words


def _word_in_fractions(word: list[Any], geometry: PageGeometry, left: float, upper: float) -> Word:
    text, x0, top, x1, bottom = word
    return (
        text,
        fraction(x0 - left, geometry.width),
        fraction(top - upper, geometry.height),
        fraction(x1 - left, geometry.width),
        fraction(bottom - upper, geometry.height),
    )


class _Plumber:
    """The same file opened with pdfplumber, only when a page needs it: to read a whole page
    PDFium cannot read exactly, or for the table finder when PDFium could not read a page's
    paths. Most documents never pay for pdfminer's parse."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pdf: Any = None

    def _page(self, number: int) -> Any:
        if self._pdf is None:
            self._pdf = pdfplumber.open(io.BytesIO(self._data))
        return self._pdf.pages[number - 1]

    def table_boxes(self, number: int) -> list[tuple[float, float, float, float]]:
        try:
            page = self._page(number)
            try:
                return _table_boxes(page)
            finally:
                page.close()
        except Exception:  # a table is a block type, never a reason to refuse a page
            return []

    def text_layer_page(self, number: int) -> PageContent:
        page = self._page(number)
        try:
            return _plumber_text_layer_page(page, number)
        finally:
            page.close()

    def close(self) -> None:
        if self._pdf is not None:
            self._pdf.close()


def _pdfium_table_boxes(page: Any) -> list[tuple[float, float, float, float]] | None:
    try:
        return page_table_boxes(page)
    except Exception:  # a table is a block type, never a reason to refuse a page
        return None


def _text_layer_page(page: Any, number: int, plumber: _Plumber) -> PageContent:
    geometry = page_geometry(page)
    with PDFIUM_LOCK:
        textpage = page.get_textpage()
        try:
            found, exact = page_lines(page, textpage)
        finally:
            textpage.close()
        table_boxes = _pdfium_table_boxes(page) if exact else None
    if not exact:
        return plumber.text_layer_page(number)
    lines = _reading_order(found)
    if not lines:
        table_boxes = []
    elif table_boxes is None:  # PDFium could not read the paths: ask pdfminer
        table_boxes = plumber.table_boxes(number)
    return _layout_page(
        number,
        lines,
        table_boxes,
        line_words=lambda line: _line_words(line, geometry),
        width=geometry.width,
        height=geometry.height,
    )


def _layout_page(
    number: int,
    lines: list[_Line],
    table_boxes: list[tuple[float, float, float, float]],
    *,
    line_words: Callable[[_Line], list[Word]],
    width: float,
    height: float,
) -> PageContent:
    """A text-layer page from its lines, whichever reader found them: paragraphs in reading
    order, block types (a paragraph inside a ruled table is a table), word boxes."""
    paragraphs: list[str] = []
    block_types: list[str] = []
    words: list[Word] = []
    for text, block_type, block in group_lines(lines):
        paragraphs.append(text)
        in_table = table_boxes and _in_any(block[0], table_boxes)
        block_types.append(TABLE if in_table else block_type)
        for line in block:
            words.extend(line_words(line))
    content = PageContent(
        number=number,
        paragraphs=paragraphs,
        block_types=block_types,
        has_tables=bool(table_boxes),
        width=float(width),
        height=float(height),
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


def _extract_pdf_pdfium(
    data: bytes,
    *,
    ocr: OcrEngine | None,
    min_text_chars: int = 20,
    dpi: int = 300,
    on_page: Callable[[int, int], None] | None = None,
) -> list[PageContent]:
    """PDFium reads the text layer and the ruled lines of tables; pdfplumber reads only the
    pages PDFium cannot read as pdfminer does (and the tables of a page whose paths PDFium
    could not read)."""
    pages: list[PageContent] = []
    try:
        with PDFIUM_LOCK:
            pdf = pdfium.PdfDocument(data)
            total = len(pdf)
    except Exception as exc:  # PdfiumError: damaged, not a PDF, or protected by a password
        raise UnreadableDocument(
            "The PDF could not be opened: it is damaged or protected."
        ) from exc
    plumber = _Plumber(data)
    try:
        for index in range(1, total + 1):
            page: Any = None
            try:
                with _page_errors(index):
                    with PDFIUM_LOCK:
                        page = pdf[index - 1]
                    content = _text_layer_page(page, index, plumber)
                    engine = _ocr_for(content, index, min_text_chars=min_text_chars, ocr=ocr)
                    if engine is not None:
                        content = _ocr_page(page, index, ocr=engine, dpi=dpi)
            finally:
                if page is not None:
                    with PDFIUM_LOCK:
                        page.close()  # frees the page: memory stays flat on long files
            pages.append(content)
            if on_page is not None:
                on_page(index, total)
    finally:
        plumber.close()
        with PDFIUM_LOCK:
            pdf.close()
    return pages


# The legacy pdfplumber reader, kept while the PDFium reader does not yet give the same
# paragraphs on every page of the dev corpus (manage.py compare_ingestion measures it).
def _plumber_lines_of(page: Any) -> list[_Line]:
    raw = page.extract_text_lines(strip=True, return_chars=True)
    return _reading_order(
        [
            _Line(
                text=item["text"],
                x0=item["x0"],
                top=item["top"],
                bottom=item["bottom"],
                chars=tuple(item["chars"]),
            )
            for item in raw
        ]
    )


def _plumber_line_words(line: _Line, page: Any) -> list[Word]:
    """The words of one text line with their boxes. The line's characters carry positions
    but no spaces; a space in the line's text between two characters ends a word."""
    left, upper = page.bbox[0], page.bbox[1]
    words: list[Word] = []
    current: list[Any] | None = None  # [text, x0, top, x1, bottom] in points
    cursor = 0
    for char in line.chars:
        piece = PLUMBER_LIGATURES.get(char["text"], char["text"])
        if not piece.strip():
            continue
        at = line.text.find(piece, cursor)
        if at < 0:
            continue
        if current is None or at > cursor:
            if current is not None:
                words.append(_plumber_word_in_fractions(current, page, left, upper))
            current = [piece, char["x0"], char["top"], char["x1"], char["bottom"]]
        else:
            current[0] += piece
            current[1] = min(current[1], char["x0"])
            current[2] = min(current[2], char["top"])
            current[3] = max(current[3], char["x1"])
            current[4] = max(current[4], char["bottom"])
        cursor = at + len(piece)
    if current is not None:
        words.append(_plumber_word_in_fractions(current, page, left, upper))
    return words


def _plumber_word_in_fractions(word: list[Any], page: Any, left: float, upper: float) -> Word:
    text, x0, top, x1, bottom = word
    return (
        text,
        fraction(x0 - left, page.width),
        fraction(top - upper, page.height),
        fraction(x1 - left, page.width),
        fraction(bottom - upper, page.height),
    )


def _plumber_text_layer_page(page: Any, number: int) -> PageContent:
    return _layout_page(
        number,
        _plumber_lines_of(page),
        _table_boxes(page),
        line_words=lambda line: _plumber_line_words(line, page),
        width=page.width,
        height=page.height,
    )


def _plumber_ocr_page(page: Any, number: int, *, ocr: OcrEngine, dpi: int) -> PageContent:
    with PDFIUM_LOCK:
        image = page.to_image(resolution=dpi).original
    return _ocr_content(number, ocr(image), width=page.width, height=page.height)


def _extract_pdf_pdfplumber(
    data: bytes,
    *,
    ocr: OcrEngine | None,
    min_text_chars: int = 20,
    dpi: int = 300,
    on_page: Callable[[int, int], None] | None = None,
) -> list[PageContent]:
    """The reader used before PDFium: pdfminer (through pdfplumber) for every page."""
    pages: list[PageContent] = []
    try:
        pdf = pdfplumber.open(io.BytesIO(data))
    except Exception as exc:  # pdfminer wraps every parse failure
        raise UnreadableDocument(
            "The PDF could not be opened: it is damaged or protected."
        ) from exc
    with pdf:
        total = len(pdf.pages)
        for index, page in enumerate(pdf.pages, start=1):
            try:
                with _page_errors(index):
                    content = _plumber_text_layer_page(page, index)
                    engine = _ocr_for(content, index, min_text_chars=min_text_chars, ocr=ocr)
                    if engine is not None:
                        content = _plumber_ocr_page(page, index, ocr=engine, dpi=dpi)
            finally:
                page.close()  # frees the page's parsed objects: memory stays flat on long files
            pages.append(content)
            if on_page is not None:
                on_page(index, total)
    return pages


READERS = ("pdfplumber", "pdfium")


def extract_pdf(
    data: bytes,
    *,
    ocr: OcrEngine | None,
    min_text_chars: int = 20,
    dpi: int = 300,
    on_page: Callable[[int, int], None] | None = None,
    reader: str = "pdfplumber",
) -> list[PageContent]:
    """Extract every page. Pages whose text layer has fewer than ``min_text_chars``
    non-space characters are rendered and read by ``ocr``. ``reader`` picks the text-layer
    reader: "pdfplumber" (pdfminer, the reference) or "pdfium" (about 10-60x faster)."""
    if reader not in READERS:
        raise ValueError(f"Unknown PDF reader {reader!r}; expected one of {READERS}.")
    extract = _extract_pdf_pdfium if reader == "pdfium" else _extract_pdf_pdfplumber
    return extract(data, ocr=ocr, min_text_chars=min_text_chars, dpi=dpi, on_page=on_page)


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
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        controls = sum(1 for c in text if ord(c) < 32 and c not in "\n\r\t\f")
        if controls > max(5, len(text) // 100):
            return None
        return text
    return None


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
    reader: str = "pdfplumber",
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
            reader=reader,
        )
    text = decode_text(data)
    if text is None:
        raise UnreadableDocument("The file is not readable text.")
    return extract_text_file(text)
