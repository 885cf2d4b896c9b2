"""Templates, the offline extractor, every scoring rule, feedback and the loop's stopping rules."""

from __future__ import annotations

import itertools

import pytest

from engine.fields import evaluator
from engine.fields.extractors import offline_extractor
from engine.fields.library import find_template, load_pack, load_packs
from engine.fields.loop import (
    MAX_ITERATIONS,
    PLATEAU,
    SINGLE_PASS,
    THRESHOLD_MET,
    TIMEOUT,
    LoopConfig,
    run_loop,
)
from engine.fields.offline_extractor import ExtractedField, extract
from engine.fields.templates import Pack, TemplateError

PACKS = load_packs(("clinical", "us_tax"))
PATHOLOGY = find_template(PACKS, "pathology")
GENOMIC = find_template(PACKS, "genomic")
W2 = find_template(PACKS, "w2")
PATH_PAGE = (
    "SURGICAL PATHOLOGY REPORT\n\nFINAL DIAGNOSIS\n\nInvasive ductal carcinoma of the left "
    "breast.\n\nNottingham grade 2 (tubules 3, nuclei 2, mitoses 1).\n\nMargins: negative, "
    "closest 4 mm.\n\nEstrogen receptor (ER): positive, 95%.\n\nKi-67: 20%.\n\n"
    "Date of report: 03/14/2025"
)
# Only the histology, grade and Ki-67 are stated: the loop tests script exactly those.
LOOP_PAGE = (
    "FINAL DIAGNOSIS\n\nInvasive ductal carcinoma of the left breast.\n\nNottingham grade 2 "
    "(tubules 3, nuclei 2, mitoses 1).\n\nKi-67: 20%."
)
# A scanned form: each label on its line, the value on the next; the grade only in the diagnosis.
FORM_PAGE = (
    "Pathology report\nHistologic diagnosis\nHigh grade muscle invasive urothelial cell "
    "carcinoma. T3aN0Mx\nTumor size\n2.5cm diameter\nKi-67: 20%"
)
W2_PAGE = (
    "Form W-2 Wage and Tax Statement 2024\n\na Employee's social security number: "
    "123-45-6789\n\nb Employer identification number: 12-3456789\n\n1 Wages, tips, other "
    "compensation: $52,000.00\n\n2 Federal income tax withheld: $6,100.00\n\n3 Social "
    "security wages: $52,000.00\n\nTax year: 2024"
)


def found(name, value, snippet, page=1):
    return ExtractedField(name, value, "found", 0.9, snippet, page, 0)


# -- templates ---------------------------------------------------------------------------------


def test_both_packs_load_with_their_templates():
    assert [t.doc_type for t in PACKS["clinical"].templates] == [
        "pathology",
        "radiology",
        "genomic",
        "clinical_note",
        "other",
    ]
    assert {t.doc_type for t in PACKS["us_tax"].templates} == {
        "w2",
        "1099_nec",
        "1099_int",
        "1099_div",
        "1099_misc",
        "k1",
    }


