"""Breast pathology values read from a report's structure, with their meaning (issue 37): one
test per class of document, and properties over the report generator's build templates."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import pathgen
from engine.fields import oncology
from engine.fields.evaluator import evaluate, screen
from engine.fields.offline_extractor import FOUND, UNSUPPORTED, extract
from engine.fields.templates import Template


def canon(report: str) -> dict[str, str | None]:
    return {name: r.canonical for name, r in oncology.read([report]).items()}


SYNOPTIC = """SURGICAL PATHOLOGY REPORT
LEFT BREAST, LUMPECTOMY:
Histologic Type: Invasive ductal carcinoma
Nottingham Histologic Grade: Grade 2 (tubules 3, nuclei 2, mitoses 1; total score 6/9)
Margins: Negative for carcinoma; closest margin posterior, 3 mm
Estrogen Receptor (ER): Positive (90%, strong)
Progesterone Receptor (PR): Low positive (5%, weak)
HER2 (by immunohistochemistry): 1+ (negative)
"""


def test_synoptic_checklist_gives_canonical_values():
    assert canon(SYNOPTIC) == {
        "er_status": "positive (90%, strong)",
        "pr_status": "low positive (5%, weak)",
        "her2_status": "negative (IHC 1+)",
        "histology": "8500/3 invasive carcinoma of no special type",
        "grade": "grade 2 (score 6)",
        "margins": "not involved (3 mm)",
    }


def test_narrative_comment_is_read_clause_by_clause():
    report = """FINAL DIAGNOSIS:
RIGHT BREAST, EXCISION:
- INVASIVE LOBULAR CARCINOMA, NOTTINGHAM GRADE II (SCORE 6/9).
- THE ANTERIOR MARGIN IS INVOLVED BY INVASIVE CARCINOMA.

COMMENT:
Immunohistochemistry: the tumor cells are negative for ER; PR is positive in 40% of tumor
cells with moderate staining. HER2 is 2+, equivocal by immunohistochemistry.
"""
    got = canon(report)
    assert got["er_status"] == "negative"
    assert got["pr_status"] == "positive (40%, moderate)"
    assert got["her2_status"] == "equivocal (IHC 2+)"
    assert got["histology"].startswith("8520/3")
    assert got["grade"] == "grade 2 (score 6)"
    assert got["margins"] == "involved"


def test_table_rows_are_key_and_cells():
    report = """LEFT BREAST, MASTECTOMY:
Invasive ductal carcinoma, Nottingham grade 3.
Margins: Uninvolved (closest 2 mm).
Marker | Result | Percent | Intensity
ER | Negative | 0% | -
PR | Positive | 70% | strong
HER2 IHC | Positive | 3+ | -
"""
    got = canon(report)
    assert (got["er_status"], got["pr_status"], got["her2_status"]) == (
        "negative",
        "positive (70%, strong)",
        "positive (IHC 3+)",
    )


def test_ocr_noise_broken_words_and_confused_letters():
    report = """LEFT BREAST, LUMPECT0MY:
Hist0logic Type: lnvasive ca rcinoma, tubular type
0estrogen Recept or: P0sitive, l00% of tumor cel ls, str0ng intensity
Marg ins: Not invol ved, closest O.5 mm
"""
    got = canon(report)
    assert got["er_status"] == "positive (100%, strong)"
    assert got["histology"].startswith("8211/3")
    assert got["margins"] == "not involved (0.5 mm)"


def test_wrapped_line_is_joined_to_its_value():
    report = """RIGHT BREAST, EXCISION:
DIAGNOSIS:
- MIXED DUCTAL AND LOBULAR CARCINOMA (ICD-O-3 8522/3),
NOTTINGHAM HISTOLOGIC GRADE III (SCORE 8/9).
Estrogen receptor: positive, 95%,
moderate
"""
    got = canon(report)
    assert got["grade"] == "grade 3 (score 8)"
    assert got["er_status"] == "positive (95%, moderate)"


def test_addendum_supersedes_the_report_and_decides_her2():
    report = """LEFT BREAST, LUMPECTOMY:
Histologic Type: Invasive ductal carcinoma
HER2 (IHC): 2+ (equivocal)
Estrogen Receptor: See addendum

ADDENDUM
HER2 (FISH): Amplified (HER2/CEP17 ratio 3.1)
Estrogen Receptor: Negative (0%)
"""
    got = canon(report)
    assert got["her2_status"] == "positive (IHC 2+, ISH amplified)"
    assert got["er_status"] == "negative"
    assert oncology.read([report])["her2_status"].addendum


def test_value_of_a_node_specimen_is_not_the_tumours():
    report = """A. SENTINEL LYMPH NODE, EXCISION:
- METASTATIC DUCTAL CARCINOMA IN 1 OF 2 LYMPH NODES.

B. LEFT BREAST, LUMPECTOMY:
Histologic Type: Invasive lobular carcinoma
"""
    assert canon(report)["histology"].startswith("8520/3")


@pytest.mark.parametrize("word", ["Pending", "Sent out to reference laboratory", "To follow"])
def test_pending_or_sent_out_is_no_value(word):
    report = f"""LEFT BREAST, CORE BIOPSY:
Histologic Type: Invasive ductal carcinoma
Estrogen Receptor: {word}
"""
    reading = oncology.read([report])["er_status"]
    assert reading.value is None and reading.withheld == "pending"


def test_previous_biopsy_quoted_is_no_value():
    report = """CLINICAL HISTORY:
Woman with a breast mass. Prior core biopsy (S19-4411): ER positive, PR positive, HER2 3+.

