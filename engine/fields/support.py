"""Does the text a value came from support it? Pure: no Django.

A value is reported only with the span it was read from, and only when that span says it is the
document's own, current value. ConText-style rules (Chapman et al.: a trigger, a direction, a
scope that ends at a clause boundary) and the report's structure decide:

  - ``negated``: the finding is denied ("no mass measuring more than 1 cm");
  - ``not_performed``: the test was not done or has no result ("ER: not performed",
    "insufficient tissue for HER2 testing", "cancelled");
  - ``deferred``: the result is elsewhere or later ("see addendum", "pending", "to follow",
    "will be reported separately");
  - ``historical``: a prior study or an earlier result ("previously 1.5 cm", "on the prior
    biopsy (S23-1234) ER was positive", a comparison or history section);
  - ``other_specimen``: the value belongs to another part of a multi-part specimen than the
    tumour's (part B's grade when part A holds the carcinoma and its own grade);
  - ``no_unit``: a measurement, a Ki-67 index or a tumour mutational burden without its unit.

medspaCy's ConText was measured for this (its default rules on the false-value classes above)
and found to miss "not performed", "see addendum", "previously measured" and comparison
sentences; these rules are the project's own, tested in tests/engine/test_support.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from engine.fields.sections import Outline
from engine.fields.templates import FieldSpec

NEGATED = "negated"
NOT_PERFORMED = "not_performed"
DEFERRED = "deferred"
HISTORICAL = "historical"
OTHER_SPECIMEN = "other_specimen"
NO_UNIT = "no_unit"
UNCERTAIN = "uncertain_significance"
PROCEDURE = "procedure"
EMPTY_BOX = "empty_box"  # a printed box or line with nothing written in it

MESSAGES = {
    NEGATED: "the text denies it",
    NOT_PERFORMED: "the test was not performed or has no result",
    DEFERRED: "the text defers the result (an addendum, a pending or separate report)",
    HISTORICAL: "the value is a prior study's or an earlier result",
    OTHER_SPECIMEN: "the value belongs to another specimen than the tumour's",
    NO_UNIT: "the value is given without its unit",
    UNCERTAIN: "a variant of unknown significance, not a reported finding",
    PROCEDURE: "the value describes how the examination was done, not a finding",
    EMPTY_BOX: "the printed box or line is empty",
}

# Finder names by kind of field.
MARKERS = frozenset({"receptor_er", "receptor_pr", "her2", "ki67", "msi", "tmb"})
TUMOUR_PROPERTIES = frozenset(
    {"histology", "grade", "margins", "receptor_er", "receptor_pr", "her2", "ki67"}
)
NARRATIVE = frozenset({"", "text", "chief_complaint"})


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_NOT_PERFORMED = _re(
    r"\b(?:not\s+(?:performed|done|tested|assessed|evaluated|evaluable|available|applicable"
    r"|reported|ordered|interpretable|determined)|n/a|unable\s+to\s+(?:perform|assess|evaluate"
    r"|determine)|cannot\s+be\s+(?:performed|assessed|evaluated|determined)|cancell?ed"
    r"|insufficient|quantity\s+not\s+sufficient|\bqns\b|no\s+(?:result|tissue|tumou?r)\s+"
    r"(?:available|remain\w*|present\s+for)|test\s+failed|failed\s+(?:qc|quality))"
)
_DEFERRED = _re(
    r"\b(?:see\s+(?:the\s+)?(?:addend\w*|comment|note|below|above|separate|attached|report)"
    r"|pending|to\s+follow|will\s+(?:be\s+)?(?:follow|reported|issued|performed|sent)"
    r"|(?:reported|issued|sent)\s+separately|in\s+(?:an?|the)\s+(?:addendum|separate\s+report)"
    r"|deferred|in\s+progress|has\s+been\s+(?:ordered|requested|sent)|ordered|requested)\b"
)
# A value that is only a deferral is no value ("IMPRESSION: See addendum.").
_ONLY_DEFERRAL = _re(
    r"^\W*(?:see\s+(?:the\s+)?(?:addend\w*|comment|note|below|above)|pending|to\s+follow"
    r"|deferred|not\s+(?:performed|done|applicable|available)|n/?a|none)\W*$"
)
# A value that says there is none ("CHIEF COMPLAINT: Unobtainable as the patient is intubated").
_NO_VALUE = _re(
    r"^\W*(?:unobtainable|unable\s+to\s+(?:obtain|assess|evaluate)|not\s+obtain(?:ed|able)"
    r"|not\s+available|unknown|none\s+(?:given|stated|obtained))\b"
)
# Before the value, in its clause: it is the past or another study.
_HISTORY_BEFORE = _re(
    r"\b(?:previous(?:ly)?|prior|formerly|earlier|history\s+of|hx\s+of|status\s+post|s/p"
    r"|outside|compared\s+(?:with|to)|comparison|baseline)\b[^;.]{0,60}$"
)
# A measurement's past: "decreased from 2.3 cm", "which was 1.5 cm", "measured 1.1 cm before".
_MEASUREMENT_PAST = _re(r"\b(?:from|was|were|had\s+been|then)\s+(?:\w+\s+){0,2}$")
# After the value, in its clause: "on the prior study", "in 2019", "at outside hospital".
_HISTORY_AFTER = _re(
    r"^[^;.]{0,50}\b(?:on\s+(?:the\s+)?(?:prior|previous|last|earlier|outside|comparison)"
    r"|(?:in|from)\s+(?:the\s+)?(?:prior|previous|earlier|outside)|previously|before|at\s+that"
    r"\s+time|at\s+(?:an\s+)?outside|in\s+(?:19|20)\d{2}\b|on\s+\d{1,2}/\d{1,2}/\d{2,4})"
)
# What ends a ConText scope before the value: the clause turns to the present.
_TERMINATE = _re(
    r"\b(?:now|currently|current|today|presently|this\s+(?:study|exam|examination|specimen)"
    r"|but|however|which\s+now|and\s+now|to|measures|measuring)\b"
)
_NEGATION_BEFORE = _re(
    r"\b(?:no|not|without|negative\s+for|absence\s+of|free\s+of|rules?\s+out|r/o|denies)\b"
    r"[^;.:]{0,40}$"
)
_HISTORY_SECTION = _re(
    r"\b(?:history|hx|indication|indications|reason|comparison|prior|previous|clinical"
    r"\s+(?:data|information))\b"
)
# A line labelled as history in title case ("Clinical history: ...") is not parsed as a section.
_HISTORY_LINE = _re(
    r"^\s*(?:clinical\s+|past\s+|previous\s+)?(?:history|hx|indications?|comparison"
    r"|reason\s+for\s+(?:exam\w*|study|referral))(?:\s+of\s+present\s+illness)?\s*:"
)
# Sections that hold what was given or lost during a procedure: their figures (contrast
# volume, blood loss) are not findings. A technique section is not one of them: transcribed
# reports run their findings on inside it (its slice thickness is left out by the finder).
_PROCEDURE_SECTION = _re(
    r"\b(?:anesthesia|anaesthesia|blood\s+loss|fluids?|medications?|contrast|dose|sedation"
    r"|complications|urine\s+output|drains?)\b"
)
_VUS = _re(r"\b(?:unknown|uncertain|undetermined)\s+significance\b|\bVUS\b")
_ADDENDUM_SECTION = _re(r"\b(?:addend\w*|amended|amendment|revised|corrected)\b")
_UNITS = {
    "measurements": _re(r"\d\s*-?\s*(?:mm|cm|ml|cc|m)\b"),
    "ki67": _re(r"%|percent"),
    "tmb": _re(r"(?:mut\w*|m)\s*/\s*mb|per\s+(?:mb|megabase)|\b(?:high|low|intermediate)\b"),
}
_CLAUSE = re.compile(r"[;.!?\n]|,\s+(?=(?:and\s+)?(?:now|previously|currently|today|but)\b)")


@dataclass(frozen=True)
class Span:
    """Where a value was read: its page (1-based) and its offsets in the page's text."""

    page: int
    start: int
    end: int


