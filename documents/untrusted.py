"""What runs inside the sandbox (documents.sandbox) on an uploaded file. Pure (no Django).

Three entry points, one per place a file is parsed: ``pdf_facts`` (the upload check: page
count, encryption and page sizes, read by PDFium, which does not walk the page tree object by
object the way pdfminer does; ``pdf_facts_many`` for a batch of uploads), ``extract_checked``
(ingestion, OCR included) and ``render_checked`` (a page's images). The last two look at the page
geometry first: pages larger than the limit are refused, and the resolution is lowered so that
no page image has more than ``max_pixels`` pixels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# Imported here, in the parent, on purpose: a library first imported in the child would be
# mapped under the child's address-space limit and could fail to load.
import pypdfium2 as pdfium

from documents.images import render_page_pngs
from documents.pages import (
    UnreadableDocument,
    decode_text,
    extract_file,
    text_page_count,
    throttled,
)

POINTS_PER_INCH = 72
PROGRESS_INTERVAL = 0.2  # seconds between two progress reports to the parent
_PDFIUM_NO_ERROR, _PDFIUM_PASSWORD = 0, 4  # FPDF_ERR_SUCCESS, FPDF_ERR_PASSWORD


@dataclass(frozen=True)
class PdfFacts:
    page_count: int
    encrypted: bool = False
    damaged: bool = False
    # (page number, width, height) of the first page larger than the limit, if any.
    oversized: tuple[int, float, float] | None = None


def capped_dpi(width: float, height: float, *, dpi: int, max_pixels: int) -> int:
    """``dpi``, lowered so that a ``width`` x ``height`` point page renders to at most
    ``max_pixels`` pixels."""
    area = max(width, 1.0) * max(height, 1.0) / (POINTS_PER_INCH * POINTS_PER_INCH)
    return max(1, min(dpi, math.floor(math.sqrt(max_pixels / area))))


def _open(data: bytes) -> Any:
    return pdfium.PdfDocument(data)


def _sizes(pdf: Any) -> list[tuple[float, float]]:
    return [tuple(pdf.get_page_size(index)) for index in range(len(pdf))]


def _oversized(
    sizes: list[tuple[float, float]], max_points: float
) -> tuple[int, float, float] | None:
    for number, (width, height) in enumerate(sizes, start=1):
        if width > max_points or height > max_points:
            return (number, width, height)
    return None


def pdf_facts(data: bytes, *, max_pages: int, max_points: float) -> PdfFacts:
    """Page count, encryption and the first oversized page (sizes are read only when the
    count is within ``max_pages``)."""
    try:
        pdf = _open(data)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code == _PDFIUM_NO_ERROR:  # PDFium will not load a file without pages
            return PdfFacts(page_count=0)
        encrypted = code == _PDFIUM_PASSWORD
        return PdfFacts(page_count=0, encrypted=encrypted, damaged=not encrypted)
    try:
        count = len(pdf)
        oversized = _oversized(_sizes(pdf), max_points) if count <= max_pages else None
        return PdfFacts(page_count=count, oversized=oversized)
    except Exception:
        # The file opens but its pages do not load: a page tree that refers back to itself or
        # to an ancestor, kids that are not pages, a count that lies. Damaged, not a crash.
        return PdfFacts(page_count=0, damaged=True)
    finally:
        pdf.close()


@dataclass(frozen=True)
class TextFacts:
    """What the upload check learns of a text file. ``readable``: it decodes as text;
    ``blank``: it has no visible character; ``page_count``: its pages (form feeds part them);
    ``longest``: (page number, characters) of the first page over the limit, if any."""

    readable: bool
    blank: bool = False
    page_count: int = 0
    longest: tuple[int, int] | None = None


# What str.strip() removes among ASCII characters (the separators \x1c-\x1f included).
_ASCII_SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


def _content_end(data: bytes) -> int:
    """The index just after the last byte that is not ASCII white space (0: none), found
    from the end a chunk at a time."""
    end = len(data)
    while end > 0:
        start = max(0, end - 65536)
        kept = data[start:end].rstrip(_ASCII_SPACE)
        if kept:
            return start + len(kept)
        end = start
    return 0


def text_facts(data: bytes, *, max_pages: int, max_page_chars: int) -> TextFacts:
    """A text upload's facts, counted without building a page: a file with more pages than
    ``max_pages`` is not split at all (20 MB of form feeds would be ten million pages), and
    page lengths are measured only when the count is within the limit.

    Counted on the bytes where that gives the same answer (a form feed is one byte in UTF-8 and
    cp1252; an ASCII file has as many characters as bytes), so a 20 MB file is refused in a few
    passes at memory speed rather than after decoding it. The byte count of pages strips only
    ASCII white space at the end: it is never below what extraction makes (equal for ASCII)."""
    if not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        # No copy of the 20 MB: a loaded machine spends its time faulting in fresh pages.
        end = _content_end(data)
        count = data.count(b"\f", 0, end) + 1
        if count > max_pages:
            return TextFacts(readable=True, page_count=count)
        if data.isascii():
            start = 0
            for number in range(1, count + 1):
                stop = data.find(b"\f", start) if number < count else len(data)
                if stop - start > max_page_chars:
                    longest = (number, stop - start)
                    return TextFacts(readable=True, page_count=count, longest=longest)
                start = stop + 1
            if decode_text(data) is None:
                return TextFacts(readable=False)
            return TextFacts(readable=True, blank=end == 0, page_count=count)
    text = decode_text(data)
    if text is None:
        return TextFacts(readable=False)
    if not text.strip():
        return TextFacts(readable=True, blank=True)
    count = text_page_count(text)
    if count > max_pages:
        return TextFacts(readable=True, page_count=count)
    for number, page in enumerate(text.split("\f", count - 1), start=1):
        if len(page) > max_page_chars:
            return TextFacts(readable=True, page_count=count, longest=(number, len(page)))
    return TextFacts(readable=True, page_count=count)


def pdf_facts_many(
    datas: Sequence[bytes], *, max_pages: int, max_points: float
) -> list[PdfFacts | None]:
    """``pdf_facts`` of several files, in order; None for a file on which it raised (the
    caller checks that one again alone, to report what stopped it)."""
    found: list[PdfFacts | None] = []
    for data in datas:
        try:
            found.append(pdf_facts(data, max_pages=max_pages, max_points=max_points))
        except Exception:
            found.append(None)
    return found


def oversized_message(oversized: tuple[int, float, float], max_points: float) -> str:
    number, width, height = oversized
    return (
        f"page {number} is {width / POINTS_PER_INCH:.0f} x {height / POINTS_PER_INCH:.0f} "
        f"inches; pages up to {max_points / POINTS_PER_INCH:.0f} inches on a side are accepted"
    )


def extract_checked(
    name: str,
    data: bytes,
    *,
    ocr: Any | None,
    min_text_chars: int,
    dpi: int,
    max_points: float,
    max_pixels: int,
    report: Callable[[Any], None] | None = None,
) -> list[Any]:
    """documents.pages.extract_file, after a look at the page geometry. OCR renders at
    ``dpi`` lowered to fit the largest page in ``max_pixels``; tesseract, started from the
    child, runs under the child's limits."""
    is_pdf = name.lower().endswith(".pdf")
    if is_pdf:
        try:
            pdf = _open(data)
        except Exception as exc:
            raise UnreadableDocument(
                "The PDF could not be opened: it is damaged or protected."
            ) from exc
        try:
            sizes = _sizes(pdf)
        except Exception as exc:  # pages that do not load (see pdf_facts)
            raise UnreadableDocument(
                "The PDF could not be read: its pages are damaged. Upload the original file "
                "again, or print it to a new PDF and upload that."
            ) from exc
        finally:
            pdf.close()
        oversized = _oversized(sizes, max_points)
        if oversized is not None:
            raise UnreadableDocument(
                f"The PDF cannot be read: {oversized_message(oversized, max_points)}."
            )
        for width, height in sizes:
            dpi = capped_dpi(width, height, dpi=dpi, max_pixels=max_pixels)

    on_page = None
    if report is not None:
        reported = report  # each report wakes the parent
        on_page = throttled(lambda done, total: reported((done, total)), PROGRESS_INTERVAL)

    try:
        return extract_file(
            name,
            data,
            ocr=ocr,
            min_text_chars=min_text_chars,
            dpi=dpi,
            on_page=on_page,
        )
    except UnreadableDocument as exc:
        # The reader calls any failure on a page "damaged"; running out of the memory limit
        # is reported as such by the sandbox instead.
        if _out_of_memory(exc):
            raise MemoryError from None
        raise


def _out_of_memory(exc: BaseException) -> bool:
    """Whether a failure was an allocation refused under the memory limit: a MemoryError, or
    zlib's "Unable to allocate output buffer", however deep the parsers wrapped it."""
    seen: list[BaseException] = []
    pending: list[Any] = [exc]
    while pending:
        current = pending.pop()
        if not isinstance(current, BaseException) or any(current is s for s in seen):
            continue
        seen.append(current)
        if isinstance(current, MemoryError) or "unable to allocate" in str(current).lower():
            return True
        pending += [current.__cause__, current.__context__, *current.args]
    return False


def render_checked(
    data: bytes, number: int, *, dpis: Sequence[int], max_pixels: int
) -> list[bytes]:
    """Page ``number`` as PNG at each of ``dpis`` (documents.images.render_page_pngs), each
    lowered to fit ``max_pixels``."""
    pdf = _open(data)
    try:
        width, height = pdf.get_page_size(number - 1)
    finally:
        pdf.close()
    return render_page_pngs(
        data,
        number,
        dpis=[capped_dpi(width, height, dpi=dpi, max_pixels=max_pixels) for dpi in dpis],
    )