RIGHT BREAST, MASTECTOMY:
Histologic Type: Invasive ductal carcinoma
COMMENT:
Previous biopsy showed estrogen receptor positive and HER2 positive.
"""
    got = oncology.read([report])
    assert "er_status" not in got and "her2_status" not in got and "pr_status" not in got


def test_icdo_code_beside_the_words_gives_the_term():
    report = "RIGHT BREAST, EXCISION:\nTumor Type: Colloid carcinoma (ICD-O-3 8480/3)\n"
    assert canon(report)["histology"] == "8480/3 mucinous carcinoma"


def test_form_with_empty_boxes_has_no_value_and_a_checked_box_has_one():
    report = """BREAST PATHOLOGY REPORTING FORM
Institution: ________
Estrogen Receptor: [ ] Positive  [ ] Low positive  [ ] Negative   %: ________
Progesterone Receptor: [X] Positive  [ ] Low positive  [ ] Negative   %: 60   Intensity: strong
Surgical Margins: [ ] Involved  [ ] Not involved   Distance: ________
Histologic Grade: [ ] 1 [X] 2 [ ] 3   Score: 7
"""
    got = oncology.read([report])
    assert got["er_status"].value is None and got["er_status"].withheld == "empty box"
    assert got["pr_status"].canonical == "positive (60%, strong)"
    assert got["margins"].value is None
    assert got["grade"].canonical == "grade 2 (score 7)"


@pytest.mark.parametrize(
    ("ihc", "ish", "expected"),
    [
        ("0", "", "negative"),
        ("1+", "", "negative"),
        ("2+", "", "equivocal"),
        ("2+", "Amplified (ratio 2.4)", "positive"),
        ("2+", "Not amplified (ratio 1.2)", "negative"),
        ("3+", "", "positive"),
        ("1+", "Amplified (ratio 4.0)", "positive"),
    ],
)
def test_her2_follows_the_asco_cap_rule(ihc, ish, expected):
    report = f"LEFT BREAST, EXCISION:\nHER2 (IHC): {ihc}\n" + (
        f"HER2 (FISH): {ish}\n" if ish else ""
    )
    assert canon(report)["her2_status"].split(" (")[0] == expected


@pytest.mark.parametrize(
    ("name", "a", "b", "agree"),
    [
        ("er_status", "strongly positive", "Positive (95%)", True),
        ("er_status", "Positive (95%)", "Positive (60%)", False),
        ("er_status", "Positive (5%)", "Low positive", True),
        ("er_status", "negative", "Positive (90%, strong)", False),
        ("histology", "Infiltrating duct carcinoma", "invasive carcinoma NST, 8500/3", True),
        ("grade", "Nottingham grade II", "G2, score 6", True),
        ("margins", "free of tumor, 3 mm", "Negative (closest 3 mm)", True),
        ("margins", "Not involved", "tumor at the inked margin", False),
    ],
)
def test_canonical_values_compare_by_meaning(name, a, b, agree):
    x, y = oncology.canonical(name, a), oncology.canonical(name, b)
    assert x is not None and y is not None
    assert oncology.same(name, x, y) is agree


def test_a_report_that_is_not_a_breast_report_is_not_read():
    assert oncology.read(["URINARY BLADDER, TURBT:\nUrothelial carcinoma, high grade.\n"]) == {}


# -- properties over the generator's build templates ----------------------------------------------

BUILD = [t for t in pathgen.templates() if pathgen.split_of(t) == "build"]
# The first three waves' build templates, which the reader reads in full; the fourth wave's (l,
# m) have a property of their own below (a rate of contradictions, as i and j had at first).
BUILD_READ_IN_FULL = [t for t in BUILD if t.split("/")[1] not in pathgen.FOURTH_VARIANTS]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(BUILD_READ_IN_FULL), st.integers(min_value=1000, max_value=100_000))
def test_any_generated_report_gives_the_true_canonical_values(template, index):
    doc = pathgen.generate(template, index)
    got = oncology.read([doc.text])
    for name in pathgen.FIELDS:
        truth = doc.truth[name]
        reading = got.get(name)
        value = reading.canonical if reading else None
        if truth is None:
            assert value is None, (name, doc.features)
        else:
            expected = oncology.canonical(name, truth)
            assert value is not None and expected is not None, (name, doc.features)
            assert oncology.same(name, expected, value), (name, truth, value, doc.features)


def pathology_template() -> Template:
    from engine.fields.library import load_packs

    packs = load_packs(("clinical",))
    template = packs["clinical"].template("pathology")
    assert template is not None
    return template


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(BUILD), st.integers(min_value=1000, max_value=100_000))
def test_extraction_reports_the_true_er_and_withholds_what_is_not_given(template, index):
    doc = pathgen.generate(template, index)
    tpl = pathology_template()
    fields = screen(tpl, extract(tpl, [doc.text]), [doc.text])
    er = fields["er_status"]
    if doc.truth["er_status"] is None:
        assert er.status != FOUND
    else:
        assert er.status == FOUND and er.canonical is not None
        truth = oncology.canonical("er_status", doc.truth["er_status"])
        assert truth is not None and oncology.same("er_status", truth, er.canonical)
        assert " ".join(er.value.split()) in " ".join(doc.text.split())


def test_a_pending_receptor_is_withheld_not_reported():
    tpl = pathology_template()
    report = "LEFT BREAST, CORE BIOPSY:\nHistologic Type: Invasive ductal carcinoma\n"
    report += "Estrogen Receptor: Pending\n"
    fields = screen(tpl, extract(tpl, [report]), [report])
    assert fields["er_status"].status == UNSUPPORTED
    assert evaluate(tpl, fields, [report]).overall > 0


def test_an_ocr_fragment_er_is_not_the_estrogen_receptor():
    report = """LEFT BREAST, EXCISION:
COMMENT:
Tumor cells und er the nipple are positive (90%) for cytokeratin.
"""
    assert "er_status" not in oncology.read([report])


def test_an_empty_institution_box_and_a_form_title_name_no_institution():
    tpl = pathology_template()
    report = """BREAST PATHOLOGY REPORTING FORM
