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

from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from engine.fields import oncology
from engine.fields.finders import FINDERS, MAX_LEVEL, Hit, presence
from engine.fields.labelled import find_labelled
from engine.fields.sections import Outline
from engine.fields.support import Span, examine, in_addendum, locate, stated_without_value
from engine.fields.templates import FieldSpec, Template

FOUND = "found"
NOT_PRESENT = "not_present"
AMBIGUOUS = "ambiguous"
MISSING = "missing"
# The document names the field but gives no current value of its own (not performed, see
# addendum, a prior study's value, another specimen's): nothing is reported.
UNSUPPORTED = "unsupported"
CONFIDENCE_BY_LEVEL = {0: 0.9, 1: 0.8, 2: 0.6}
UNCONFIRMED_CONFIDENCE = 0.5  # a breast report's value whose meaning cannot be read
UNSURE_CONFIDENCE = 0.6  # a grade or margin value that speaks against itself (oncology.doubt)


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
    span: list[int] | None = None  # [page, start, end] of the value in the page's text
    unsupported: list[str] = field(default_factory=list)  # why a value was not reported
    withdrawn: Any = None  # the value an extractor gave that its span does not support
    canonical: str | None = None  # the value's meaning (``oncology``): "positive (90%, strong)"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@lru_cache(maxsize=16)
def _outline(pages: tuple[str, ...]) -> Outline:
    return Outline(list(pages))


def outline_for(pages: list[str]) -> Outline:
    """The parsed layout of these pages (cached: the loop reads the same pages many times)."""
    return _outline(tuple(pages))


# -- extraction ------------------------------------------------------------------------------------


