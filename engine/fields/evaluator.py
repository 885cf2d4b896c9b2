"""Score an extraction: completeness, accuracy, validity, consistency. Pure: no Django.

overall = 0.30 completeness + 0.40 accuracy + 0.15 validity + 0.15 consistency
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.fields.offline_extractor import AMBIGUOUS, FOUND, NOT_PRESENT, ExtractedField
from engine.fields.templates import TIER_WEIGHTS, FieldSpec, Template, Tier
from engine.grounding import find_snippet, normalise

WEIGHTS = {"completeness": 0.30, "accuracy": 0.40, "validity": 0.15, "consistency": 0.15}
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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- validity rules, by name (templates refer to them) -------------------------------------------


def _grade(v: str) -> bool:
    return bool(
        re.search(
            r"\b([123]|I{1,3}|(well|moderately|poorly)[\s-]differentiated|"
            r"(low|high)[\s-]grade)\b",
            v,
            re.IGNORECASE,
        )
    )


def _receptor(v: str) -> bool:
    return bool(re.search(r"\b(positive|negative|\d{1,3}\s*%)", v, re.IGNORECASE))


def _her2(v: str) -> bool:
    return bool(re.search(r"\b(positive|negative|equivocal|[0-3]\+)", v, re.IGNORECASE))


def _msi(v: str) -> bool:
    return bool(
        re.fullmatch(
            r"(MSI-H|MSI-L|MSS|microsatellite stable|"
            r"microsatellite instability-high)",
            v.strip(),
            re.IGNORECASE,
        )
    )


def _tmb(v: str) -> bool:
    return bool(re.fullmatch(r"\d+(\.\d+)?", v.strip()))


def _measurement(v: str) -> bool:
    return bool(re.search(r"\d\s*(mm|cm|ml)\b", v, re.IGNORECASE))


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
    "tax_year": _tax_year,
    "nonempty": _nonempty,
}

FORMAT_RULES: dict[str, Callable[[str], bool]] = {
    "number": lambda v: bool(re.fullmatch(r"-?\d+(\.\d+)?", v.strip())),
    "percentage": lambda v: (
        bool(re.fullmatch(r"\d{1,3}(\.\d+)?\s*%", v.strip()))
        and float(re.sub(r"[^\d.]", "", v)) <= 100
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


def _carcinoma_without_grade(f: dict[str, ExtractedField]) -> str | None:
    histology = f.get("histology")
    grade = f.get("grade")
    if (
        histology
        and histology.status == FOUND
        and re.search(r"carcinoma", str(histology.value), re.IGNORECASE)
        and not (grade and grade.status == FOUND)
    ):
        return "The histology is a carcinoma but no grade was extracted."
    return None


def _mutations_without_msi(f: dict[str, ExtractedField]) -> str | None:
    mutations, msi = f.get("mutations"), f.get("msi_status")
    if mutations and mutations.status == FOUND and not (msi and msi.status == FOUND):
        return "Mutations were extracted but no MSI status."
    return None


def _ss_wages_above_wages(f: dict[str, ExtractedField]) -> str | None:
    wages, ss = f.get("wages"), f.get("social_security_wages")
    if wages and ss and wages.status == FOUND and ss.status == FOUND:
        a, b = _money(wages.value), _money(ss.value)
        if a is not None and b is not None and b > a:
            return (
                f"Social security wages ({ss.value}) are above total wages ({wages.value}); "
                "check boxes 1 and 3."
            )
    return None


def _blank_form(f: dict[str, ExtractedField]) -> str | None:
    if f and all(x.status != FOUND for x in f.values()):
        return "Every field is empty: this looks like a blank form."
    return None


CONSISTENCY_RULES: dict[str, Callable[[dict[str, ExtractedField]], str | None]] = {
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
    """The value is quoted in the snippet; formatting aside, its numbers must all be there."""
    if normalise(value).text in snippet_norm:
        return True
    digits = _DIGITS.findall(value)
    return bool(digits) and all(d in snippet_norm for d in digits)


def _grounded(extracted: ExtractedField, pages: list[str]) -> bool:
    """The value is in its snippet, and the snippet is on its page (deterministic)."""
    if not extracted.snippet:
        return False
    snippet_norm = normalise(extracted.snippet).text
    if not all(_value_in(v, snippet_norm) for v in _values(extracted.value)):
        return False
    page = extracted.page
    candidates = [pages[page - 1]] if page and 1 <= page <= len(pages) else pages
    return any(find_snippet(extracted.snippet, text) is not None for text in candidates)


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


def evaluate(template: Template, fields: dict[str, ExtractedField], pages: list[str]) -> Evaluation:
    scores: dict[str, FieldScore] = {}
    issues: list[dict[str, str]] = []
    missing: list[str] = []
    weight_total = credit_total = 0.0
    found = grounded = valid = 0
    for spec in template.fields:
        extracted = fields.get(spec.name) or ExtractedField(spec.name)
        weight = TIER_WEIGHTS[spec.tier]
        weight_total += weight
        credit = {FOUND: 1.0, NOT_PRESENT: 1.0, AMBIGUOUS: 0.5}.get(extracted.status, 0.0)
        score = FieldScore(spec.name, spec.tier.value, extracted.status, credit, None, None)
        if extracted.status == NOT_PRESENT and spec.tier != Tier.OPTIONAL:
            missing.append(spec.name)  # not penalised, but worth a second, wider look
        if extracted.status == AMBIGUOUS:
            issues.append(
                {
                    "severity": MINOR,
                    "field": spec.name,
                    "message": "Several different values were found.",
                }
            )
        if extracted.status in (FOUND, AMBIGUOUS):
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
        credit_total += weight * credit
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
        m for name in template.consistency if (m := CONSISTENCY_RULES[name](fields)) is not None
    ]
    for message in violations:
        issues.append({"severity": MAJOR, "field": "", "message": message})
    completeness = credit_total / weight_total if weight_total else 0.0
    if required_found < template.min_required:
        completeness *= 0.5
    accuracy = grounded / found if found else 0.0
    validity = valid / found if found else 0.0
    consistency = max(0.0, 1.0 - 0.5 * len(violations))
    overall = (
        WEIGHTS["completeness"] * completeness
        + WEIGHTS["accuracy"] * accuracy
        + WEIGHTS["validity"] * validity
        + WEIGHTS["consistency"] * consistency
    )
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