Institution: ________
Requesting physician: ________
Histologic Type: Invasive ductal carcinoma
Estrogen Receptor: [X] Positive  [ ] Low positive  [ ] Negative   %: 80   Intensity: strong
"""
    fields = screen(tpl, extract(tpl, [report]), [report])
    assert fields["institution"].status != FOUND and fields["institution"].value is None
    assert fields["er_status"].canonical == "positive (80%, strong)"


# -- CAP checklist wordings (the build-only generator variants d, e) -------------------------------

CAP = """SURGICAL PATHOLOGY REPORT
RIGHT BREAST, LUMPECTOMY:
CAP CANCER CHECKLIST
Histologic Type: Invasive ductal carcinoma
Histologic Grade (Nottingham Histologic Score)
Glandular (Acinar)/Tubular Differentiation: Score 3
Nuclear Pleomorphism: Score 2
Mitotic Rate: Score 2
Overall Grade: Grade 2 (scores of 6-7)
Margin Status for Invasive Carcinoma: All margins negative for invasive carcinoma
Distance from Invasive Carcinoma to Closest Margin: 4 mm
Closest Margin(s) to Invasive Carcinoma: Anterior
Estrogen Receptor (ER): Positive (90%, strong)
"""


def test_cap_checklist_component_rows_give_the_overall_grade_not_a_component_score():
    got = canon(CAP)
    # "scores of 6-7" is the range grade 2 stands for: no score of this tumour is read.
    assert got["grade"] == "grade 2"
    assert got["margins"] is not None and got["margins"].startswith("not involved")


@pytest.mark.parametrize(
    "value, expected",
    [
        ("Grade 2 (score 6-7)", "grade 2"),
        ("Grade: II/III (Nottingham score 7)", "grade 2 (score 7)"),
        ("SBR grade 3 (score 8/9)", "grade 3 (score 8)"),
        ("Nottingham combined histologic grade 1 of 3 (total score = 5)", "grade 1 (score 5)"),
        ("Scarff-Bloom-Richardson grade III", "grade 3"),
        ("G II", "grade 2"),
        ("Grade two (score 6)", "grade 2 (score 6)"),
    ],
)
def test_grade_wordings_of_a_checklist(value, expected):
    assert oncology.grade_canonical(value) == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        (
            "Uninvolved by invasive carcinoma; Distance from closest margin: 4 mm",
            "not involved (4 mm)",
        ),
        ("Close (0.5 mm, anterior margin)", "not involved (0.5 mm)"),
        ("Close (<2 mm); 1 mm to superior margin", "not involved (1 mm)"),
        ("Free (7 mm, medial margin)", "not involved (7 mm)"),
        ("Clear of invasive carcinoma, closest lateral margin 3 mm", "not involved (3 mm)"),
        ("Transected (inferior margin)", "involved"),
        ("Carcinoma transected at posterior margin", "involved"),
        ("Positive for invasive carcinoma at the medial margin", "involved"),
        ("Involved", "involved"),
        ("No ink on tumor; closest 2 mm", "not involved (2 mm)"),
        ("Tumor at ink (anterior)", "involved"),
    ],
)
def test_margin_wordings_of_a_checklist(value, expected):
    assert oncology.margins_canonical(value) == expected


@pytest.mark.parametrize(
    "name, value, why",
    [
        ("grade", "Grade 2-3", "two grades"),
        ("grade", "grade 2 or 3", "two grades"),
        ("grade", "moderately to poorly differentiated", "two grades"),
        ("grade", "Grade 2 (total score 8)", "grade and score disagree"),
        ("grade", "II/III, total score 8", "grade and score disagree"),
        ("grade", "Grade II/III (score 6)", ""),
        ("grade", "Grade 2 (scores of 6-7)", ""),
        (
            "margins",
            "Negative for invasive carcinoma; carcinoma involves the anterior margin",
            "clear and involved",
        ),
        ("margins", "Close", "close, no distance"),
        ("margins", "Close (1 mm, anterior)", ""),
        ("margins", "Uninvolved by invasive carcinoma", ""),
        ("margins", "Not involved, closest 4 mm lateral", ""),
    ],
)
def test_a_grade_or_margin_that_speaks_against_itself_is_unsure(name, value, why):
    assert oncology.unsure(name, value) == why


def test_the_score_does_not_vouch_for_an_unsure_grade():
    tpl = pathology_template()

    def grade_score(grade_line: str) -> tuple[float, float]:
        report = SYNOPTIC.replace(
            "Grade 2 (tubules 3, nuclei 2, mitoses 1; total score 6/9)", grade_line
        )
        fields = screen(tpl, extract(tpl, [report]), [report])
        return fields["grade"].confidence, evaluate(tpl, fields, [report]).overall

    sure_conf, sure = grade_score("Grade 2 (total score 6)")
    unsure_conf, unsure = grade_score("Grade 2 (total score 8)")
    assert unsure_conf < sure_conf
    assert unsure < sure


def test_ocr_spellings_of_not_applicable_and_one_millimetre():
    assert oncology.margins_canonical("Close (l mm, lateral margin).") == "not involved (1 mm)"
    report = SYNOPTIC.replace(
        "Negative for carcinoma; closest margin posterior, 3 mm", "N0t applicable"
    )
    margins = oncology.read([report])["margins"]
    assert margins.value is None and margins.withheld == "not_performed"


def test_ocr_broken_grade_words_and_a_component_sum():
    assert oncology.grade_canonical("Mo dified SBR: 2+2+2 = 6 (g rade 2)") == "grade 2 (score 6)"
    assert oncology.grade_canonical("NOTTINGHAM GRADE lI, MO DERATELY") == "grade 2"


def test_a_labelled_value_followed_by_another_markers_sentence_gives_both():
    report = (
        "LEFT BREAST, EXCISION:\nInvasive ductal carcinoma.\n"
        "PgR: low positive, 1%, weak. HER2 is 3+, positive by immunohistochemistry.\n"
    )
    assert canon(report)["pr_status"] == "low positive (1%, weak)"
    assert canon(report)["her2_status"] == "positive (IHC 3+)"


def test_a_grade_phrase_with_a_colon_in_a_diagnosis_keeps_the_histology():
    report = (
        "RIGHT BREAST, CORE BIOPSY:\nDIAGNOSIS:\n"
        "Tubular adenocarcinoma, histologic grade (nottingham) "
        "Grade: II/III (Nottingham score 6).\n"
        "ER: Positive, 70%, moderate\n"
    )
    got = canon(report)
    assert got["histology"] == "8211/3 tubular carcinoma"
    assert got["grade"] == "grade 2 (score 6)"


@pytest.mark.parametrize(
    "diagnosis",
    ["Benign breast tissue.", "Fibroadenoma.", "Fibrocystic changes.", "Negative for malignancy."],
)
def test_a_benign_breast_diagnosis_is_no_doubt_for_the_score(diagnosis: str) -> None:
    # A breast biopsy with no tumour has no WHO/ICD-O term to read: its histology keeps the
    # trust of its reading (a doubt would send every benign biopsy back to the model).
    assert oncology.canonical("histology", diagnosis) is None
    assert oncology.names_no_tumour("histology", diagnosis)
    assert not oncology.names_no_tumour("histology", "Invasive ductal carcinoma, grade 2")
    assert not oncology.names_no_tumour("er_status", diagnosis)


# -- second wave: report shapes and wordings the first reader was not built on -------------------


def test_a_value_on_the_line_below_its_key_is_the_keys():
    report = """BREAST, RIGHT, WIDE EXCISION:
Histologic type
    Invasive carcinoma of no special type
Histologic Grade (Nottingham)
    Grade 3 (scores of 8 or 9)
Estrogen receptor:
  Negative (0%)
Progesterone receptor
    Positive, 60%, moderate
"""
    got = canon(report)
    assert got["histology"].startswith("8500/3")
    assert got["grade"] == "grade 3"
    assert got["er_status"] == "negative"
    assert got["pr_status"] == "positive (60%, moderate)"
    # The row is quoted as the page has it (key and value on their own lines).
    reading = oncology.read([report])["pr_status"]
    assert reading.value == "Positive, 60%, moderate"


def test_upper_case_keys_without_colons_and_equals_signs_are_keys():
    report = """LEFT BREAST, MASTECTOMY
TUMOR TYPE  Invasive lobular carcinoma
MARGIN STATUS  Free of carcinoma, 6 mm to the deep margin
ESTROGEN RECEPTOR  Positive (80%, strong)
Progesterone receptor = Negative (0%)
HER2 IHC = 3+ (positive)
"""
    got = canon(report)
    assert got["histology"].startswith("8520/3")
    assert got["margins"] == "not involved (6 mm)"
    assert got["er_status"] == "positive (80%, strong)"
    assert got["pr_status"] == "negative"
    assert got["her2_status"].startswith("positive")


def test_two_printed_columns_read_across_are_read_column_by_column():
    report = (
        "LEFT BREAST, EXCISION:\n"
        "FINDINGS                                      MARKERS\n"
        "Tumour type: Invasive lobular                 ER status: Negative (0%)\n"
        "  carcinoma, classic                          PR status: Positive (30%, weak)\n"
        "Grade: 2 (score 6)                            HER2 (IHC): 1+\n"
        "Margins: Clear, 4 mm from the lateral margin\n"
    )
    got = canon(report)
    assert got["histology"].startswith("8520/3")
    assert got["er_status"] == "negative"
    assert got["pr_status"] == "positive (30%, weak)"
    assert got["her2_status"] == "negative (IHC 1+)"
    assert got["margins"] == "not involved (4 mm)"
    # A value whose words the page does not hold side by side is quoted by its start only.
    histology = oncology.read([report])["histology"]
    assert histology.value is not None and histology.value in report


def test_a_line_ocr_wrapped_in_the_column_gap_gives_its_cell_to_the_right_column():
    report = (
        "RIGHT BREAST, LUMPECTOMY:\n"
        "Type: Invasive ductal carcinoma              ER: Positive (95%, strong)\n"
        "Size: 14 mm                                  \n"
        "PR: Negative (0%)\n"
        "Grade: 1 (score 5)                           HER2 (IHC): 0\n"
    )
    got = canon(report)
    assert got["pr_status"] == "negative"
    assert got["grade"] == "grade 1 (score 5)"
    assert got["her2_status"] == "negative (IHC 0)"


def test_check_box_glyphs_are_boxes():
    report = """BREAST CANCER PROFORMA