def hits_at(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
    """Every place this field is read at exactly this level."""
    finder = FINDERS.get(spec.finder) if spec.finder else None
    if finder is None and spec.format == "text" and spec.labels != ["@first_line"]:
        finder = FINDERS["text"]
    if finder is not None:
        return finder(spec, outline, level)
    return [Hit(v, s, p) for v, s, p in find_labelled(spec, outline.pages, level)]


def _screen(
    spec: FieldSpec, outline: Outline, hits: list[Hit]
) -> tuple[list[tuple[Hit, Span | None]], list[tuple[Hit, list[str]]]]:
    """The hits whose spans support their values, with their spans; and the others, with the
    reasons."""
    kept: list[tuple[Hit, Span | None]] = []
    dropped: list[tuple[Hit, list[str]]] = []
    for hit in hits:
        values = hit.value if isinstance(hit.value, list) else [hit.value]
        supported = []
        reasons: list[str] = []
        span = None
        for value in values:
            span = locate(outline, hit.page, hit.snippet, str(value))
            why = examine(spec, outline, span, str(value))
            if why:
                reasons += why
            else:
                supported.append(value)
        if not supported:
            dropped.append((hit, list(dict.fromkeys(reasons))))
            continue
        if isinstance(hit.value, list):
            hit = Hit(supported, hit.snippet, hit.page, hit.rank, hit.offset)
        kept.append((hit, span))
    return kept, dropped


def _as_span(span: Span | None) -> list[int] | None:
    return [span.page, span.start, span.end] if span is not None else None


def _structured(spec: FieldSpec, outline: Outline, max_level: int) -> ExtractedField | None:
    """A breast report's value read from its structure (``oncology.read``): the verbatim
    value with its canonical meaning, read at the level its reading earned; or the field
    withheld (pending, an empty box); None when the structure gives nothing. When the
    finders read the same meaning, their (tighter) verbatim value and span are kept."""
    if spec.name not in oncology.FIELDS:
        return None
    reading = oncology.read(outline.pages).get(spec.name)
    if reading is None:
        return None
    finders = _find_field(spec, outline.pages, max_level=max_level, outline=outline)
    if reading.value is None:
        if finders.status == UNSUPPORTED:
            return finders
        return ExtractedField(
            spec.name,
            None,
            UNSUPPORTED,
            0.0,
            reading.snippet,
            reading.page,
            None,
            unsupported=[reading.withheld],
        )
    meaning = oncology.canonical(spec.name, finders.value) if finders.status == FOUND else None
    if (
        meaning is not None
        and reading.canonical
        and oncology.same(spec.name, reading.canonical, meaning)
    ):
        finders.canonical = reading.canonical
        # Two readings agree: the surer one's level.
        finders.level = min(reading.level, finders.level if finders.level is not None else 2)
        finders.confidence = CONFIDENCE_BY_LEVEL[finders.level]
        return finders
    span = locate(outline, reading.page, reading.snippet, reading.value)
    return ExtractedField(
        spec.name,
        reading.value,
        FOUND,
        CONFIDENCE_BY_LEVEL[reading.level],
        reading.snippet,
        reading.page,
        reading.level,
        span=_as_span(span),
        canonical=reading.canonical,
    )


def extract_field(
    spec: FieldSpec, pages: list[str], *, max_level: int, outline: Outline | None = None
) -> ExtractedField:
    outline = outline or outline_for(pages)
    found = _structured(spec, outline, max_level)
    if found is None:
        found = _find_field(spec, pages, max_level=max_level, outline=outline)
        if (
            spec.name in oncology.FIELDS
            and found.status == FOUND
            and oncology.is_breast_report(outline.pages)
        ):
            # A breast report's value its structure did not give: kept with its meaning, or,
            # when it has none (not a receptor status, a HER2 result, a grade...), as a doubt.
            found.canonical = oncology.canonical(spec.name, found.value)
            if oncology.meaning_unread(spec.name, found.value, found.canonical):
                found.confidence = min(found.confidence, UNCONFIRMED_CONFIDENCE)
    if found.status == FOUND and oncology.doubt(spec.name, outline.pages, found.value):
        # A grade or margin value that speaks against itself: kept, not vouched for.
        found.confidence = min(found.confidence, UNSURE_CONFIDENCE)
    return found


def _find_field(
    spec: FieldSpec, pages: list[str], *, max_level: int, outline: Outline
) -> ExtractedField:
    rejected: list[tuple[Hit, list[str]]] = []
    for level in range(0, max_level + 1):
        found, dropped = _screen(spec, outline, hits_at(spec, outline, level))
        rejected += dropped
        if not found:
            continue
        hits = [hit for hit, _ in found]
        spans = {id(hit): span for hit, span in found}
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
                spec.name,
                merged,
                FOUND,
                confidence,
                first.snippet,
                first.page,
                level,
                snippets,
                _as_span(spans[id(first)]),
            )
        if spec.finder:
            # An addendum's value supersedes the report's first reading of it.
            addenda = [h for h in hits if (sp := spans[id(h)]) and in_addendum(outline, sp)]
            best = min(addenda or hits, key=lambda h: (h.rank, h.page, h.offset))
            return ExtractedField(
                spec.name,
                best.value,
                FOUND,
                confidence,
                best.snippet,
                best.page,
                level,
                span=_as_span(spans[id(best)]),
            )
        first = hits[0]
        distinct = {str(h.value).lower() for h in hits}
        if len(distinct) > 1 and spec.format not in {"text", "date"}:
            return ExtractedField(
                spec.name,
                first.value,
                AMBIGUOUS,
                0.5,
                first.snippet,
                first.page,
                level,
                span=_as_span(spans[id(first)]),
            )
        return ExtractedField(
            spec.name,
            first.value,
            FOUND,
            confidence,
            first.snippet,
            first.page,
            level,
            span=_as_span(spans[id(first)]),
        )
    if rejected:
        # The document names the field, but no mention of it holds a current value of its
        # own: nothing is reported, and the reason is kept.
        hit, _reasons = rejected[0]
        return ExtractedField(
            spec.name,
            None,
            UNSUPPORTED,
            0.0,
            hit.snippet,
            hit.page,
            None,
            unsupported=list(dict.fromkeys(r for _, rs in rejected for r in rs)),
        )
    cue = presence(spec, outline)
    if cue is not None and (why := stated_without_value(spec, outline, cue)):
        # "ER: not performed", "HER2: see addendum" (and no addendum): the field is stated,
        # with no value to report.
        return ExtractedField(
            spec.name, None, UNSUPPORTED, 0.0, cue.snippet, cue.page, None, unsupported=why
        )
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
