"""Word boxes: where each word of a page's text is drawn on the page. Pure (no Django).

The representation, stored in ``Page.boxes`` and filled at ingestion for every PDF page
(text layer and OCR alike), is a list of words in reading order::

    [[start, end, x0, top, x1, bottom], ...]

``start``/``end`` are character offsets into ``Page.text`` (``text[start:end]`` is the word as
stored), and ``x0, top, x1, bottom`` are the word's box as fractions (0..1, four decimals) of
the page's width and height, measured from its top-left corner. Fractions keep the boxes
independent of the resolution a page image is rendered at. Any span of the page text (an
evidence snippet grounded exactly or fuzzily, an extracted field) maps to boxes without
searching the PDF again. Whatever reads PDFs must fill the same field the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# A word as a reader sees it: its text and its box in page fractions.
Word = tuple[str, float, float, float, float]
Box = list[float]  # [start, end, x0, top, x1, bottom]
Rect = tuple[float, float, float, float]  # x0, top, x1, bottom (fractions)

_LINE_TOLERANCE = 0.004  # words whose tops differ by less than this share a line


def fraction(value: float, size: float) -> float:
    return round(min(1.0, max(0.0, value / size)), 4) if size > 0 else 0.0


def align_words(text: str, words: Iterable[Word]) -> list[Box]:
    """Give each word its offsets in ``text``, searching forward from the previous word.

    Words come in the order they were written into the text; a word that cannot be found
    (which a reader should never produce) is left out rather than mapped to a wrong place."""
    boxes: list[Box] = []
    cursor = 0
    for word, x0, top, x1, bottom in words:
        if not word:
            continue
        at = text.find(word, cursor)
        if at < 0:
            continue
        cursor = at + len(word)
        boxes.append([at, cursor, x0, top, x1, bottom])
    return boxes


def span_rects(boxes: Sequence[Sequence[float]], start: int, end: int) -> list[Rect]:
    """The rectangles covering the words that overlap ``text[start:end]``, one per line."""
    rects: list[list[float]] = []
    for box in boxes:
        word_start, word_end, x0, top, x1, bottom = box
        if word_end <= start or word_start >= end:
            continue
        last = rects[-1] if rects else None
        if last is not None and abs(last[1] - top) < _LINE_TOLERANCE and x0 >= last[0]:
            last[2] = max(last[2], x1)
            last[3] = max(last[3], bottom)
        else:
            rects.append([x0, top, x1, bottom])
    return [(r[0], r[1], r[2], r[3]) for r in rects]
