"""Deterministic field extraction from a template's finders, formats and labels. Pure: no
Django.

Three search levels, tried in order for each field (see ``finders`` for what each level reads
for clinical fields):
  0. labels and sections: a label and its value on the same line ("Nottingham grade 2",
     "ER: positive"), the text of the section under a header ("FINDINGS" then the paragraph);
  1. label lines on forms (the value on the next line) and sentences that name the field;
  2. the value's own pattern anywhere (a date, an SSN, "MSS", "poorly differentiated").
A single pass uses level 0 only. The optimizer raises the level for the fields the evaluator
flags, so each iteration can find more without re-deciding what it already found.

A field whose label, section or cue is on the page but whose value was not read is
``missing``; ``not_present`` means the document does not state it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from engine.fields.finders import FINDERS, MAX_LEVEL, Hit, presence
from engine.fields.sections import Outline
from engine.fields.templates import FieldSpec, Template

FOUND = "found"
NOT_PRESENT = "not_present"
AMBIGUOUS = "ambiguous"
MISSING = "missing"
MIN_UNLABELLED_CHARS = 4
CONFIDENCE_BY_LEVEL = {0: 0.9, 1: 0.8, 2: 0.6}

_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
FORMAT_PATTERNS: dict[str, str] = {
    "number": r"-?\d+(?:\.\d+)?",
    "percentage": r"\d{1,3}(?:\.\d+)?\s*%",
    "date": (
        r"\b(?:\d{1,2}/\d{1,2}/\d{2,4}|\d{4}-\d{2}-\d{2}"
        rf"|{_MONTHS}\s+\d{{1,2}},?\s+\d{{4}}|\d{{1,2}}\s+{_MONTHS}\s+\d{{4}})\b"
    ),
    # An amount shows it is money: a dollar sign, thousands separators or cents (a bare "3"
    # next to a label is the form's box number).
    "currency": r"\$\s?\d[\d,]*(?:\.\d{2})?|\b\d{1,3}(?:,\d{3})+(?:\.\d{2})?|\b\d+\.\d{2}\b",
    "ssn": r"\b(?:\d{3}|[Xx*]{3})-(?:\d{2}|[Xx*]{2})-\d{4}\b",
    "ein": r"\b\d{2}-\d{7}\b",
    "year": r"\b(?:19|20)\d{2}\b",
    "measurement": r"\b\d+(?:\.\d+)?(?:\s*[x\u00d7]\s*\d+(?:\.\d+)?)*\s*(?:mm|cm|ml|mL)\b",
}
# A free-text value follows its label after ":", " - ", an en or em dash, or "=".
_LABEL_SEPARATOR = re.compile(r"\s*(?::|-\s|\u2013|\u2014|=)")
# Formats whose values are distinctive enough to be found without a label (level 2).
DISTINCTIVE = {"date", "ssn", "ein", "measurement", "enum", "regex"}


@dataclass
class ExtractedField:
    name: str
    value: Any = None  # str, list[str] for multiple fields, or None
    status: str = NOT_PRESENT
    confidence: float = 0.0
    snippet: str = ""
    page: int | None = None
    level: int | None = None
    snippets: list[str] = field(default_factory=list)  # one per value of a multiple field

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@lru_cache(maxsize=16)
def _outline(pages: tuple[str, ...]) -> Outline:
    return Outline(list(pages))


def outline_for(pages: list[str]) -> Outline:
    """The parsed layout of these pages (cached: the loop reads the same pages many times)."""
    return _outline(tuple(pages))


# -- fields without a finder: labels and the value's format (forms, tax boxes) ---------------------


def _label_pattern(labels: list[str]) -> re.Pattern[str]:
    alternation = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    return re.compile(rf"(?<![\w])(?:{alternation})(?![\w])", re.IGNORECASE)


def _parse(spec: FieldSpec, text: str) -> Any:
    """The value of this field's format at the start of ``text``, or None."""
    text = text.strip().lstrip(":-\u2013\u2014=#").strip()
    if not text:
        return None
    if spec.format == "text":
        return text[:300].strip() or None
    if spec.format == "enum":
        lowered = text.lower()
        hits = [(lowered.find(v.lower()), v) for v in spec.values if v.lower() in lowered]
        return min(hits)[1] if hits else None
    pattern = spec.pattern if spec.format == "regex" else FORMAT_PATTERNS[spec.format]
    flags = 0 if spec.format == "regex" else re.IGNORECASE
    if spec.multiple:
        values = [m.group(0).strip() for m in re.finditer(pattern, text, flags)]
        return values or None
    match = re.search(pattern, text, flags)
    return match.group(0).strip() if match else None


def _line_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    a = text.rfind("\n", 0, start) + 1
    b = text.find("\n", end)
    return a, len(text) if b < 0 else b


def _section_after(text: str, end: int) -> tuple[int, int]:
    """The paragraph that follows the line ending at ``end`` (blank lines separate them)."""
    start = end
    while start < len(text) and text[start] in "\n \t:":
        start += 1
    stop = text.find("\n\n", start)
    return start, len(text) if stop < 0 else stop