Oestrogen receptor: \u2612 Positive  \u2610 Low positive  \u2610 Negative   %: 70
Progesterone receptor: \u2610 Positive  \u2610 Low positive  \u2612 Negative   %: 0
Grade: \u2610 1 \u2612 2 \u2610 3
Margins: \u2610 Involved  \u2612 Not involved   Distance: 2 mm
"""
    got = canon(report)
    assert got["er_status"] == "positive (70%)"
    assert got["pr_status"] == "negative"
    assert got["grade"] == "grade 2"
    assert got["margins"] == "not involved (2 mm)"


@pytest.mark.parametrize(
    ("rows", "grade"),
    [
        (
            ("Tubule formation: 3", "Nuclear pleomorphism: 3", "Mitotic count: 2"),
            "grade 3 (score 8)",
        ),
        (
            ("Glandular differentiation: Score 1", "Nuclear score: 2", "Mitoses: 1"),
            "grade 1 (score 4)",
        ),
        (("Total Nottingham score: 7",), "grade 2 (score 7)"),
    ],
)
def test_a_grade_is_put_together_from_its_component_scores(rows, grade):
    report = "LEFT BREAST, EXCISION:\nHistologic type: Invasive ductal carcinoma\n" + "\n".join(
        rows
    )
    assert canon(report)["grade"] == grade


@pytest.mark.parametrize(
    ("text", "grade"),
    [
        ("High grade (Nottingham III)", "grade 3"),
        ("low-grade invasive carcinoma", "grade 1"),
        ("NHG2 (3+2+1)", "grade 2 (score 6)"),
        ("Intermediate grade", "grade 2"),
        ("Nottingham grade 5/9 (grade I)", "grade 1 (score 5)"),
    ],
)
def test_a_grade_named_by_its_level_or_system_has_its_number(text, grade):
    assert oncology.canonical("grade", text) == grade


@pytest.mark.parametrize(
    ("text", "margins"),
    [
        ("Invasive carcinoma is 3 mm from the inferior margin", "not involved (3 mm)"),
        ("Distance to closest margin: 0.8 cm", "not involved (8 mm)"),
        ("Distance to closest margin: 0 mm", "involved"),
    ],
)
def test_a_margin_stated_only_by_its_distance_has_a_status(text, margins):
    assert oncology.canonical("margins", text) == margins


def test_no_tumour_at_ink_is_a_clear_margin_that_does_not_speak_against_itself():
    text = "No tumour at ink; closest approach 2 mm to the medial margin"
    assert oncology.canonical("margins", text) == "not involved (2 mm)"
    assert oncology.unsure("margins", text) == ""


def test_an_ish_row_stated_as_positive_or_negative_decides_an_equivocal_ihc():
    for result, final in (("Positive (Group 1), ratio 2.6", "positive"), ("Negative", "negative")):
        report = (
            "RIGHT BREAST, EXCISION:\nHER2 protein expression: 2+ (equivocal)\n"
            f"HER2 dual ISH: {result}\n"
        )
        assert canon(report)["her2_status"].startswith(final)


def test_keys_are_matched_by_their_words():
    assert oncology._key_field("Hormone receptor - ER") == "er"
    assert oncology._key_field("PgR expression") == "pr"
    assert oncology._key_field("HER2 status by IHC") == "her2_ihc"
    assert oncology._key_field("HER2 gene amplification (SISH)") == "her2_ish"
    assert oncology._key_field("ERBB2 gene status") == "her2_ish"
    assert oncology._key_field("HER2 (final)") == "her2_final"
    assert oncology._key_field("Morphology") == "histology"
    assert oncology._key_field("Procedure") is None


def test_a_report_of_two_tumours_gives_the_larger_tumours_values():
    report = """LEFT BREAST, MASTECTOMY:
Tumour focality: two foci
TUMOUR 1
Histologic type: Invasive lobular carcinoma
Tumour size: 9 mm
Histologic grade: Grade 1
Estrogen receptor: Positive (90%, strong)
TUMOUR 2
Histologic type: Invasive ductal carcinoma
Tumour size: 2.3 cm
Histologic grade: Grade 3
Estrogen receptor: Negative (0%)
Margins: Uninvolved, 5 mm to the posterior margin
"""
    got = canon(report)
    assert got["histology"].startswith("8500/3")
    assert got["grade"] == "grade 3"
    assert got["er_status"] == "negative"
    assert got["margins"] == "not involved (5 mm)"


def test_a_diagnosis_sentence_cut_at_an_equals_sign_is_read_as_a_sentence():
    got = canon("LEFT BREAST:\nMucinous carcinoma, NHG score 5 = grade 1.\n")
    assert got["histology"].startswith("8480/3")
    assert got["grade"] == "grade 1 (score 5)"


def test_abbreviated_types_are_their_types():
    assert oncology.canonical("histology", "ILC, classic type").startswith("8520/3")
    assert oncology.canonical("histology", "IDC").startswith("8500/3")
    assert oncology.canonical("histology", "IDC with lobular features").startswith("8522/3")


# -- the third wave's classes (pathgen i, j) ------------------------------------------------------


def test_leader_dots_and_abbreviated_keys_make_rows():
    report = """LEFT BREAST, LUMPECTOMY:
Type .......................... Invasive lobular ca., classic
Gr. ........................... G2 (Nottingham 2+2+3=7)
Clearance ..................... Clear, closest margin inferior at 5 mm
E.R. .......................... Pos. 40% (strong)
Progest. receptor ............. Low pos. 5% (weak)
c-erbB-2 ...................... Score 1+ - negative
"""
    assert canon(report) == {
        "histology": "8520/3 invasive lobular carcinoma",
        "grade": "grade 2 (score 7)",
        "margins": "not involved (5 mm)",
        "er_status": "positive (40%, strong)",
        "pr_status": "low positive (5%, weak)",
        "her2_status": "negative (IHC 1+)",
    }


def test_a_pipe_table_row_is_a_row_and_its_border_no_key():
    report = """RIGHT BREAST, EXCISION:
Histologic type: Invasive ductal carcinoma
| Marker | Result | Score |
|---|---|---|
| Oestrogen rec. | Positive | 81-90%, strong |
| PgR | Negative | 0% |
"""
    got = canon(report)
    assert got["er_status"].startswith("positive")
    assert got["pr_status"] == "negative"


def test_a_value_set_off_by_spaces_is_no_second_column():
    report = """LEFT BREAST, EXCISION:
