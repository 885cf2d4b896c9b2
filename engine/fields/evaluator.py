"""Score an extraction so that the score says how much of it is right. Pure: no Django.

Every answer first goes through ``screen``: a value whose span does not support it (negated,
not performed, deferred to an addendum, a prior study's, another specimen's, without its unit),
that is not in its quoted source, or that fails its format is withdrawn: it is not reported.

The overall score is the mean of two estimates, each 0..1:
  - expected precision: each reported value counts with the trust its reading earns (a value
    under its label or section, a phrase that names the field, or only the value's own pattern;
    an answer's own confidence; a value of a report with several tumours, whose parts cannot
    be told apart, less), over the values reported plus twice the values withdrawn: a wrong
    value costs more than a missing one;
  - expected recall: the trust of the values reported over every field the document states
    (found, missing, withdrawn); a required field not found is a miss when a wider reading of
    the page finds it, and a tenth of one when none does (the evaluator cannot vouch that the
    document does not state it);
times a consistency factor (each violated rule costs a tenth).

The breakdown kept beside it: completeness, accuracy (grounding), validity, consistency.

Completeness is measured against what the document states, not against the template: a field
whose label, section or cue is on the page but whose value was not read is ``missing`` and
counts as a miss; a field the document does not state (``not_present``) is left out of the
measure instead of being counted as a success. So a report that says "Nottingham grade 2" and
an extraction without a grade scores low, and a benign biopsy without a grade does not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.fields import oncology
from engine.fields.finders import presence
from engine.fields.offline_extractor import (
    AMBIGUOUS,
    FOUND,
    MISSING,
    NOT_PRESENT,
    UNSUPPORTED,
    ExtractedField,
    outline_for,
)
from engine.fields.sections import Outline
from engine.fields.support import TUMOUR_PROPERTIES, examine, explain, locate, several_tumours
from engine.fields.templates import TIER_WEIGHTS, FieldSpec, Template, Tier
from engine.fields.variant_syntax import variant_is_valid
from engine.grounding import find_snippet, normalise

WEIGHTS = {"completeness": 0.30, "accuracy": 0.40, "validity": 0.15, "consistency": 0.15}
_EXPLAINED = frozenset(
    {
        "negated",
        "not_performed",
        "deferred",
        "historical",
        "other_specimen",
        "no_unit",
        "uncertain_significance",
        "procedure",
        "empty_box",
    }
)
CRITICAL, MAJOR, MINOR = "critical", "major", "minor"
_DIGITS = re.compile(r"\d+")


@dataclass
class FieldScore:
    name: str
    tier: str
    status: str
    credit: float
    grounded: bool | None
    valid: bool | None
    problems: list[str] = field(default_factory=list)


@dataclass
class Evaluation:
    overall: float
    completeness: float
    accuracy: float
    validity: float
    consistency: float
    fields: dict[str, FieldScore]
    issues: list[dict[str, str]]
    missing: list[str]
    priority: list[str]
    suggestions: list[str]
    expected_precision: float = 0.0
    expected_recall: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- validity rules, by name (templates refer to them) -------------------------------------------


def _grade(v: str) -> bool:
    return bool(
        re.search(
            r"\b(?:G\s?[1-4X]|[1-4]|I{1,3}|IV|(?:well|moderately|poorly|un)[\s-]*differentiated"
            r"|(?:low|intermediate|high)(?:[\s-]grade)?)\b",
            v,
            re.IGNORECASE,
        )
    )


def _receptor(v: str) -> bool:
    return bool(
        re.search(
            r"\b(?:positive|negative|pos|neg)\b|\d{1,3}\s*%|allred|h-?score|\b\d/8\b"
            r"|(?:ER|PR|PgR)\s*\(?[+-]",
            v,
            re.IGNORECASE,
        )
    )


def _her2(v: str) -> bool:
    return bool(
        re.search(
            r"\b(?:positive|negative|equivocal|indeterminate|amplified|non-?amplified)\b"
            r"|\b[0-3]\s*\+|score\s*(?:of\s*)?[0-3]\b|\bratio\b|^\s*[0-3]\s*(?:\(|$)",
            v,
            re.IGNORECASE,
        )
    )


def _msi(v: str) -> bool:
    return bool(
        re.fullmatch(
            r"(?:MSI[-\s]?(?:H|High|L|Low|stable)|MSS|MS[-\s]?stable|microsatellite\s+stable"
            r"|microsatellite\s+unstable|(?:microsatellite\s+)?instability[-\s](?:high|low)"
            r"|stable|unstable|high|low|equivocal|indeterminate|not\s+detected)",
            v.strip(),
            re.IGNORECASE,
        )
    )


def _tmb(v: str) -> bool:
    return bool(
        re.fullmatch(
            r"(?:(?:high|low|intermediate)\s*[|,;:(]?\s*)?\d+(?:\.\d+)?\s*"
            r"(?:mut(?:ation)?s?\s*/\s*(?:mb|megabase)|mutations?\s+per\s+(?:mb|megabase)|muts?/mb"
            r"|m/mb|/\s*mb)?\)?"
            r"|TMB[-\s](?:high|low|intermediate)|high|low|intermediate",
            v.strip(),
            re.IGNORECASE,
        )
    )


def _measurement(v: str) -> bool:
    return bool(re.search(r"\d\s*-?\s*(mm|cm|ml|cc)\b", v, re.IGNORECASE))


def _variant(v: str) -> bool:
    return variant_is_valid(v)


def _tax_year(v: str) -> bool:
    return bool(re.fullmatch(r"(19[5-9]\d|20\d{2})", v.strip()))


def _nonempty(v: str) -> bool:
    return bool(v.strip())


VALIDITY_RULES: dict[str, Callable[[str], bool]] = {
    "grade": _grade,
    "receptor": _receptor,
    "her2": _her2,
    "msi": _msi,
    "tmb": _tmb,
    "measurement": _measurement,
    "variant": _variant,
    "tax_year": _tax_year,
    "nonempty": _nonempty,
}

FORMAT_RULES: dict[str, Callable[[str], bool]] = {
    "number": lambda v: bool(re.fullmatch(r"-?\d+(\.\d+)?", v.strip())),
    "percentage": lambda v: (
        bool(
            re.fullmatch(
                r"[<>]?\s*\d{1,3}(\.\d+)?\s*%?(\s*(-|to)\s*\d{1,3}(\.\d+)?)?\s*%", v.strip()
            )
        )
        and all(float(n) <= 100 for n in re.findall(r"\d+(?:\.\d+)?", v))
    ),
    "currency": lambda v: bool(
        re.fullmatch(r"\$?\s?\d{1,3}(,\d{3})*(\.\d{2})?|\$?\s?\d+(\.\d{2})?", v.strip())
    ),
    "ssn": lambda v: (
        bool(re.fullmatch(r"(\d{3}|[Xx*]{3})-(\d{2}|[Xx*]{2})-\d{4}", v.strip()))
        and not v.startswith(("000", "666", "9"))
    ),
    "ein": lambda v: bool(re.fullmatch(r"\d{2}-\d{7}", v.strip())),
    "year": _tax_year,
    "date": lambda v: bool(re.search(r"\d", v)),
}


def _money(v: Any) -> float | None:
    try:
        return float(re.sub(r"[^\d.]", "", str(v)))
    except ValueError:
        return None


# -- consistency rules, by name ------------------------------------------------------------------
# Each sees the fields and the document's outline, so a rule about a value the report does not
# state ("no grade for a carcinoma") fires only when the report does state it.


def _stated(template: Template, name: str, outline: Outline) -> bool:
    spec = next((s for s in template.fields if s.name == name), None)
    return spec is not None and presence(spec, outline) is not None


def _carcinoma_without_grade(
    f: dict[str, ExtractedField], template: Template, outline: Outline
) -> str | None:
    histology = f.get("histology")
    grade = f.get("grade")
    if (
        histology
        and histology.status == FOUND
        and re.search(r"carcinoma", str(histology.value), re.IGNORECASE)
        and not (grade and grade.status == FOUND)
        and _stated(template, "grade", outline)
    ):
        return "The histology is a carcinoma and the report grades it, but no grade was extracted."
    return None


def _mutations_without_msi(
    f: dict[str, ExtractedField], template: Template, outline: Outline
) -> str | None:
    mutations, msi = f.get("mutations"), f.get("msi_status")
    if (
        mutations
        and mutations.status == FOUND
        and not (msi and msi.status == FOUND)
        and _stated(template, "msi_status", outline)
    ):
        return "Mutations were extracted and the report states an MSI status, but none was read."
    return None


def _ss_wages_above_wages(
    f: dict[str, ExtractedField], template: Template, outline: Outline
) -> str | None:
    wages, ss = f.get("wages"), f.get("social_security_wages")
    if wages and ss and wages.status == FOUND and ss.status == FOUND:
        a, b = _money(wages.value), _money(ss.value)
        if a is not None and b is not None and b > a:
            return (
                f"Social security wages ({ss.value}) are above total wages ({wages.value}); "
                "check boxes 1 and 3."
            )
    return None


BLANK_FORM = "Every field is empty: this looks like a blank form."


def _blank_form(f: dict[str, ExtractedField], template: Template, outline: Outline) -> str | None:
    """No box is filled in; what a blank form prints (its name, its year) does not count."""
    printed = {s.name for s in template.fields if s.printed}
    boxes = [x for name, x in f.items() if name not in printed]
    if f and all(x.status != FOUND for x in boxes):
        return BLANK_FORM
    return None


ConsistencyRule = Callable[[dict[str, ExtractedField], Template, Outline], "str | None"]
CONSISTENCY_RULES: dict[str, ConsistencyRule] = {
    "carcinoma_without_grade": _carcinoma_without_grade,
    "mutations_without_msi": _mutations_without_msi,
    "ss_wages_above_wages": _ss_wages_above_wages,
    "blank_form": _blank_form,
}


# -- scoring ---------------------------------------------------------------------------------------


def _values(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _value_in(value: str, snippet_norm: str) -> bool:
    """The value is quoted in the snippet; formatting aside, its numbers must all be there;
    a value put together from two places ("TP53" and "R248W" on a form's two lines) must
    have every word in the snippet, in order."""
    if normalise(value).text in snippet_norm:
        return True
    digits = _DIGITS.findall(value)
    if (
        digits
        and all(d in snippet_norm for d in digits)
        and not re.search(r"[a-z]{3}", value.lower())
    ):
        return True
    words = re.findall(r"[a-z0-9*+>.]+", normalise(value).text)
    position = 0
    for word in words:
        found = snippet_norm.find(word, position)
        if found < 0:
            return False
        position = found + len(word)
    return bool(words)


def _on_page(snippet: str, page: int | None, pages: list[str]) -> bool:
    candidates = [pages[page - 1]] if page and 1 <= page <= len(pages) else pages
    return any(find_snippet(snippet, text) is not None for text in candidates)


def _grounded(extracted: ExtractedField, pages: list[str]) -> bool:
    """The value is in its snippet, and the snippet is on its page (deterministic). A list's
    values may each come with their own snippet (``snippets``), found on any page."""
    values = _values(extracted.value)
    if extracted.snippets and len(extracted.snippets) == len(values):
        return all(
            _value_in(v, normalise(s).text) and _on_page(s, None, pages)
            for v, s in zip(values, extracted.snippets, strict=True)
        )
    if not extracted.snippet:
        return False
    snippet_norm = normalise(extracted.snippet).text
    if not all(_value_in(v, snippet_norm) for v in values):
        return False
    return _on_page(extracted.snippet, extracted.page, pages)


def _valid(spec: FieldSpec, extracted: ExtractedField) -> tuple[bool, str]:
    for value in _values(extracted.value):
        rule = FORMAT_RULES.get(spec.format)
        if rule is not None and not rule(value):
            return False, f"“{value}” is not a valid {spec.format}."
        if spec.format == "enum" and value.lower() not in {v.lower() for v in spec.values}:
            return False, f"“{value}” is not one of {', '.join(spec.values)}."
        named = VALIDITY_RULES.get(spec.validity) if spec.validity else None
        if named is not None and not named(value):
            return False, f"“{value}” fails the {spec.validity} rule."
    return True, ""


UNGROUNDED = "ungrounded"
INVALID = "invalid"
# How far a value read each way can be trusted: under its label or section (level 0), a
# phrase or a form's next line (1), the value's own pattern anywhere (2).
TRUST_BY_LEVEL = {0: 0.98, 1: 0.93, 2: 0.85}
UNKNOWN_SOURCE_TRUST = 0.9  # an extractor that gives no level (an LLM), unconfirmed: at most
TRUST_LEVELS = 2  # how wide the deterministic reading that confirms an answer searches
UNCERTAIN_SPECIMEN = 0.8  # a tumour's property in a report with several tumours
WITHDRAWN_COST = 2.0  # a withdrawn value weighs twice a reported one in expected precision
UNCONFIRMED_TRUST = 0.5  # a breast report's tumour value whose meaning cannot be read
UNSURE_TRUST = 0.7  # a breast report's grade or margin value that speaks against itself
UNSEEN_REQUIRED = 0.1  # a required field no reading finds: a tenth of a miss


def screen(
    template: Template, fields: dict[str, ExtractedField], pages: list[str]
) -> dict[str, ExtractedField]:
    """The answer as it may be reported: each found value located on its page (``span``) and
    withdrawn (``withdrawn``, with the reasons in ``unsupported``) when its span does not
    support it, when it is not in its quoted source or fails its format. Withdrawn values of a
    list are dropped one by one; the rest stay."""
    outline = outline_for(pages)
    screened: dict[str, ExtractedField] = {}
    for spec in template.fields:
        extracted = fields.get(spec.name) or ExtractedField(spec.name)
        if extracted.status not in (FOUND, AMBIGUOUS) or extracted.value is None:
            screened[spec.name] = extracted
            continue
        values = _values(extracted.value)
        snippets = (
            extracted.snippets
            if extracted.snippets and len(extracted.snippets) == len(values)
            else [extracted.snippet] * len(values)
        )
        kept: list[str] = []
        kept_snippets: list[str] = []
        reasons: list[str] = []
        first_span = None
        for value, snippet in zip(values, snippets, strict=True):
            why = _value_problems(spec, outline, pages, extracted, value, snippet)
            if why:
                reasons += why
                continue
            kept.append(value)
            kept_snippets.append(snippet)
            if first_span is None:
                span = locate(outline, extracted.page, snippet, value)
                first_span = [span.page, span.start, span.end] if span else extracted.span
        if not reasons:
            screened[spec.name] = ExtractedField(
                **{**extracted.as_dict(), "span": first_span or extracted.span}
            )
            continue
        withdrawn = [v for v in values if v not in kept]
        if spec.multiple and kept:
            screened[spec.name] = ExtractedField(
                **{
                    **extracted.as_dict(),
                    "value": kept,
                    "snippets": kept_snippets,
                    "span": first_span,
                    "unsupported": list(dict.fromkeys(reasons)),
                    "withdrawn": withdrawn,
                }
            )
            continue
        screened[spec.name] = ExtractedField(
            spec.name,
            None,
            UNSUPPORTED,
            0.0,
            extracted.snippet,
            extracted.page,
            extracted.level,
            unsupported=list(dict.fromkeys(reasons)),
            withdrawn=extracted.value,
        )
    return screened


def _value_problems(
    spec: FieldSpec,
    outline: Outline,
    pages: list[str],
    extracted: ExtractedField,
    value: str,
    snippet: str,
) -> list[str]:
    single = ExtractedField(spec.name, value, FOUND, extracted.confidence, snippet, extracted.page)
    if not snippet or not _grounded(single, pages):
        return [UNGROUNDED]
    reading = oncology.read(pages).get(spec.name) if spec.name in oncology.FIELDS else None
    structured = (
        reading is not None
        and reading.canonical is not None
        and reading.value == value
        and reading.snippet == snippet
    )
    # A breast report's value that its structure reader gives on the same line has passed that
    # reader's own rules (history, previous biopsy, pending, empty box, node specimen,
    # addendum); the span heuristics would second-guess the structure.
    if structured:
        return []  # its canonical value is its proof of form too
    why = examine(spec, outline, locate(outline, extracted.page, snippet, value), value)
    if why:
        return why
    ok, _ = _valid(spec, single)
    return [] if ok else [INVALID]


DISAGREEING_TRUST = 0.7  # an answer the deterministic reading of the page contradicts


def _comparable(value: Any) -> str:
    return " ".join(re.findall(r"[a-z0-9*>+.%]+", str(value).lower())).strip(" .")


def _agrees(a: Any, b: Any) -> bool:
    x, y = _comparable(a), _comparable(b)
    return bool(x and y) and (x in y or y in x)


def _widest_reading(spec: FieldSpec, outline: Outline) -> ExtractedField:
    """The deterministic reading of this field at its widest search (once per document)."""
    from engine.fields.offline_extractor import extract_field

    key = ("offline_reading", spec.name)
    if key not in outline.memo:
        outline.memo[key] = extract_field(
            spec, outline.pages, max_level=TRUST_LEVELS, outline=outline
        )
    reading: ExtractedField = outline.memo[key]
    return reading


def _independent_trust(spec: FieldSpec, extracted: ExtractedField, outline: Outline) -> float:
    """An answer without a reading level (an LLM's): trusted as far as the deterministic
    reading of the same page agrees with it, as a second opinion does. Agreement earns the
    trust of the level the page was read at; a different reading, little; no reading, the
    answer's own confidence, at most UNKNOWN_SOURCE_TRUST."""
    reading = _widest_reading(spec, outline)
    own = min(UNKNOWN_SOURCE_TRUST, max(0.5, extracted.confidence or 0.0))
    if reading.status != FOUND or reading.value is None:
        return own
    values, read = _values(extracted.value), _values(reading.value)
    agreed = sum(1 for v in values if any(_agrees(v, r) for r in read))
    if not values or agreed < len(values):
        return DISAGREEING_TRUST if not agreed else own
    return TRUST_BY_LEVEL.get(reading.level or 0, TRUST_BY_LEVEL[2])


def _trust(spec: FieldSpec, extracted: ExtractedField, outline: Outline) -> float:
    if extracted.level is not None:
        trust = TRUST_BY_LEVEL.get(extracted.level, TRUST_BY_LEVEL[2])
    else:
        trust = _independent_trust(spec, extracted, outline)
    if extracted.status == AMBIGUOUS:
        trust *= 0.5
    if spec.finder in TUMOUR_PROPERTIES and several_tumours(outline):
        trust *= UNCERTAIN_SPECIMEN
    if (
        spec.name in oncology.FIELDS
        and extracted.value is not None
        and oncology.is_breast_report(outline.pages)
        and oncology.meaning_unread(spec.name, extracted.value, extracted.canonical)
    ):
        # A breast report's receptor, HER2, histology, grade or margin value without a
        # meaning that can be read (any extractor's): the score does not vouch for it.
        trust = min(trust, UNCONFIRMED_TRUST)
    elif oncology.doubt(spec.name, outline.pages, extracted.value):
        # A grade naming two grades or at odds with its score, a margin both clear and
        # involved: read, but the score does not vouch for it.
        trust = min(trust, UNSURE_TRUST)
    return trust


def status_of(spec: FieldSpec, extracted: ExtractedField, outline: Outline) -> str:
    """The field's status as the evaluator sees it: a "not present" answer (from any
    extractor, an LLM included) is missing when the document states the field."""
    if extracted.status == NOT_PRESENT and presence(spec, outline) is not None:
        return MISSING
    return extracted.status


def evaluate(template: Template, fields: dict[str, ExtractedField], pages: list[str]) -> Evaluation:
    outline = outline_for(pages)
    scores: dict[str, FieldScore] = {}
    issues: list[dict[str, str]] = []
    missing: list[str] = []
    weight_total = credit_total = 0.0
    found = grounded = valid = 0
    trusted = reported = withdrawn = stated = 0.0
    for spec in template.fields:
        extracted = fields.get(spec.name) or ExtractedField(spec.name)
        status = status_of(spec, extracted, outline)
        weight = TIER_WEIGHTS[spec.tier]
        if status in (FOUND, AMBIGUOUS):
            trust = _trust(spec, extracted, outline)
            trusted += weight * trust
            reported += weight
            stated += weight
        elif status == MISSING:
            stated += weight
        elif status == NOT_PRESENT and spec.tier == Tier.REQUIRED:
            # A required field not found: a miss when a wider reading of the page finds it;
            # otherwise a little less certainty (no reader found it, none can vouch it is not
            # there).
            wider = _widest_reading(spec, outline)
            stated += weight * (1.0 if wider.status == FOUND else UNSEEN_REQUIRED)
        if extracted.withdrawn not in (None, [], ""):
            withdrawn += weight
            stated += weight if status == UNSUPPORTED else 0.0
            issues.append(
                {
                    "severity": CRITICAL,
                    "field": spec.name,
                    "message": f"“{extracted.withdrawn}” was withdrawn: "
                    + (
                        explain([r for r in extracted.unsupported if r in _EXPLAINED])
                        or "it is not in its source text or not valid"
                    )
                    + ".",
                }
            )
        credit = {FOUND: 1.0, AMBIGUOUS: 0.5}.get(status, 0.0)
        score = FieldScore(spec.name, spec.tier.value, status, credit, None, None)
        if status != NOT_PRESENT and (status != UNSUPPORTED or extracted.withdrawn):
            # Only what the document states is measured: found, ambiguous or missing (a field
            # it names without a value of its own is not; a value withdrawn is a miss).
            weight_total += weight
            credit_total += weight * credit
        if status == MISSING:
            missing.append(spec.name)
            issues.append(
                {
                    "severity": MAJOR if spec.tier != Tier.OPTIONAL else MINOR,
                    "field": spec.name,
                    "message": "The document states this field (its label or section is on "
                    "the page) but no value was extracted.",
                }
            )
        elif status == NOT_PRESENT and spec.tier == Tier.REQUIRED:
            missing.append(spec.name)  # not stated: not penalised, but worth a wider look
        if status == AMBIGUOUS:
            issues.append(
                {
                    "severity": MINOR,
                    "field": spec.name,
                    "message": "Several different values were found.",
                }
            )
        if status in (FOUND, AMBIGUOUS):
            found += 1
            score.grounded = _grounded(extracted, pages)
            grounded += score.grounded
            if not score.grounded:
                score.problems.append("not grounded in the source")
                issues.append(
                    {
                        "severity": CRITICAL,
                        "field": spec.name,
                        "message": "The value is not in the quoted source text, or the "
                        "quote is not on the page.",
                    }
                )
            score.valid, problem = _valid(spec, extracted)
            valid += score.valid
            if not score.valid:
                score.problems.append(problem)
                issues.append({"severity": MAJOR, "field": spec.name, "message": problem})
        scores[spec.name] = score
    required_found = sum(
        1
        for s in template.fields
        if s.tier == Tier.REQUIRED and fields.get(s.name) and fields[s.name].status == FOUND
    )
    if required_found < template.min_required:
        issues.append(
            {
                "severity": MAJOR,
                "field": "",
                "message": f"Only {required_found} required field(s) found; the "
                f"template needs {template.min_required}.",
            }
        )
    violations = [
        m
        for name in template.consistency
        if (m := CONSISTENCY_RULES[name](fields, template, outline)) is not None
    ]
    for message in violations:
        issues.append({"severity": MAJOR, "field": "", "message": message})
    completeness = credit_total / weight_total if weight_total else 0.0
    if required_found < template.min_required:
        completeness *= 0.5
    if any(scores[s.name].status == MISSING and s.tier != Tier.OPTIONAL for s in template.fields):
        # A required or important value the document states and the extraction lacks is a
        # known gap: the extraction is not complete, whatever else it found.
        completeness *= 0.5
    accuracy = grounded / found if found else 0.0
    validity = valid / found if found else 0.0
    consistency = max(0.0, 1.0 - 0.5 * len(violations))
    expected_precision = (
        trusted / (reported + WITHDRAWN_COST * withdrawn) if reported + withdrawn else 0.0
    )
    expected_recall = trusted / stated if stated else 0.0
    if not stated:
        # Nothing stated and nothing found: an empty extraction of a document that may hold
        # nothing. The score cannot vouch for it.
        expected_precision = expected_recall = 0.5
    overall = 0.5 * (expected_precision + expected_recall) * max(0.0, 1.0 - 0.1 * len(violations))
    flagged = {i["field"] for i in issues if i["field"]}
    priority = [
        s.name
        for s in template.fields
        if s.name in flagged or (s.name in missing and s.tier == Tier.REQUIRED)
    ]
    priority += [m for m in missing if m not in priority]
    suggestions = [
        f"Look for {template.field(n).description.lower()} near "
        f"“{template.field(n).labels[0]}”"
        + (f" ({template.field(n).location})" if template.field(n).location else "")
        for n in priority[:5]
    ]
    return Evaluation(
        overall=round(overall, 4),
        completeness=round(completeness, 4),
        accuracy=round(accuracy, 4),
        validity=round(validity, 4),
        consistency=round(consistency, 4),
        fields=scores,
        issues=issues,
        missing=missing,
        priority=priority,
        suggestions=suggestions,
        expected_precision=round(expected_precision, 4),
        expected_recall=round(expected_recall, 4),
    )


def feedback_block(
    evaluation: Evaluation, *, target: float, previous: dict[str, ExtractedField]
) -> str:
    lines = [
        "--- EXTRACTION FEEDBACK ---",
        f"Score {evaluation.overall:.2f} (target {target:.2f}): completeness "
        f"{evaluation.completeness:.2f}, accuracy {evaluation.accuracy:.2f}, validity "
        f"{evaluation.validity:.2f}, consistency {evaluation.consistency:.2f}.",
    ]
    for severity in (CRITICAL, MAJOR):
        chosen = [i for i in evaluation.issues if i["severity"] == severity]
        if chosen:
            lines.append(f"{severity.upper()} issues:")
            lines += [f"- {i['field'] or 'document'}: {i['message']}" for i in chosen]
    if evaluation.missing:
        lines.append("Missing fields: " + ", ".join(evaluation.missing))
    if evaluation.suggestions:
        lines.append("Suggestions:")
        lines += [f"- {s}" for s in evaluation.suggestions]
    if evaluation.priority:
        lines.append("Priority fields: " + ", ".join(evaluation.priority))
    lines.append(
        "Previous attempt: "
        + json.dumps(
            {k: {"value": v.value, "status": v.status} for k, v in previous.items()}, sort_keys=True
        )
    )
    return "\n".join(lines)