def locate(outline: Outline, page: int | None, snippet: str, value: str) -> Span | None:
    """The value's span: the snippet found on its page (any page when none is given), and the
    value inside it; the snippet's own span when the value is put together from two places."""
    from engine.grounding import find_snippet

    candidates = (
        [page] if page and 1 <= page <= len(outline.pages) else range(1, len(outline.pages) + 1)
    )
    for number in candidates:
        text = outline.page_text(number)
        if not snippet:
            continue
        found = find_snippet(snippet, text)
        if found is None:
            continue
        window = text[found.start : found.end]
        inner = _find_value(window, value)
        if inner is not None:
            return Span(number, found.start + inner[0], found.start + inner[1])
        return Span(number, found.start, found.end)
    return None


def _find_value(window: str, value: str) -> tuple[int, int] | None:
    words = [re.escape(w) for w in re.findall(r"\S+", value)]
    if not words:
        return None
    # Whole words: "1 cm" is not the end of "11 cm".
    match = re.search(r"(?<![\w.])" + r"\s+".join(words) + r"(?![\w])", window, re.IGNORECASE)
    match = match or re.search(r"\s+".join(words), window, re.IGNORECASE)
    return (match.start(), match.end()) if match else None


def _clause_before(text: str, start: int) -> str:
    head = text[max(0, start - 160) : start]
    cut = [m.end() for m in _CLAUSE.finditer(head)]
    return head[cut[-1] :] if cut else head