def test_a_broken_pack_is_refused_with_the_reason(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(
        '{"name": "bad", "version": "1", "domain": "x", "templates": [{"doc_type": '
        '"t", "title": "T", "fields": [{"name": "a", "description": "A", "tier": '
        '"required", "format": "enum", "labels": ["a"]}]}]}'
    )
    with pytest.raises(TemplateError, match="an enum needs values"):
        load_pack(path)
    with pytest.raises(TemplateError, match="No template pack 'nope'"):
        load_packs(("nope",))


@pytest.mark.parametrize(
    "extra,message",
    [
        ('"finder": "crystal_ball"', "unknown finder 'crystal_ball'"),
        ('"cues": ["(unclosed"]', "is not a regex"),
    ],
)
def test_a_field_with_an_unknown_finder_or_a_broken_cue_is_refused(tmp_path, extra, message):
    path = tmp_path / "bad.json"
    path.write_text(
        '{"name": "bad", "version": "1", "domain": "x", "templates": [{"doc_type": "t", '
        '"title": "T", "fields": [{"name": "a", "description": "A", "tier": "required", '
        f'"labels": ["a"], {extra}}}]}}]}}'
    )
    with pytest.raises(TemplateError, match=message):
        load_pack(path)


def test_a_pack_round_trips_through_its_schema():
    assert Pack.model_validate(PACKS["clinical"].model_dump()) == PACKS["clinical"]


# -- offline extraction -------------------------------------------------------------------------


def test_a_single_pass_reads_labels_and_the_sections_under_headers():
    fields = extract(PATHOLOGY, [PATH_PAGE])
    assert fields["histology"].value == "Invasive ductal carcinoma of the left breast."
    assert fields["grade"].value == "Nottingham grade 2"
    assert fields["er_status"].value == "positive, 95%"
    assert fields["ki67"].value == "20%"
    assert fields["report_date"].value == "03/14/2025"
    assert fields["margins"].value == "negative, closest 4 mm."
    assert {f.level for f in fields.values() if f.status == "found"} == {0}
    assert fields["ki67"].snippet in PATH_PAGE


def test_a_wider_level_reads_a_forms_label_line_and_then_the_diagnosis_itself():
    fields = extract(PATHOLOGY, [FORM_PAGE])
    assert fields["histology"].status == fields["grade"].status == "missing"
    assert fields["histology"].snippet  # the text that shows the report states it
    wider = extract(PATHOLOGY, [FORM_PAGE], levels={"histology": 1, "grade": 2})
    histology, grade = wider["histology"], wider["grade"]
    assert histology.value == "High grade muscle invasive urothelial cell carcinoma. T3aN0Mx"
    assert (histology.level, histology.confidence) == (1, 0.8)
    assert (grade.value, grade.level, grade.confidence) == ("High grade", 2, 0.6)


def test_a_field_the_document_does_not_state_is_not_present_not_missing():
    fields = extract(PATHOLOGY, [FORM_PAGE])
    assert fields["er_status"].status == "not_present" and fields["er_status"].snippet == ""
    assert fields["margins"].status == "not_present"


def test_tax_fields_are_extracted_from_box_labels():
    fields = extract(W2, [W2_PAGE])
    assert fields["employee_ssn"].value == "123-45-6789"
    assert fields["employer_ein"].value == "12-3456789"
    assert fields["wages"].value == "$52,000.00"
    assert fields["tax_year"].value == "2024"


# -- scoring dimensions -----------------------------------------------------------------------

WEIGHT = {"required": 1.0, "important": 0.7, "optional": 0.3}


def test_completeness_measures_what_the_document_states():
    page = "FINAL DIAGNOSIS\n\nInvasive ductal carcinoma of the left breast.\n\nKi-67: 20%."
    fields = {s.name: ExtractedField(s.name) for s in PATHOLOGY.fields}  # all not_present
    fields["histology"] = found("histology", "Invasive ductal carcinoma", page.split("\n\n")[1])
    result = evaluator.evaluate(PATHOLOGY, fields, [page])
    # Ki-67 is stated and was not read: missing, an optional miss; the rest is not stated.
    assert result.fields["ki67"].status == "missing" and result.fields["grade"].status == (
        "not_present"
    )
    assert result.completeness == round(1.0 / (1.0 + 0.3), 4)
    fields["ki67"] = found("ki67", "20%", "Ki-67: 20%.")
    assert evaluator.evaluate(PATHOLOGY, fields, [page]).completeness == 1.0


def test_a_stated_important_field_left_unread_halves_completeness():
    fields = extract(PATHOLOGY, [PATH_PAGE])
    assert evaluator.evaluate(PATHOLOGY, fields, [PATH_PAGE]).completeness == 1.0
    fields["grade"] = ExtractedField("grade")  # an LLM that says "not present"
    result = evaluator.evaluate(PATHOLOGY, fields, [PATH_PAGE])
    stated = sum(WEIGHT[s.tier.value] for s in PATHOLOGY.fields if fields[s.name].status == "found")
    assert result.fields["grade"].status == "missing"
    assert result.completeness == round(0.5 * stated / (stated + 0.7), 4)
    assert result.overall < 0.95 and "grade" in result.priority
    assert any(i["field"] == "grade" and i["severity"] == "major" for i in result.issues)


def test_ambiguous_earns_half_credit():
    fields = extract(PATHOLOGY, [PATH_PAGE])
    stated = sum(WEIGHT[s.tier.value] for s in PATHOLOGY.fields if fields[s.name].status == "found")
    fields["grade"] = ExtractedField("grade", "2", "ambiguous", 0.5, "Nottingham grade 2", 1)
    result = evaluator.evaluate(PATHOLOGY, fields, [PATH_PAGE])
    assert result.completeness == round((stated - 0.35) / stated, 4)  # grade is important


def test_too_few_required_fields_halves_completeness_and_is_an_issue():
    fields = {s.name: ExtractedField(s.name) for s in PATHOLOGY.fields}
    result = evaluator.evaluate(PATHOLOGY, fields, [PATH_PAGE])
    assert result.completeness == 0.0
    assert any("required field(s) found" in i["message"] for i in result.issues)
    fields = extract(PATHOLOGY, [PATH_PAGE])
    fields["histology"] = ExtractedField("histology")
    halved = evaluator.evaluate(PATHOLOGY, fields, [PATH_PAGE])
    assert halved.completeness < 0.5  # one half for the missing field, one for the template


def test_accuracy_needs_the_value_in_the_snippet_and_the_snippet_on_the_page():
    good = found("grade", "2", "Nottingham grade 2 (tubules 3, nuclei 2, mitoses 1).")
    absent_value = found("grade", "4", "Nottingham grade 2 (tubules 3, nuclei 2, mitoses 1).")
    invented = found("grade", "2", "Grade 2 of 3 in the excision specimen")
    for field, expected in ((good, True), (absent_value, False), (invented, False)):
        result = evaluator.evaluate(PATHOLOGY, {"grade": field}, [PATH_PAGE])
        assert result.fields["grade"].grounded is expected
    result = evaluator.evaluate(PATHOLOGY, {"grade": invented}, [PATH_PAGE])
    assert result.accuracy == 0.0
    assert any(i["severity"] == "critical" and i["field"] == "grade" for i in result.issues)


@pytest.mark.parametrize(
    "rule,good,bad",
    [
        ("grade", "2", "7"),
        ("grade", "Grade: G3", "Gleason score 9"),
        ("grade", "poorly differentiated", "unknown"),
        ("grade", "High grade", "see comment"),
        ("receptor", "positive, 95%", "see note"),
        ("receptor", "40%", "weak"),
        ("receptor", "Allred score 8/8", "pending"),
        ("her2", "1+, negative", "pending"),
        ("her2", "Not amplified (ratio 1.3)", "see addendum"),
        ("msi", "MSI-H", "MSI-X"),
        ("msi", "MSS", "stable?"),
        ("msi", "MS-Stable", "proficient"),
        ("msi", "Not Detected", "pending"),
        ("tmb", "4.5", "high grade"),
        ("tmb", "19 Mutations/Mb", "19 cm"),
        ("tmb", "High | 19 Mutations/Mb", "elevated"),
        ("tmb", "TMB-Low", "TMB"),
        ("measurement", "2.1 x 1.5 cm", "two centimetres"),
        ("tax_year", "2024", "1899"),
        ("nonempty", "negative", "  "),
    ],
)
def test_each_validity_rule(rule, good, bad):
    check = evaluator.VALIDITY_RULES[rule]
    assert check(good) and not check(bad)


@pytest.mark.parametrize(
    "fmt,good,bad",
    [
        ("ssn", "123-45-6789", "123456789"),
        ("ssn", "XXX-XX-6789", "900-12-3456"),
        ("ein", "12-3456789", "123-456789"),
        ("currency", "$52,000.00", "52k"),
        ("percentage", "20%", "120%"),
        ("percentage", "15-20%", "20"),
        ("number", "4", "four"),
        ("year", "2024", "24"),
    ],
)
def test_each_format_rule(fmt, good, bad):
    check = evaluator.FORMAT_RULES[fmt]
    assert check(good) and not check(bad)


def test_an_invalid_value_lowers_validity_with_a_major_issue():
    field = found("msi_status", "MSI-X", "MSI status: MSI-X")
    result = evaluator.evaluate(GENOMIC, {"msi_status": field}, ["MSI status: MSI-X"])
    assert result.validity == 0.0
    assert any(i["severity"] == "major" and i["field"] == "msi_status" for i in result.issues)


def test_a_carcinoma_the_report_grades_without_a_grade_extracted_is_inconsistent():
    histology = found("histology", "Invasive ductal carcinoma", PATH_PAGE.split("\n\n")[2])
    result = evaluator.evaluate(PATHOLOGY, {"histology": histology}, [PATH_PAGE])
    assert result.consistency == 0.5
    with_grade = evaluator.evaluate(
        PATHOLOGY,
        {
            "histology": histology,
            "grade": found("grade", "2", "Nottingham grade 2 (tubules 3, nuclei 2, mitoses 1)."),
        },
        [PATH_PAGE],
    )
    assert with_grade.consistency == 1.0
    # A report that gives no grade (a sarcomatoid carcinoma, say) is not penalised for it.
    ungraded = "FINAL DIAGNOSIS: Sarcomatoid carcinoma of the lung."
    histology = found("histology", "Sarcomatoid carcinoma of the lung.", ungraded)
    assert evaluator.evaluate(PATHOLOGY, {"histology": histology}, [ungraded]).consistency == 1.0


def test_mutations_without_the_msi_status_the_report_states_are_inconsistent():
    page = "GENOMIC ALTERATIONS: KRAS G12D, VAF 31%\nMSI status: MSI-High"
    mutations = found("mutations", ["KRAS G12D"], page.split("\n")[0])
    assert evaluator.evaluate(GENOMIC, {"mutations": mutations}, [page]).consistency == 0.5
    page = "GENOMIC ALTERATIONS: KRAS G12D, VAF 31%"
    assert evaluator.evaluate(GENOMIC, {"mutations": mutations}, [page]).consistency == 1.0


def test_social_security_wages_above_wages_are_inconsistent():
    fields = extract(W2, [W2_PAGE])
    assert evaluator.evaluate(W2, fields, [W2_PAGE]).consistency == 1.0
    page = W2_PAGE.replace(
        "3 Social security wages: $52,000.00", "3 Social security wages: $60,000.00"
    )
    result = evaluator.evaluate(W2, extract(W2, [page]), [page])
    assert result.consistency == 0.5
    assert any("above total wages" in i["message"] for i in result.issues)


def test_a_blank_form_is_detected():
    blank = "Form W-2 Wage and Tax Statement\n\na Employee's social security number: ________"
    result = evaluator.evaluate(W2, extract(W2, [blank]), [blank])
    assert any("blank form" in i["message"] for i in result.issues)


def test_overall_is_the_mean_of_expected_precision_and_recall():
    result = evaluator.evaluate(PATHOLOGY, extract(PATHOLOGY, [PATH_PAGE]), [PATH_PAGE])
    expected = 0.5 * (result.expected_precision + result.expected_recall)
    assert abs(result.overall - expected) < 1e-3
    # Values read under their labels are trusted most, not blindly: the score stays below 1.
    assert 0.95 <= result.overall < 1.0


def test_feedback_lists_score_issues_missing_suggestions_priority_and_previous():
    fields = extract(PATHOLOGY, [FORM_PAGE])
    result = evaluator.evaluate(PATHOLOGY, fields, [FORM_PAGE])
    text = evaluator.feedback_block(result, target=0.95, previous=fields)
    assert text.startswith("--- EXTRACTION FEEDBACK ---\nScore ")
    assert "(target 0.95)" in text
    assert "MAJOR issues:" in text and "Missing fields: histology, grade" in text
    assert "Suggestions:" in text and "Priority fields: histology, grade" in text
    assert '"histology": {"status": "missing", "value": null}' in text
    assert '"ki67": {"status": "found", "value": "20%"}' in text


# -- the loop ------------------------------------------------------------------------------------


def scripted(*outputs):
    """An extractor that returns prepared fields per iteration and records its prompts."""
    prompts = []
    queue = iter(outputs)

    def run(prompt, feedback, flagged, iteration):
        prompts.append((prompt, feedback, list(flagged)))
        return next(queue)

    run.prompts = prompts
    return run


def fields_with(**values):
    out = {s.name: ExtractedField(s.name) for s in PATHOLOGY.fields}
    snippets = {
        "histology": LOOP_PAGE.split("\n\n")[1],
        "grade": "Nottingham grade 2 (tubules 3, nuclei 2, mitoses 1).",
        "ki67": "Ki-67: 20%.",
    }
    for name, value in values.items():
        out[name] = found(name, value, snippets[name])
    return out


def test_a_scripted_client_that_improves_reaches_the_threshold():
    extractor = scripted(
        fields_with(ki67="20%"),
        fields_with(ki67="20%", histology="Invasive ductal carcinoma", grade="2"),
    )
    result = run_loop(
        template=PATHOLOGY,
        pages=[LOOP_PAGE],
        extractor=extractor,
        config=LoopConfig(quality_threshold=0.85, max_iterations=3),
    )
    assert result.stopped_reason == THRESHOLD_MET and result.met_threshold
    # First: Ki-67 only, so the stated histology and grade are missing (expected recall is
    # low); then all it states.
    first, second = (i.evaluation.overall for i in result.iterations)
    assert first < 0.6 and second >= 0.95
    assert result.iterations[1].improvement == round(second - first, 4)
    first_prompt, first_feedback, _ = extractor.prompts[0]
    second_prompt, second_feedback, flagged = extractor.prompts[1]
    assert first_feedback is None and second_prompt.startswith(first_prompt)
    assert second_feedback.startswith("--- EXTRACTION FEEDBACK ---") and "histology" in flagged
    assert result.iterations[0].prompt_hash != result.iterations[1].prompt_hash


def test_the_loop_stops_at_max_iterations():
    extractor = scripted(*[fields_with(ki67="20%")] * 2)
    steps = itertools.count()
    result = run_loop(
        template=PATHOLOGY,
        pages=[LOOP_PAGE],
        extractor=extractor,
        config=LoopConfig(max_iterations=2, min_improvement=-1.0),
        clock=lambda: next(steps) * 0.001,
    )
    assert result.stopped_reason == MAX_ITERATIONS and len(result.iterations) == 2


def test_the_loop_stops_on_a_plateau():
    extractor = scripted(fields_with(ki67="20%"), fields_with(ki67="20%"))
    result = run_loop(
        template=PATHOLOGY,
        pages=[LOOP_PAGE],
        extractor=extractor,
        config=LoopConfig(max_iterations=5, min_improvement=0.05),
    )
    assert result.stopped_reason == PLATEAU and len(result.iterations) == 2


def test_the_loop_stops_at_the_timeout():
    times = iter([0.0, 0.0, 31.0, 31.0, 31.0])
    result = run_loop(
        template=PATHOLOGY,
        pages=[LOOP_PAGE],
        extractor=scripted(fields_with(ki67="20%")),
        config=LoopConfig(timeout_seconds=30),
        clock=lambda: next(times),
    )
    assert result.stopped_reason == TIMEOUT and len(result.iterations) == 1


def test_the_best_iteration_is_kept_when_a_later_one_regresses():
    extractor = scripted(
        fields_with(ki67="20%", histology="Invasive ductal carcinoma", grade="2"),
        fields_with(ki67="20%"),
        fields_with(ki67="20%"),
    )
    result = run_loop(
        template=PATHOLOGY,
        pages=[LOOP_PAGE],
        extractor=extractor,
        config=LoopConfig(quality_threshold=1.01, max_iterations=3, min_improvement=-1.0),
    )
    assert len(result.iterations) == 3
    assert result.iterations[1].improvement < 0
    assert result.best is result.iterations[0]


def test_a_disabled_loop_is_a_single_pass():
    result = run_loop(
        template=PATHOLOGY,
        pages=[FORM_PAGE],
        extractor=offline_extractor(PATHOLOGY, [FORM_PAGE]),
        config=LoopConfig(enabled=False),
    )
    assert result.stopped_reason == SINGLE_PASS and len(result.iterations) == 1


def test_the_offline_loop_widens_only_the_flagged_fields():
    result = run_loop(
        template=PATHOLOGY,
        pages=[FORM_PAGE],
        extractor=offline_extractor(PATHOLOGY, [FORM_PAGE]),
        config=LoopConfig(quality_threshold=0.9),
    )
    first, best = result.iterations[0], result.best
    assert first.fields["histology"].status == "missing"
    assert first.evaluation.priority[:2] == ["histology", "grade"]
    assert best.fields["histology"].value.startswith("High grade muscle invasive urothelial")
    assert best.fields["grade"].value == "High grade"
    assert best.fields["ki67"] == first.fields["ki67"]  # unflagged fields stay as they were
    # Read from a form's label lines (level 1), trusted a little less than under a label.
    assert result.stopped_reason == THRESHOLD_MET and 0.9 <= result.final_score < 0.98
