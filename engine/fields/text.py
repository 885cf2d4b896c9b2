"""Small text helpers shared by the finders and the evaluator: value cleaning, dates, snippets
and sentence bounds on a page. Pure: no Django."""

from __future__ import annotations

import re

from engine.fields.sections import Outline

_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
DATE = (
    r"(?:\b\d{1,2}[/-]\d{1,2}[/-](?:\d{4}|\d{2})\b|\b(?:19|20)\d{2}-\d{2}-\d{2}\b"
    rf"|\b{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+(?:19|20)\d{{2}}\b"
    rf"|\b\d{{1,2}}\s+{_MONTHS},?\s+(?:19|20)\d{{2}}\b)"
)
DATE_RE = re.compile(DATE, re.IGNORECASE)
_LEADING_JUNK = re.compile(r"^[\s,;:.\-\u2013\u2014=#*\u2022\u00b7]+")
_TRAILING_JUNK = re.compile(r"[\s,;:]+$")
_ABBREVIATIONS = frozenset(
    {"dr", "mr", "mrs", "ms", "no", "vs", "approx", "st", "fig", "e.g", "i.e"}
)
_TERMINAL = ".;!?"


_GLUED_HEADER = re.compile(r",\s*[A-Z][A-Z /]{1,30}:.*$")  # "Headache,HX: ,This 16 y/o..."


def clean(value: str) -> str:
    """One line, no leading punctuation or list markers, no trailing separators, and no next
    header glued on by a transcription ("Headache,HX: ...")."""
    value = " ".join(value.split())
    value = _GLUED_HEADER.sub("", value)
    value = _LEADING_JUNK.sub("", value)
    value = re.sub(r"^(?:\d{1,2}|[A-Za-z])[.)]\s+", "", value)  # "1. ", "A. "
    return _TRAILING_JUNK.sub("", value)


def valid_date(text: str) -> bool:
    """A numeric date's month and day are in range (either order, US or day-first)."""
    parts = re.findall(r"\d+", text)
    if len(parts) != 3 or not re.match(r"\d{1,2}[/-]\d{1,2}[/-]\d", text):
        return True  # ISO or spelled-out month: the pattern already bounds it
    a, b = int(parts[0]), int(parts[1])
    return (1 <= a <= 12 and 1 <= b <= 31) or (1 <= b <= 12 and 1 <= a <= 31)


def first_date(text: str) -> re.Match[str] | None:
    return next((m for m in DATE_RE.finditer(text) if valid_date(m.group(0))), None)


def line_span(text: str, start: int, end: int) -> tuple[int, int]:
    a = text.rfind("\n", 0, start) + 1
    b = text.find("\n", end)
    return a, len(text) if b < 0 else b


def snippet(outline: Outline, page: int, start: int, end: int) -> str:
    """The whole lines of the page that hold [start, end), verbatim."""
    text = outline.page_text(page)
    a, b = line_span(text, start, end)
    return text[a:b].strip()


def _is_boundary(text: str, i: int) -> bool:
    """Is text[i] a sentence-ending punctuation mark?"""
    if text[i] not in _TERMINAL:
        return False
    if i + 1 < len(text) and not text[i + 1].isspace():
        return False  # "3.9", "p.G12D"
    if text[i] == ".":
        word = re.search(r"([A-Za-z.]+)$", text[max(0, i - 8) : i])
        token = word.group(1).lower() if word else ""
        if len(token) == 1 or token in _ABBREVIATIONS:
            return False  # "A.", "Dr."
    return True


def _continues(text: str, newline: int) -> bool:
    """Does the line before this newline run on into the next one (a wrapped sentence)?"""
    before = text[:newline].rstrip(" \t")
    after = text[newline + 1 :].lstrip(" \t")
    return bool(before) and before[-1] not in _TERMINAL + ":" and after[:1].islower()


def sentence(text: str, start: int, end: int, *, limit: int = 400) -> tuple[int, int]:
    """Bounds of the sentence holding [start, end); wrapped lines are followed."""
    a = start
    while a > 0 and start - a < limit:
        prev = text[a - 1]
        if prev == "\n" and not _continues(text, a - 1):
            break
        if _is_boundary(text, a - 1):
            break
        a -= 1
    b = end
    while b < len(text) and b - end < limit:
        if text[b] == "\n" and not _continues(text, b):
            break
        if _is_boundary(text, b):
            b += 1
            break
        b += 1
    while a < b and text[a].isspace():
        a += 1
    return a, b