Tumour type (WHO)             Invasive carcinoma NST
Size                          40 mm
Grade                         G3
Clearance                     Clearance 4 mm (medial)
Oestrogen rec.                Neg. (no staining in tumour cells)
c-erbB-2 FISH                 Ratio HER2:CEN17 1.6 (not amplified)
"""
    got = canon(report)
    assert got["histology"].startswith("8500/3")
    assert got["grade"] == "grade 3"
    assert got["margins"] == "not involved (4 mm)"
    assert got["er_status"] == "negative"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Allred score 8/8 (PS 5, IS 3)", "positive (strong)"),
        ("Allred score 4/8 (PS 2, IS 2)", "low positive (moderate)"),
        ("Allred score 0/8 (PS 0, IS 0)", "negative"),
        ("Allred 2/8", "negative"),
        ("Allred 6/8", "positive"),
    ],
)
def test_an_allred_score_alone_gives_the_receptor_category(value, expected):
    assert oncology.receptor_canonical(value) == expected


@given(st.integers(1, 100), st.sampled_from(["weak", "moderate", "strong"]))
def test_a_percentage_range_gives_the_category_of_its_values(percent, intensity):
    lo = 1 if percent <= 10 else ((percent - 1) // 10) * 10 + 1
    hi = 10 if percent <= 10 else lo + 9
    got = oncology.receptor_canonical(f"{lo}-{hi}% of cells, {intensity} staining")
    assert got is not None
    assert got.split(" (")[0] == ("low positive" if percent <= 10 else "positive")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Equivocal (2+), reflexed to FISH: not amplified", "negative"),
        ("2+ (equivocal); ISH amplified, ratio 3.1", "positive"),
    ],
)
def test_a_reflexed_ish_inside_the_ihc_value_decides_it(value, expected):
    got = canon(f"LEFT BREAST:\nHER2 (IHC): {value}\n")
    assert got["her2_status"].startswith(expected)


def test_an_ish_clause_after_her2s_goes_on_about_it():
    report = (
        "LEFT BREAST:\nComment: Controls stained appropriately. Immunostaining shows ER "
        "Positive (80%, strong). HER2 2+ (equivocal); ISH not amplified, ratio 1.4.\n"
    )
    assert canon(report)["her2_status"].startswith("negative")


@pytest.mark.parametrize("mark", [("(X)", "( )"), ("[x]", "[ ]")])
def test_a_check_mark_after_its_option_picks_that_option(mark):
    on, off = mark
    report = f"""Breast cancer dataset
Consultant: ________
Histologic type: Tubular carcinoma
Grade: G1 {off}   G2 {on}   G3 {off}
Margins: Involved {off}   Clear {on}   Closest margin at: 3 mm
ER: Pos {on}   Low {off}   Neg {off}   %: 90%   Intensity: strong
PR: Pos {off}   Low {off}   Neg {on}   %: 0%
HER2 (IHC): 0 {off}   1+ {on}   2+ {off}   3+ {off}
HER2 FISH: Amplified {off}   Not amplified {off}
"""
    got = canon(report)
    assert got["grade"] == "grade 2"
    assert got["margins"].startswith("not involved")
    assert got["er_status"] == "positive (90%, strong)"
    assert got["pr_status"] == "negative"
    assert got["her2_status"].startswith("negative")


def test_clearance_is_a_distance_and_none_is_involved():
    assert oncology.canonical("margins", "Clearance 0 mm (inferior); margin involved") == (
        "involved"
    )
    assert oncology.canonical("margins", "Clearance 3 mrn (superior)") == "not involved (3 mm)"
    assert oncology.canonical("margins", "Minimum clearance: 2 mm, medial") == (
        "not involved (2 mm)"
    )


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("Invasive lobular ca., classic", "8520/3"),
        ("Mucinous ca.", "8480/3"),
        ("Mucinous (colloid) type", "8480/3"),
        ("IDC/ILC mixed type", "8522/3"),
        ("Mixed ductal/lobular carcinoma, invasive", "8522/3"),
    ],
)
def test_abbreviated_carcinoma_and_slashed_mixed_types(text, code):
    assert (oncology.canonical("histology", text) or "").startswith(code)


def test_ca_with_a_number_is_no_carcinoma():
    assert oncology.canonical("histology", "Serum Ca 2.3 mmol/l") is None


def test_grade_keys_by_differentiation_and_g_numbers_in_sentences():
    got = canon("LEFT BREAST:\nDifferentiation: Moderately differentiated\n")
    assert got["grade"] == "grade 2"
    got = canon("LEFT BREAST:\nDiagnosis -\nInvasive carcinoma NST, G3.\n")
    assert got["grade"] == "grade 3"


def test_a_letter_naming_no_organ_is_a_breast_report_by_its_markers():
    letter = (
        "Dear Dr Hale,\n\nThis excision shows invasive carcinoma NST (G2).\n\n"
        "On immunohistochemistry the tumour is ER Positive (90%); PgR Negative (0%).\n"
    )
    assert oncology.is_breast_report([letter])
    assert canon(letter)["er_status"] == "positive (90%)"
    assert not oncology.is_breast_report(["Dear Dr Hale,\nThe colon biopsy shows adenoma.\n"])


def test_ocr_errors_in_keys_are_read_through():
    report = """LEFT BREAST:
Pr0gest. receptor ............. Negative (0%)
Nottingharn (NHG):\tpoorly differentiated (grade 3)
Surgica1 margin:\tInferior margin: involved by carcinoma
"""
    got = canon(report)
    assert got["pr_status"] == "negative"
    assert got["grade"] == "grade 3"
    assert got["margins"] == "involved"


def _sure_and_wrong(templates: list[str]) -> tuple[int, int]:
    """Over documents 400-419 of each template (the reader was not tuned on them): the values
    read with no doubt (level 0), and how many of them contradict the truth."""
    sure = wrong = 0
    for template in templates:
        for index in range(400, 420):
            doc = pathgen.generate(template, index)
            for name, reading in oncology.read([doc.text]).items():
                truth = doc.truth.get(name)
                if reading.canonical and truth and reading.level == 0:
                    sure += 1
                    expected = oncology.canonical(name, truth) or truth
                    wrong += not oncology.same(name, expected, reading.canonical)
    return sure, wrong


def test_third_wave_build_reports_rarely_contradict_the_truth_where_the_reader_is_sure():
    # Development property over the build variants i and j (k is held out), on documents the
    # reader was not tuned on (indices 400-419): of the values read with no doubt (level 0),
    # at most 1% contradict the truth.
    sure, wrong = _sure_and_wrong([t for t in pathgen.templates() if t[-1] in "ij"])
    assert sure > 500
    assert wrong <= 0.01 * sure


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("grade", "G1 ( )   G2 ( )   G3 (X)"),
        ("grade", "G1 [x]   G2 [ ]   G3 [ ]"),
        ("margins", "Involved ( )   Clear (X)   Closest margin at: 7 mm"),
        ("margins", "Involved [x]   Clear [ ]   Closest margin at: ____"),
    ],
)
def test_options_left_unchecked_after_their_boxes_raise_no_doubt(name, row):
    assert oncology.canonical(name, row) is not None
    assert oncology.unsure(name, row) == ""
    # ... while the same options all stated are a doubt.
    assert oncology.unsure(name, row.replace("( )", "(X)").replace("[ ]", "[x]")) != ""


# -- the fourth wave's classes (build variants l, m) ----------------------------------------------


@pytest.mark.parametrize(
    "row",
    [
        "Estrogen receptor (ER) is Positive (90%, strong)",
        "Estrogen receptor (ER) - Positive (90%, strong)",
        "Estrogen receptor (ER):- Positive (90%, strong)",
        "Estrogen receptor (ER) -- Positive (90%, strong)",
        "Estrogen receptor (ER)\t\t\tPositive (90%, strong)",
        "Estrogen receptor (ER) Positive (90%, strong)",
        "Oestr. Positive (90%, strong)",
    ],
)
def test_a_key_meets_its_value_by_any_separator_or_none(row):
    got = canon("LEFT BREAST, LUMPECTOMY:\n" + row + "\n")
    assert got["er_status"] == "positive (90%, strong)"


def test_a_sentence_before_is_is_no_key_and_er_in_lower_case_no_marker():
    # ("The tumour ... is" names no key; OCR's "und er" is no estrogen receptor)
    assert oncology._key_value("The tumour described in the earlier note is grade 2")[1] is None
    got = canon(
        "LEFT BREAST, EXCISION:\n"
        "Tumor cells und er the nipple are positive (90%) for cytokeratin.\n"
    )
    assert "er_status" not in got


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("Estroge Receptor (SP1)", "er"),  # a letter dropped
        ("Proqesterone receptor", "pr"),  # g read as q
        ("Marqin status", "margins"),
        ("Combined histologic qrade", "grade"),  # the repaired word decides, not "histologic"
        ("Resection margis", "margins"),  # one letter from "margin" and from "margins"
        ("Estr. rec.", "er"),
        ("Oestr.", "er"),
        ("Mgns", "margins"),
        ("Histol. dx", "histology"),
    ],
)
def test_keys_damaged_by_ocr_or_abbreviated_name_their_field(key, field):
    assert oncology._key_field(key) == field


@pytest.mark.parametrize(
    ("row", "grade"),
    [
        ("Nott. grade [v] Grade 1    [ ] Grade 2    [ ] Grade 3", "grade 1"),
        ("Nott. grade Grade 1    Grade 2 \u2713    Grade 3", "grade 2"),
        ("Nott. grade Grade 1    \u2713 Grade 2    Grade 3", "grade 2"),
        ("Nott. grade * Grade 1    Grade 2    Grade 3", "grade 1"),
        ("Nott. grade Grade 1 < >    Grade 2 < >    Grade 3 <x>", "grade 3"),
        ("Nott. grade Grade 1 [ ]    Grade 2 [*]    Grade 3 [ ]", "grade 2"),
    ],
)
def test_check_marks_of_every_style_before_or_after_their_option(row, grade):
    assert canon("LEFT BREAST, LUMPECTOMY:\n" + row + "\n")["grade"] == grade


def test_printed_options_with_none_marked_are_no_value():
    report = (
        "LEFT BREAST, CORE BIOPSY:\n"
        "Margin status - Positive    Negative\n"
        "Estrogen receptor (ER) - Positive    Negative\n"
        "HER-2 - 0    1+    2+    3+\n"
    )
    got = oncology.read([report])
    for name in ("margins", "er_status", "her2_status"):
        assert name not in got or got[name].canonical is None


def test_a_forms_percentage_and_intensity_sub_rows_go_with_the_receptor_above():
    report = (
        "LEFT BREAST, LUMPECTOMY:\n"
        "Oestr.\t\t\t* Positive    Negative\n"
        "  % cells\t\t\t5\n"
        "  Intensity\t\t\tWeak    * Moderate    Strong\n"
    )
    assert canon(report)["er_status"] == "low positive (5%, moderate)"


@pytest.mark.parametrize(
    ("value", "meaning"),
    [
        ("H-score 180", "positive"),  # above 30: more than 10% of cells
        ("H-score 0", "negative"),
        ("H-score 20", None),  # cannot tell low positive from positive
        ("Low positive (H-score 10)", "low positive"),
        ("60 percent, moderate intensity", "positive (60%, moderate)"),
        ("0 percent of nuclei", "negative"),
        ("Strongly positive in >50% of cells", "positive (strong)"),
        ("Weakly positive in 1-10% of cells", "low positive (weak)"),
        ("Moderately positive in 11-50% of cells", "positive (moderate)"),
        ("less than 1% (negative)", "negative"),
        ("40% nuclei staining, intensity 2+", "positive (40%, moderate)"),
    ],
)
def test_receptors_by_h_score_percent_in_words_ranges_bounds_and_intensity_scores(value, meaning):
    assert oncology.receptor_canonical(value) == meaning


@pytest.mark.parametrize(
    ("value", "meaning"),
    [
        ("HER2/CEP17 ratio 2.6; mean HER2 copy number 5.5 per cell", "positive"),
        ("ratio 1.3 (HER2 2.5 signals/nucleus)", "negative"),
        ("2+ equivocal; reflex ISH ratio 2.4, 5.0 HER2 copies per cell", "positive"),
        ("ratio 2.2, mean HER2 3.1 signals", None),  # group 2: no result read
        ("Negative (score 0 on a 0-3+ scale)", "negative"),  # the scale is no score
        ("Equivocal (score 2+ on a 0-3+ scale)", "equivocal"),
    ],
)
def test_her2_by_ratio_and_copy_number_and_a_scale_that_is_no_score(value, meaning):
    assert oncology.her2_canonical(value) == meaning


@pytest.mark.parametrize(
    ("value", "meaning"),
    [
        ("Tubules 3, nuclei 2, mitoses 3", "grade 3 (score 8)"),
        ("Tubu les 1, nuc lei 2, rnitoses 2", "grade 1 (score 5)"),  # OCR-broken words
        ("T3P2M1 (total 6)", "grade 2 (score 6)"),
        ("Nuclear 1, tubular 2, mitotic 1 - total 4", "grade 1 (score 4)"),
        ("Score 7 of 9 (tubular 3, nuclear 2, mitotic 2)", "grade 2 (score 7)"),
    ],
)
def test_grade_by_its_component_scores_or_total_alone(value, meaning):
    assert oncology.grade_canonical(value) == meaning


@pytest.mark.parametrize(
    ("value", "meaning"),
    [
        ("0.4 cm from medial margin", "not involved (4 mm)"),
        ("8 millimeters to medial margin", "not involved (8 mm)"),
        ("less than 1 mm from the posterior margin", "not involved"),
        ("< 2 mm (anterior), margins negative", "not involved"),
        ("Tumor on ink (superior)", "involved"),
        ("Positive for carcinoma at medial margin", "involved"),
    ],
)
def test_margins_by_distance_in_words_or_cm_a_bound_or_tumour_on_ink(value, meaning):
    assert oncology.margins_canonical(value) == meaning


def test_nuclear_in_a_margin_sentence_is_no_clear_margin():
    text = "Nuclear 2, tubular 1 - total 4. As to the margins, Involved (posterior), distance 0 mm"
    assert oncology.margins_canonical(text) == "involved"


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("Lobular, invasive", "8520/3"),
        ("Tubular, invasive (ICD-O-3 pending)", "8211/3"),
        ("Ductal and lobular, invasive (mixed)", "8522/3"),
        ("It contains mucinous, invasive (Nottingham: 3+1+1)", "8480/3"),
    ],
)
def test_a_type_word_and_invasive_name_the_tumour_without_carcinoma(value, code):
    got = oncology.histology_canonical(value)
    assert got is not None and got.startswith(code)


def test_a_value_wrapped_onto_the_next_line_under_any_row():
    report = (
        "LEFT BREAST, LUMPECTOMY:\n"
        "Hist. type Carcinoma of\n"
        "           breast, mucinous\n"
        "Estrogen receptor (ER) - Strongly positive in\n"
        "    >50% of cells\n"
        "Nott. grade\t\t\tNuclear 1, tubular 3,\n"
        "   mitotic 2 - total 6\n"
    )
    got = canon(report)
    assert got["histology"] == "8480/3 mucinous carcinoma"
    assert got["er_status"] == "positive (strong)"
    assert got["grade"] == "grade 2 (score 6)"


def test_two_columns_whose_rows_have_no_colon_are_read_down():
    report = (
        "LEFT BREAST, LUMPECTOMY:\n"
        "TUMOUR                                            Biomarkers\n"
        "Carcinoma type - Invasive lobular carcinoma       ER - Positive (90%, strong)\n"
        "Size - 11 mm                                      PR - Negative (0%)\n"
        "Combined histologic grade - Tubules 2, nuclei\n"
        "   2, mitoses 1\n"
        "Margin status - 0.4 cm from medial margin\n"
    )
    got = canon(report)
    assert got["grade"] == "grade 1 (score 5)"
    assert got["er_status"] == "positive (90%, strong)"
    assert got["pr_status"] == "negative"
    assert got["margins"] == "not involved (4 mm)"


def test_fourth_wave_build_reports_rarely_contradict_the_truth_where_the_reader_is_sure():
    # Development property over the build variants l and m (n is held out), on documents the
    # reader was not tuned on (indices 400-419): of the values read with no doubt (level 0),
    # at most 1% contradict the truth.
    sure, wrong = _sure_and_wrong([t for t in BUILD if t.split("/")[1] in pathgen.FOURTH_BUILD])
    assert sure > 500
    assert wrong <= 0.01 * sure


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("grade", "Grade 1 \u2713    Grade 2    Grade 3"),
        ("grade", "[v] Grade 1    [ ] Grade 2    [ ] Grade 3"),
        ("grade", "* Grade 1    Grade 2    Grade 3"),
        ("margins", "Positive    \u2713 Negative"),
        ("margins", "Positive <x>    Negative < >"),
    ],
)
def test_options_left_bare_or_unchecked_before_their_boxes_raise_no_doubt(name, row):
    assert oncology.canonical(name, row) is not None
    assert oncology.unsure(name, row) == ""
