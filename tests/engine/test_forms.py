"""Form filling as classification against the us_tax pack: the best-filled qualifying template,
blank forms, the expected tax year, escalating attempts and recorded alternatives."""

from __future__ import annotations

import random

import pytest

from benchmarks.pdfgen import (
    form_1099_paragraphs,
    random_ein,
    random_ssn,
    random_w2_paragraphs,
    w2_paragraphs,
)
from engine.fields.evaluator import BLANK_FORM
from engine.fields.forms import (
    ALL_TEMPLATES,
    ALTERNATIVES,
    CRITICAL_FIELDS,
    ERROR,
    NOT_A_FORM,
    WARNING,
    match_form,
    offline_filler,
)
from engine.fields.library import load_packs
from engine.fields.offline_extractor import ExtractedField

TAX = load_packs(("us_tax",))["us_tax"].templates


def page(paragraphs):
    return ["\n\n".join(paragraphs)]


def filled_w2(rng, year=2024):
    return page(random_w2_paragraphs(rng, year=year))


@pytest.mark.parametrize("seed", range(5))
def test_a_filled_w2_is_typed_w2_with_its_boxes(seed):
    rng = random.Random(seed)
    pages = filled_w2(rng)
    match = match_form(TAX, pages)
    assert match.form_type == "w2" and match.title == "Form W-2"
    fields = {k: f.value for k, f in match.chosen.fields.items()}
    assert fields["employee_ssn"] in pages[0] and fields["employer_ein"] in pages[0]
    assert fields["wages"] == fields["social_security_wages"] and fields["tax_year"] == "2024"
    assert match.issues == []
    # Every other template that was partly filled is an alternative, best first.
    assert [a["form_type"] for a in match.alternatives][:1] != ["w2"]
    assert all(not a["qualifies"] for a in match.alternatives)


@pytest.mark.parametrize(
    "kind,form_type,box",
    [
        ("NEC", "1099_nec", "nonemployee_compensation"),
        ("INT", "1099_int", "interest_income"),
        ("DIV", "1099_div", "total_ordinary_dividends"),
    ],
)
@pytest.mark.parametrize("seed", range(3))
def test_each_1099_is_told_apart_by_filling_every_template(kind, form_type, box, seed):
    rng = random.Random(seed)
    amount = round(rng.uniform(100, 90_000), 2)
    pages = page(
        form_1099_paragraphs(
            kind=kind,
            year=2023,
            payer_tin=random_ein(rng),
            recipient_tin=random_ssn(rng),
            amount=amount,
        )
    )
    match = match_form(TAX, pages, expected_year=2023)
    assert match.form_type == form_type
    assert match.chosen.fields[box].value == f"{amount:,.2f}"
    assert match.issues == []
    # The other 1099s share the payer and recipient boxes: they are recorded, not chosen.
    others = {a["form_type"] for a in match.alternatives}
    assert others >= {"1099_nec", "1099_int", "1099_div"} - {form_type}


@pytest.mark.parametrize(
    "paragraphs,title",
    [
        (w2_paragraphs(year=2024), "Form W-2"),
        (form_1099_paragraphs(kind="NEC", year=2024), "Form 1099-NEC"),
    ],
)
def test_a_blank_form_is_other_with_the_blank_form_message(paragraphs, title):
    match = match_form(TAX, page(paragraphs))
    assert match.form_type == "" and match.chosen is None
    assert (match.message, match.title) == (BLANK_FORM, title)


def test_a_clinical_report_is_none_of_the_forms():
    pages = ["FINAL DIAGNOSIS: Invasive ductal carcinoma, Nottingham grade 2.\nDate: 03/14/2025"]
    match = match_form(TAX, pages)
    assert (match.form_type, match.message, len(match.attempts)) == ("", NOT_A_FORM, 1)


def test_a_form_for_another_year_than_expected_is_an_error():
    rng = random.Random(11)
    match = match_form(TAX, filled_w2(rng, year=2022), expected_year=2023)
    [issue] = match.issues
    assert (issue["severity"], issue["code"]) == (ERROR, "wrong_tax_year")
    assert issue["message"] == "This Form W-2 is for tax year 2022; tax year 2023 was expected."
    assert match_form(TAX, filled_w2(rng, year=2023), expected_year=2023).issues == []


def test_an_unreadable_year_with_an_expected_year_is_a_warning():
    rng = random.Random(12)
    pages = [filled_w2(rng)[0].replace("Wage and Tax Statement 2024", "Wage and Tax Statement")]
    match = match_form(TAX, pages, expected_year=2024)
    assert match.form_type == "w2"
    assert [i["severity"] for i in match.issues] == [WARNING]


def scripted(plan):
    """A filler that reads only what ``plan[(strategy, form_type)]`` holds, recording calls."""
    calls = []

    def fill(template, pages, strategy, feedback):
        calls.append((strategy, template.doc_type, feedback))
        values = plan.get((strategy, template.doc_type), {})
        return {
            s.name: ExtractedField(s.name, values[s.name], "found", 0.9, values[s.name], 1, 0)
            if s.name in values
            else ExtractedField(s.name)
            for s in template.fields
        }

    fill.calls = calls
    return fill


NEC_PAGE = ["Form 1099-NEC\n12-3456789\n123-45-6789\n1,234.50\n2023"]
SOME = {"form_name": "1099-NEC", "payer_tin": "12-3456789"}
ALL = {**SOME, "recipient_tin": "123-45-6789", "tax_year": "2023"}


def test_attempts_escalate_from_all_templates_to_the_alternatives_to_the_critical_fields():
    filler = scripted(
        {
            (ALL_TEMPLATES, "1099_nec"): SOME,
            (ALTERNATIVES, "1099_nec"): SOME,
            (CRITICAL_FIELDS, "1099_nec"): ALL,
        }
    )
    match = match_form(TAX, NEC_PAGE, filler=filler)
    assert [a.strategy for a in match.attempts] == [ALL_TEMPLATES, ALTERNATIVES, CRITICAL_FIELDS]
    assert match.form_type == "1099_nec" and match.attempts[-1].chosen == "1099_nec"
    second, third = match.attempts[1], match.attempts[2]
    assert "Consider the alternative types: Form 1099-NEC (2/4 required fields)" in (
        second.feedback
    )
    assert "fill form_name, payer_tin, recipient_tin, nonemployee_compensation, tax_year" in (
        third.feedback
    )
    # Attempt 2 refills only the alternatives; attempt 3 only the best of them.
    assert {t for s, t, _ in filler.calls if s == ALTERNATIVES} == {"1099_nec"}
    assert [t for s, t, _ in filler.calls if s == CRITICAL_FIELDS] == ["1099_nec"]


def test_critical_fields_still_missing_after_three_attempts_is_other():
    filler = scripted(
        {
            (ALL_TEMPLATES, "1099_nec"): SOME,
            (ALTERNATIVES, "1099_nec"): SOME,
            (CRITICAL_FIELDS, "1099_nec"): SOME,
        }
    )
    match = match_form(TAX, NEC_PAGE, filler=filler)
    assert len(match.attempts) == 3 and match.form_type == "" and match.message == NOT_A_FORM
    assert [a["form_type"] for a in match.alternatives] == ["1099_nec"]


def test_the_offline_filler_reads_only_the_critical_fields_on_the_last_attempt():
    fields = offline_filler(TAX[0], filled_w2(random.Random(4)), CRITICAL_FIELDS, "")
    assert fields["federal_tax_withheld"].status == "not_present"  # important, not critical
    assert fields["employee_ssn"].status == "found"