def _clause_after(text: str, end: int) -> str:
    """The rest of the value's clause; a parenthesis after it ("2.4 cm (previously 3.1 cm)")
    speaks of something else."""
    tail = text[end : end + 160]
    cut = _CLAUSE.search(tail)
    tail = tail[: cut.start()] if cut else tail
    paren = tail.find("(")
    return tail[:paren] if paren >= 0 else tail


def _sentence_after(text: str, end: int) -> str:
    tail = text[end : end + 200]
    cut = re.search(r"[.!?](?:\s|$)|\n\s*\n", tail)
    return tail[: cut.start()] if cut else tail


def _after_trigger(pattern: re.Pattern[str], before: str) -> bool:
    """A trigger before the value whose scope is not ended by a term that turns to the
    present ("previously 1.5 cm, now 2.1 cm": 2.1 cm is current)."""
    match = pattern.search(before)
    return match is not None and not _TERMINATE.search(before[match.end() :])


def _line_of(text: str, offset: int) -> str:
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return text[start : len(text) if end < 0 else end]


def specimen_part(outline: Outline, page: int, offset: int) -> str | None:
    """The specimen part ("A", "B", "1") of a multi-part report that this offset is under:
    the nearest part designator at a line start above it within its section."""
    text = outline.page_text(page)
    section = outline.section_of(page, offset)
    floor = section.header.line.start if section is not None else 0
    head = text[floor:offset]
    found = None
    for match in _PART.finditer(head):
        found = match.group("p").upper()
    if found is None and section is not None:
        inline = _PART_INLINE.match(section.header.name)
        if inline:
            found = inline.group("p").upper()
    return found


_PART = re.compile(
    r"(?:^|\n)[ \t]*(?:(?:part|specimen|container)\s*#?\s*)?\(?(?P<p>[A-H]|[1-9])[.):](?:[ \t]|$)",
    re.IGNORECASE,
)
_PART_INLINE = re.compile(r"^\s*(?:(?:part|specimen)\s*#?\s*)?(?P<p>[A-H]|[1-9])[.):]?\s")
_MALIGNANT = _re(
    r"\b\w*(?:carcinoma|sarcoma|melanoma|lymphoma|leuka?emia|mesothelioma|glioma|blastoma"
    r"|seminoma|myeloma|carcinoid)s?\b"
)
_DIAGNOSIS_SECTION = _re(r"\bdiagnos[ie]s\b|\bimpression\b|\binterpretation\b")


def index_part(outline: Outline) -> str | None:
    """The part of a multi-part report that holds the tumour: in the diagnosis, the first
    part whose text names a malignancy that no negation denies; None for a report of one
    part, or one that names no malignancy."""
    key = ("index_part",)
    if key in outline.memo:
        cached: str | None = outline.memo[key]
        return cached
    malignant: set[str] = set()
    parts: set[str] = set()
    for section in outline.sections:
        if not _DIAGNOSIS_SECTION.search(section.header.key):
            continue
        text = outline.page_text(section.page)
        for match in _MALIGNANT.finditer(text, section.body_start, section.body_end):
            before = _clause_before(text, match.start())
            if _NEGATION_BEFORE.search(before):
                continue
            part = specimen_part(outline, section.page, match.start())
            if part is not None:
                malignant.add(part)
        for match in _PART.finditer(text, section.body_start, section.body_end):
            parts.add(match.group("p").upper())
    # Two parts with a tumour (a biopsy and its excision): whose value is whose cannot be told
    # from the parts, so none is preferred.
    result = next(iter(malignant)) if len(malignant) == 1 and len(parts) > 1 else None
    outline.memo[key] = result
    outline.memo[("tumour_parts",)] = len(malignant)
    return result