def _find(spec: FieldSpec, pages: list[str], level: int) -> list[tuple[Any, str, int]]:
    """(value, verbatim snippet, page) for every place this level finds the field."""
    hits: list[tuple[Any, str, int]] = []
    if spec.labels == ["@first_line"]:
        for number, text in enumerate(pages, start=1):
            for line in text.splitlines():
                if line.strip():
                    return [(line.strip()[:200], line.strip()[:200], number)]
        return []
    labels = _label_pattern(spec.labels)
    for number, text in enumerate(pages, start=1):
        if level <= 1:
            for match in labels.finditer(text):
                line_start, line_end = _line_bounds(text, match.start(), match.end())
                tail = text[match.end() : line_end]
                if level == 0:
                    if spec.format == "text" and not _LABEL_SEPARATOR.match(tail):
                        continue  # a label word inside a sentence is not a field label
                    value = _parse(spec, tail)
                    if value is not None:
                        hits.append((value, text[line_start:line_end].strip(), number))
                elif not re.sub(r"\([^)\n]*\)", "", tail).strip(" \t:-"):  # "... (EIN)"
                    a, b = _section_after(text, line_end)
                    value = _parse(spec, text[a:b])
                    if value is not None:
                        hits.append((value, text[match.start() : b].strip(), number))
        elif spec.format in DISTINCTIVE:
            value = _parse(spec, text) if spec.multiple else None
            if spec.multiple and value:
                hits.append((value, _snippet_for(text, value), number))
            elif not spec.multiple:
                pattern = (
                    spec.pattern
                    if spec.format == "regex"
                    else "|".join(re.escape(v) for v in spec.values)
                    if spec.format == "enum"
                    else FORMAT_PATTERNS[spec.format]
                )
                flags = 0 if spec.format == "regex" else re.IGNORECASE
                # Without its label, a short value ("2") is not evidence of anything.
                found = next(
                    (
                        m
                        for m in re.finditer(pattern, text, flags)
                        if len(m.group(0).strip()) >= MIN_UNLABELLED_CHARS
                    ),
                    None,
                )
                if found:
                    a, b = _line_bounds(text, found.start(), found.end())
                    hits.append(
                        (_parse(spec, found.group(0)) or found.group(0), text[a:b].strip(), number)
                    )
    return hits


def _snippet_for(text: str, values: list[str]) -> str:
    first = text.find(values[0])
    a, b = _line_bounds(text, first, first + len(values[0]))
    return text[a:b].strip()


def labelled_format_hits(spec: FieldSpec, outline: Outline) -> list[Hit]:
    """A label with a value of the field's format after it, on its line or below it (the
    presence of a form's box that is filled in)."""
    hits = _find(spec, outline.pages, 0) or _find(spec, outline.pages, 1)
    return [Hit(v, s, p) for v, s, p in hits]


# -- extraction ------------------------------------------------------------------------------------


def hits_at(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
    """Every place this field is read at exactly this level."""
    finder = FINDERS.get(spec.finder) if spec.finder else None
    if finder is None and spec.format == "text" and spec.labels != ["@first_line"]:
        finder = FINDERS["text"]
    if finder is not None:
        return finder(spec, outline, level)
    return [Hit(v, s, p) for v, s, p in _find(spec, outline.pages, level)]


def extract_field(
    spec: FieldSpec, pages: list[str], *, max_level: int, outline: Outline | None = None
) -> ExtractedField:
    outline = outline or outline_for(pages)
    for level in range(0, max_level + 1):
        hits = hits_at(spec, outline, level)
        if not hits:
            continue
        confidence = CONFIDENCE_BY_LEVEL[level]
        if spec.multiple:
            merged: list[str] = []
            snippets: list[str] = []
            for hit in hits:
                for v in hit.value if isinstance(hit.value, list) else [hit.value]:
                    if v not in merged:
                        merged.append(v)
                        snippets.append(hit.snippet)
            first = hits[0]
            return ExtractedField(
                spec.name, merged, FOUND, confidence, first.snippet, first.page, level, snippets
            )
        if spec.finder:
            best = min(hits, key=lambda h: (h.rank, h.page, h.offset))
            return ExtractedField(
                spec.name, best.value, FOUND, confidence, best.snippet, best.page, level
            )
        first = hits[0]
        distinct = {str(h.value).lower() for h in hits}
        if len(distinct) > 1 and spec.format not in {"text", "date"}:
            return ExtractedField(
                spec.name, first.value, AMBIGUOUS, 0.5, first.snippet, first.page, level
            )
        return ExtractedField(
            spec.name, first.value, FOUND, confidence, first.snippet, first.page, level
        )
    cue = presence(spec, outline)
    if cue is not None:
        # The document states this field (its label or cue is on the page) but no value was
        # read: report it as missing, with the text that shows it is there.
        return ExtractedField(spec.name, None, MISSING, 0.0, cue.snippet, cue.page, None)
    return ExtractedField(spec.name)


def extract(
    template: Template,
    pages: list[str],
    *,
    levels: dict[str, int] | None = None,
    default_level: int = 0,
) -> dict[str, ExtractedField]:
    """Extract every field; ``levels`` raises the search level of chosen fields."""
    levels = levels or {}
    outline = outline_for(pages)
    return {
        spec.name: extract_field(
            spec,
            pages,
            max_level=min(MAX_LEVEL, levels.get(spec.name, default_level)),
            outline=outline,
        )
        for spec in template.fields
    }
