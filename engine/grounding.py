"""Find an evidence snippet in page text, deterministically.

Both texts are normalised the same way (ligatures expanded, hyphenation at line ends joined,
case folded, runs of whitespace made one space) while keeping a map back to the original
characters, so a match is reported as a span of the page text as stored. Exact search comes
first; fuzzy alignment (rapidfuzz) with a coverage threshold catches OCR noise. A quote of text
as the model was shown it (marker-like lines neutralised by delimiting) is taken back to the
page's text by the inverse of that neutralisation (engine.neutralisation), and only that.

Pure module: no Django.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from rapidfuzz import fuzz

from engine.neutralisation import changed_by_neutralise, neutralise_mapped

LIGATURES = {
    "\ufb00": "ff",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb05": "st",
    "\ufb06": "st",
}
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2212"
_QUOTES = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}
_LINE_END_HYPHEN = re.compile(r"(?<=\w)-[ \t]*\r?\n[ \t]*(?=\w)")

_DIGITS = re.compile(r"\d+")

FUZZY_MIN_SCORE = 90.0  # rapidfuzz partial ratio, 0..100
FUZZY_MIN_LENGTH = 12  # shorter snippets must match exactly


@dataclass(frozen=True)
class Normalised:
    text: str
    offsets: list[int]  # offsets[i] = index in the original of normalised char i


@lru_cache(maxsize=256)  # the same pages are normalised by V4, the gate and the field evaluator
def normalise(original: str) -> Normalised:
    """The normal form, word by word: an ASCII word is only lower-cased (one character for
    one), so only words with other characters go through the per-character rules. The same
    result as reading every character (``_normalise_chars``), several times faster; an ASCII
    page is read whole, as arrays (``_normalise_ascii``), faster still."""
    if original.isascii():
        return _normalise_ascii(original)
    chars: list[str] = []
    offsets: list[int] = []
    pending_space = False
    # Hyphenation at a line end: "carci-\nnoma" reads as "carcinoma". The text is read in the
    # pieces between such joins; no whitespace is left at a join, so none is read there.
    pieces = []
    position = 0
    for join in _LINE_END_HYPHEN.finditer(original):
        pieces.append((position, join.start()))
        position = join.end()
    pieces.append((position, len(original)))
    for start, end in pieces:
        cursor = start
        for word in _WORD_RUN.finditer(original, start, end):
            if word.start() > cursor:
                pending_space = bool(chars)
            cursor = word.end()
            text = word.group()
            if text.isascii():
                if pending_space:
                    chars.append(" ")
                    offsets.append(word.start())
                    pending_space = False
                chars.append(text.lower())
                offsets.extend(range(word.start(), word.end()))
                continue
            for k, char in enumerate(text):
                expanded = _expand(char)
                if expanded.isspace() or not expanded:
                    pending_space = bool(chars)
                    continue
                if pending_space:
                    chars.append(" ")
                    offsets.append(word.start() + k)
                    pending_space = False
                for piece in expanded.casefold():
                    chars.append(piece)
                    offsets.append(word.start() + k)
        if end > cursor:
            pending_space = bool(chars)
    return Normalised("".join(chars), offsets)


_WORD_RUN = re.compile(r"\S+")
_ASCII_SPACE = np.array([chr(c).isspace() for c in range(256)], dtype=bool)


def _normalise_ascii(original: str) -> Normalised:
    """``normalise`` of an ASCII text with array operations: line-end hyphenation joins
    removed, whitespace at either end dropped, each run of whitespace inside made one space
    (placed at the character after the run, as the per-character reading places it), letters
    lower-cased; nothing else changes an ASCII character."""
    data = np.frombuffer(original.encode("ascii"), dtype=np.uint8)
    index = np.arange(len(data))
    joins = [(m.start(), m.end()) for m in _LINE_END_HYPHEN.finditer(original)]
    if joins:
        kept = np.ones(len(data), dtype=bool)
        for start, end in joins:
            kept[start:end] = False
        data, index = data[kept], index[kept]
    space = _ASCII_SPACE[data]
    solid = np.flatnonzero(~space)
    if not len(solid):
        return Normalised("", [])
    inside = slice(int(solid[0]), int(solid[-1]) + 1)
    data, index, space = data[inside], index[inside], space[inside]
    run_start = space.copy()
    run_start[1:] &= ~space[:-1]
    kept = ~space | run_start
    text, offsets, spaces = data[kept].copy(), index[kept].copy(), space[kept]
    text[spaces] = ord(" ")
    solid = np.flatnonzero(~space)
    offsets[spaces] = index[solid[np.searchsorted(solid, np.flatnonzero(run_start))]]
    return Normalised(text.tobytes().decode("ascii").lower(), offsets.tolist())


def _expand(char: str) -> str:
    expanded = LIGATURES.get(char)
    if expanded is None:
        char = _QUOTES.get(char, char)
        if char in _DASHES:
            char = "-"
        expanded = unicodedata.normalize("NFKC", char)
    return expanded


def _normalise_chars(original: str) -> Normalised:
    """The normal form read character by character: the definition ``normalise`` keeps to."""
    chars: list[str] = []
    offsets: list[int] = []
    joins = {m.start(): m.end() for m in _LINE_END_HYPHEN.finditer(original)}
    i = 0
    pending_space = False
    while i < len(original):
        if i in joins:
            i = joins[i]
            continue
        expanded = _expand(original[i])
        if expanded.isspace() or not expanded:
            pending_space = bool(chars)
            i += 1
            continue
        if pending_space:
            chars.append(" ")
            offsets.append(i)
            pending_space = False
        for piece in expanded.casefold():
            chars.append(piece)
            offsets.append(i)
        i += 1
    return Normalised("".join(chars), offsets)


@dataclass(frozen=True)
class Match:
    start: int  # span in the original page text
    end: int
    score: float  # 100 for exact
    method: str  # "exact" | "fuzzy"


def _span(page: Normalised, start: int, end: int, original_length: int) -> tuple[int, int]:
    if end <= start:
        return (page.offsets[start] if start < len(page.offsets) else original_length,) * 2
    return page.offsets[start], page.offsets[end - 1] + 1


def find_snippet(
    snippet: str, page_text: str, *, page_norm: Normalised | None = None
) -> Match | None:
    """Where ``snippet`` occurs in ``page_text``, or None.

    The snippet is looked for in the page, and in the page as the model was shown it (marker-like
    lines neutralised by delimiting, engine.neutralisation): a model that quotes a banner line
    such as ``*** CORRECTED REPORT ***`` quotes it with what delimiting added, and the span
    reported is the original text it stands for."""
    needle = normalise(snippet).text
    if not needle:
        return None
    page = page_norm or normalise(page_text)
    found = _exact(needle, page_text, page)
    if found is not None:
        return found
    shown = as_shown(page_text)
    if shown is not None:
        found = _exact(needle, page_text, shown)
    if found is None:
        found = _fuzzy(needle, page_text, page)
    if found is None and shown is not None:
        found = _fuzzy(needle, page_text, shown)
    return found


@lru_cache(maxsize=256)
def as_shown(page_text: str) -> Normalised | None:
    """The page as a prompt shows it, normalised, with offsets into the original page text;
    None when delimiting leaves the page as it is."""
    if not changed_by_neutralise(page_text):
        return None
    shown, to_original = neutralise_mapped(page_text)
    norm = normalise(shown)
    return Normalised(norm.text, [to_original[i] for i in norm.offsets])


def _exact(needle: str, page_text: str, page: Normalised) -> Match | None:
    index = page.text.find(needle)
    if index >= 0:
        start, end = _span(page, index, index + len(needle), len(page_text))
        return Match(start, end, 100.0, "exact")
    if needle.endswith("-") and len(needle) > 1:
        # A quote of one line that ends in a hyphenation ("carci-"): the page's normal form
        # joined the word, so look for it without the hyphen, at a place where one was.
        for found in re.finditer(re.escape(needle[:-1]), page.text):
            start, end = _span(page, found.start(), found.end(), len(page_text))
            if page_text[end : end + 1] == "-":
                return Match(start, end + 1, 100.0, "exact")
    return None


def _fuzzy(needle: str, page_text: str, page: Normalised) -> Match | None:
    if len(needle) < FUZZY_MIN_LENGTH or not page.text:
        return None
    alignment = fuzz.partial_ratio_alignment(needle, page.text, score_cutoff=FUZZY_MIN_SCORE)
    if alignment is None:
        return None
    # Coverage: the aligned stretch of the page must be about as long as the snippet.
    covered = alignment.dest_end - alignment.dest_start
    if covered < 0.9 * len(needle):
        return None
    # OCR noise may bend letters, never numbers: "grade 3" is not grounded by "grade 2".
    # The aligned window is as long as the snippet, so a dropped letter can push a trailing
    # number just outside it: let the window grow a little until the digits agree.
    wanted = _DIGITS.findall(needle)
    slack = max(3, len(needle) // 10)
    for dest_end in range(alignment.dest_end, min(len(page.text), alignment.dest_end + slack) + 1):
        if _DIGITS.findall(page.text[alignment.dest_start : dest_end]) == wanted:
            break
    else:
        return None
    start, end = _span(page, alignment.dest_start, dest_end, len(page_text))
    return Match(start, end, round(alignment.score, 1), "fuzzy")


def contains_term(term: str, page_norm: Normalised) -> bool:
    needle = normalise(term).text
    return bool(needle) and needle in page_norm.text
