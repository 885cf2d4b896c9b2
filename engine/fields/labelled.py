"""Fields without a finder: a label and a value of the field's format after it, on its line
or below it (forms, tax boxes), or at level 2 the value's own pattern anywhere. Pure: no
Django. Read by the clinical finders (engine.fields.finders) and the offline extractor."""

from __future__ import annotations

import re
from typing import Any

from engine.fields.templates import FieldSpec

MIN_UNLABELLED_CHARS = 4
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


def _label_pattern(labels: list[str]) -> re.Pattern[str]:
    alternation = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    return re.compile(rf"(?<![\w])(?:{alternation})(?![\w])", re.IGNORECASE)


def parse_value(spec: FieldSpec, text: str) -> Any:
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


def find_labelled(spec: FieldSpec, pages: list[str], level: int) -> list[tuple[Any, str, int]]:
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
                    value = parse_value(spec, tail)
                    if value is not None:
                        hits.append((value, text[line_start:line_end].strip(), number))
                elif not re.sub(r"\([^)\n]*\)", "", tail).strip(" \t:-"):  # "... (EIN)"
                    a, b = _section_after(text, line_end)
                    value = parse_value(spec, text[a:b])
                    if value is not None:
                        hits.append((value, text[match.start() : b].strip(), number))
        elif spec.format in DISTINCTIVE:
            value = parse_value(spec, text) if spec.multiple else None
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
                        (
                            parse_value(spec, found.group(0)) or found.group(0),
                            text[a:b].strip(),
                            number,
                        )
                    )
    return hits


def _snippet_for(text: str, values: list[str]) -> str:
    first = text.find(values[0])
    a, b = _line_bounds(text, first, first + len(values[0]))
    return text[a:b].strip()
