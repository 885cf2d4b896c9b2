"""Form filling as classification: which tax form is this document? Pure: no Django.

The document is filled against every template of a form pack (W-2, 1099-NEC, ...). Its type is
the best-filled template that meets its ``min_required`` fields and its confidence threshold.
A form whose boxes are all empty is a blank form: OTHER, with the blank-form message. When no
template qualifies, the attempts escalate:
  1. fill every template;
  2. refill the alternatives attempt 1 recorded (templates with a required field found), told
     to consider them (an LLM reads that feedback; the offline filler searches wider);
  3. fill only the critical (required) fields of the best alternative; if they are not all
     there, the document is OTHER.
Every template that was partly filled is recorded as an alternative type. An expected tax year
that differs from the form's year is an ERROR issue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.fields.evaluator import BLANK_FORM, Evaluation, evaluate
from engine.fields.finders import MAX_LEVEL
from engine.fields.offline_extractor import FOUND, ExtractedField, extract, extract_field
from engine.fields.templates import TIER_WEIGHTS, Template, Tier

ALL_TEMPLATES = "all_templates"
ALTERNATIVES = "alternatives"
CRITICAL_FIELDS = "critical_fields"
ERROR, WARNING = "ERROR", "WARNING"
WRONG_YEAR = "wrong_tax_year"
NO_YEAR = "tax_year_not_found"
FORM_NAME = "form_name"  # each form template's field for its printed name
NOT_A_FORM = "No form template could be filled: the document is not one of the pack's forms."

# (template, pages, strategy, feedback) -> the template's fields as read for that attempt
FormFiller = Callable[[Template, list[str], str, str], dict[str, ExtractedField]]


def offline_filler(
    template: Template, pages: list[str], strategy: str, feedback: str
) -> dict[str, ExtractedField]:
    """Labels first; for the alternatives, every search level; for the critical fields, only
    the required fields, at every level."""
    if strategy == ALL_TEMPLATES:
        return extract(template, pages)
    if strategy == ALTERNATIVES:
        return extract(template, pages, default_level=MAX_LEVEL)
    return {
        spec.name: (
            extract_field(spec, pages, max_level=MAX_LEVEL)
            if spec.tier == Tier.REQUIRED
            else ExtractedField(spec.name)
        )
        for spec in template.fields
    }


@dataclass
class Candidate:
    template: Template
    fields: dict[str, ExtractedField]
    evaluation: Evaluation
    required_found: int
    confidence: float
    fill: float  # share of the template's weighted fields that were filled
    boxes_found: int  # fields found that a blank form would not print

    @property
    def form_type(self) -> str:
        return self.template.doc_type

    @property
    def identified(self) -> bool:
        """The form's printed name ("Form W-2", "1099-NEC") is on the document."""
        name = self.fields.get(FORM_NAME)
        return name is not None and name.status == FOUND

    @property
    def qualifies(self) -> bool:
        return (
            self.required_found >= self.template.min_required
            and self.confidence >= self.template.confidence_threshold
            and self.boxes_found > 0
        )

    def rank(self) -> tuple[float, float, int]:
        return (self.fill, self.evaluation.overall, self.required_found)

    def summary(self) -> dict[str, Any]:
        return {
            "form_type": self.form_type,
            "title": self.template.title,
            "score": self.evaluation.overall,
            "fill": round(self.fill, 4),
            "required_found": self.required_found,
            "min_required": self.template.min_required,
            "confidence": round(self.confidence, 4),
            "confidence_threshold": self.template.confidence_threshold,
            "qualifies": self.qualifies,
        }


def candidate(template: Template, pages: list[str], fields: dict[str, ExtractedField]) -> Candidate:
    found = [f for f in fields.values() if f.status == FOUND]
    weights = {s.name: TIER_WEIGHTS[s.tier] for s in template.fields}
    return Candidate(
        template=template,
        fields=fields,
        evaluation=evaluate(template, fields, pages),
        required_found=sum(
            1
            for s in template.fields
            if s.tier == Tier.REQUIRED
            and fields.get(s.name, ExtractedField(s.name)).status == FOUND
        ),
        confidence=sum(f.confidence for f in found) / len(found) if found else 0.0,
        fill=sum(weights[f.name] for f in found if f.name in weights) / sum(weights.values()),
        boxes_found=sum(1 for s in template.fields if not s.printed and s.name in _found(fields)),
    )