def several_tumours(outline: Outline) -> bool:
    """More than one part of the specimen holds a tumour."""
    index_part(outline)
    count: int = outline.memo[("tumour_parts",)]
    return count > 1


def in_addendum(outline: Outline, span: Span) -> bool:
    section = outline.section_of(span.page, span.start)
    return section is not None and bool(_ADDENDUM_SECTION.search(section.header.key))


def examine(spec: FieldSpec, outline: Outline, span: Span | None, value: str) -> list[str]:
    """Why this span does not support this value of this field; empty when it does."""
    reasons: list[str] = []
    finder = spec.finder or ("text" if spec.format == "text" else spec.format)
    if not re.search(r"[^\W_]", value):
        reasons.append(EMPTY_BOX)  # "________", "[   ]": a form's blank, not a value
    elif _ONLY_DEFERRAL.match(value):
        reasons.append(DEFERRED)
    elif _NO_VALUE.match(value):
        reasons.append(NOT_PERFORMED)
    unit = _UNITS.get(spec.finder) if spec.finder != "measurements" else _UNITS["measurements"]
    if spec.format == "measurement":
        unit = _UNITS["measurements"]
    if unit is not None and re.search(r"\d", value) and not unit.search(value):
        reasons.append(NO_UNIT)
    if span is None:
        return reasons
    text = outline.page_text(span.page)
    before = _clause_before(text, span.start)
    after = _clause_after(text, span.end)
    section = outline.section_of(span.page, span.start)
    header = section.header.key if section is not None else ""
    if finder in MARKERS:
        sentence = _sentence_after(text, span.start)
        if _NOT_PERFORMED.search(value) or _NOT_PERFORMED.search(after[:80]):
            reasons.append(NOT_PERFORMED)
        elif _DEFERRED.search(value) or _DEFERRED.search(after[:80]):
            reasons.append(DEFERRED)
        elif _NOT_PERFORMED.search(sentence[:120]) and not re.search(
            r"\d|positive|negative", value, re.IGNORECASE
        ):
            reasons.append(NOT_PERFORMED)
    line_start = text.rfind("\n", 0, span.start) + 1
    line = text[line_start : span.start]
    if (
        finder not in NARRATIVE
        and finder not in ("title", "organisation")
        and (
            _after_trigger(_HISTORY_BEFORE, before)
            or (spec.format == "measurement" and _MEASUREMENT_PAST.search(before))
            or _HISTORY_AFTER.search(after)
            or (header and _HISTORY_SECTION.search(header) and not _ADDENDUM_SECTION.search(header))
            or _HISTORY_LINE.match(line)
        )
    ):
        reasons.append(HISTORICAL)
    if finder == "variants" and (
        _VUS.search(header) or _VUS.search(_line_of(text, span.start)) or _VUS.search(before)
    ):
        # A variant of unknown significance is listed, not reported as a finding.
        reasons.append(UNCERTAIN)
    if spec.format == "measurement" and header and _PROCEDURE_SECTION.search(header):
        reasons.append(PROCEDURE)
    if spec.format == "measurement" and _NEGATION_BEFORE.search(before):
        reasons.append(NEGATED)
    if finder in TUMOUR_PROPERTIES:
        main = index_part(outline)
        part = specimen_part(outline, span.page, span.start)
        if main is not None and part is not None and part != main:
            reasons.append(OTHER_SPECIMEN)
    return list(dict.fromkeys(reasons))


def stated_without_value(spec: FieldSpec, outline: Outline, cue: Any) -> list[str]:
    """Reasons why a mention of a field (its cue, where no value was read) states that there
    is no value to read: the test was not performed, or its result is elsewhere."""
    finder = spec.finder or spec.format
    if finder not in MARKERS:
        return []
    text = outline.page_text(cue.page)
    after = _sentence_after(text, cue.offset)[:160]
    if _NOT_PERFORMED.search(after):
        return [NOT_PERFORMED]
    if _DEFERRED.search(after):
        return [DEFERRED]
    return []


def explain(reasons: list[str]) -> str:
    return "; ".join(MESSAGES[r] for r in reasons)