def _found(fields: dict[str, ExtractedField]) -> set[str]:
    return {name for name, f in fields.items() if f.status == FOUND}


@dataclass
class FormAttempt:
    number: int
    strategy: str
    feedback: str
    candidates: list[dict[str, Any]]
    chosen: str = ""


@dataclass
class FormMatch:
    form_type: str  # a template's doc_type, or "" for OTHER
    title: str = ""
    message: str = ""
    tax_year: str | None = None
    alternatives: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[FormAttempt] = field(default_factory=list)
    issues: list[dict[str, str]] = field(default_factory=list)
    chosen: Candidate | None = None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("chosen")
        return data


def _best(candidates: list[Candidate]) -> Candidate | None:
    qualified = [c for c in candidates if c.qualifies]
    return max(qualified, key=lambda c: c.rank()) if qualified else None


def _describe(candidates: list[Candidate]) -> str:
    return ", ".join(
        f"{c.template.title} ({c.required_found}/{c.template.min_required} required fields)"
        for c in candidates
    )


def match_form(
    templates: list[Template],
    pages: list[str],
    *,
    expected_year: int | None = None,
    filler: FormFiller = offline_filler,
) -> FormMatch:
    attempts: list[FormAttempt] = []
    filled = [candidate(t, pages, filler(t, pages, ALL_TEMPLATES, "")) for t in templates]
    attempts.append(FormAttempt(1, ALL_TEMPLATES, "", [c.summary() for c in filled]))
    chosen = _best(filled)
    latest = filled
    # The alternatives: templates of which something was read (a box, or the form's name).
    alive = sorted((c for c in filled if c.required_found), key=lambda c: c.rank(), reverse=True)
    if chosen is None and alive:
        feedback = (
            "--- FORM FEEDBACK ---\nNo template was filled well enough to name the form. "
            f"Consider the alternative types: {_describe(alive)}. Look again for their boxes."
        )
        latest = [
            candidate(c.template, pages, filler(c.template, pages, ALTERNATIVES, feedback))
            for c in alive
        ]
        attempts.append(FormAttempt(2, ALTERNATIVES, feedback, [c.summary() for c in latest]))
        chosen = _best(latest)
        best = max(latest, key=lambda c: c.rank())
        if chosen is None and best.boxes_found:
            critical = [s.name for s in best.template.fields if s.tier == Tier.REQUIRED]
            feedback = (
                "--- FORM FEEDBACK ---\nOnly the critical fields matter now: fill "
                f"{', '.join(critical)} of {best.template.title}. If they are not on the "
                "document, it is not this form: answer not present, and it is reported as OTHER."
            )
            last = candidate(
                best.template, pages, filler(best.template, pages, CRITICAL_FIELDS, feedback)
            )
            attempts.append(FormAttempt(3, CRITICAL_FIELDS, feedback, [last.summary()]))
            chosen = last if last.qualifies else None
    if chosen is not None:
        attempts[-1].chosen = chosen.form_type
    alternatives = [
        c.summary()
        for c in sorted(latest, key=lambda c: c.rank(), reverse=True)
        if c.required_found and (chosen is None or c.form_type != chosen.form_type)
    ]
    if chosen is None:
        # The form's name is printed but no box is filled in: a blank form.
        blank = next((c for c in latest if c.identified and not c.boxes_found), None)
        return FormMatch(
            form_type="",
            message=BLANK_FORM if blank is not None else NOT_A_FORM,
            title=blank.template.title if blank is not None else "",
            alternatives=alternatives,
            attempts=attempts,
        )
    match = FormMatch(
        form_type=chosen.form_type,
        title=chosen.template.title,
        message=f"Filled as {chosen.template.title}.",
        alternatives=alternatives,
        attempts=attempts,
        chosen=chosen,
    )
    year = chosen.fields.get("tax_year")
    match.tax_year = str(year.value) if year is not None and year.status == FOUND else None
    if expected_year is not None:
        if match.tax_year is None:
            match.issues.append(
                {
                    "severity": WARNING,
                    "code": NO_YEAR,
                    "message": f"Tax year {expected_year} was expected, but the form's tax "
                    "year could not be read.",
                }
            )
        elif match.tax_year != str(expected_year):
            match.issues.append(
                {
                    "severity": ERROR,
                    "code": WRONG_YEAR,
                    "message": f"This {chosen.template.title} is for tax year {match.tax_year}; "
                    f"tax year {expected_year} was expected.",
                }
            )
    return match
