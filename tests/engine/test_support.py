"""A value is reported only when the span it came from supports it: not negated, not "not
performed", not deferred to an addendum, not a prior study's, not another specimen's, not
without its unit. Every document here is fictional."""

from __future__ import annotations

import pytest

from engine.fields.extractors import offline_extractor
from engine.fields.library import load_packs
from engine.fields.loop import LoopConfig, run_loop
from engine.fields.offline_extractor import FOUND, UNSUPPORTED, ExtractedField, outline_for
from engine.fields.support import (
    DEFERRED,
    HISTORICAL,
    NEGATED,
    NO_UNIT,
    NOT_PERFORMED,
    OTHER_SPECIMEN,
    examine,
    index_part,
    locate,
)

PACK = load_packs(("clinical",))["clinical"]
PATHOLOGY = PACK.template("pathology")
RADIOLOGY = PACK.template("radiology")
GENOMIC = PACK.template("genomic")

BREAST = """SURGICAL PATHOLOGY REPORT
Patient: Quill, Avery   Accession: S24-10231

FINAL DIAGNOSIS:
A. Left axillary sentinel lymph node, excision:
One lymph node, negative for metastatic carcinoma (0/1).
B. Left breast, lumpectomy:
Invasive ductal carcinoma, Nottingham grade 2.
Surgical margins negative for carcinoma; closest margin 4 mm (posterior).
C. Skin, left flank, shave excision:
Seborrheic keratosis; margins involved.

BREAST BIOMARKERS (Part B):
Estrogen receptor (ER): Not performed, insufficient tumor in block B3.
Progesterone receptor (PR): Positive (80%, strong).
HER2 (IHC): See addendum.

CLINICAL HISTORY:
ER was positive on the outside biopsy (2019). Ki-67 was 15% at that time.

ADDENDUM:
HER2 by FISH: Amplified (HER2/CEP17 ratio 4.1).
"""

CT = """CT CHEST WITH CONTRAST
COMPARISON: CT chest 01/05/2023, which showed a 2.0 cm right lower lobe nodule.
FINDINGS:
The right lower lobe nodule now measures 1.8 cm, previously 1.2 cm.
No mediastinal lymph node larger than 1 cm.
A 6 mm left upper lobe nodule is new.
IMPRESSION:
Enlarging right lower lobe nodule.
"""


def fields(template, text, *, loop=True):
    pages = [text]
    result = run_loop(
        template=template,
        pages=pages,
        extractor=offline_extractor(template, pages),
        config=LoopConfig(enabled=loop),
    )
    return result.best.fields


def test_a_receptor_not_performed_is_not_reported_and_a_prior_result_does_not_stand_in():
    er = fields(PATHOLOGY, BREAST)["er_status"]
    assert er.value is None and er.status == UNSUPPORTED
    assert set(er.unsupported) & {NOT_PERFORMED, HISTORICAL}


def test_a_receptor_stated_only_as_not_performed_is_unsupported_not_missing():
    text = "FINAL DIAGNOSIS:\nInvasive ductal carcinoma.\nER: not performed.\nPR: not performed."
    er = fields(PATHOLOGY, text)["er_status"]
    assert er.value is None and er.status == UNSUPPORTED and er.unsupported == [NOT_PERFORMED]


def test_a_negative_receptor_is_a_value_not_a_negation():
    text = "FINAL DIAGNOSIS:\nInvasive ductal carcinoma.\nEstrogen receptor: Negative (0%)."
    assert fields(PATHOLOGY, text)["er_status"].value == "Negative (0%)"


def test_see_addendum_takes_the_addendums_value():
    her2 = fields(PATHOLOGY, BREAST)["her2_status"]
    assert her2.status == FOUND and her2.value == "Amplified"
    assert "ADDENDUM" not in her2.snippet and "FISH" in her2.snippet


def test_see_addendum_without_an_addendum_reports_nothing():
    text = "FINAL DIAGNOSIS:\nInvasive ductal carcinoma.\nHER2 (IHC): See addendum."
    her2 = fields(PATHOLOGY, text)["her2_status"]
    assert her2.value is None and her2.unsupported == [DEFERRED]


def test_a_second_specimens_value_is_not_the_tumours():
    found = fields(PATHOLOGY, BREAST)
    assert found["histology"].value == "Invasive ductal carcinoma, Nottingham grade 2."
    assert found["grade"].value == "Nottingham grade 2"
    assert "negative" in found["margins"].value.lower()  # part B's, not part C's "involved"
    outline = outline_for([BREAST])
    assert index_part(outline) == "B"
    involved = BREAST.index("margins involved")
    span = locate(outline, 1, "Seborrheic keratosis; margins involved.", "margins involved")
    assert span is not None and span.start == involved
    assert OTHER_SPECIMEN in examine(PATHOLOGY.field("margins"), outline, span, "margins involved")


def test_a_prior_studys_measurements_are_not_this_studys():
    measurements = fields(RADIOLOGY, CT)["measurements"].value
    assert measurements == ["1.8 cm", "6 mm"]  # not 1.2 cm (previously), 2.0 cm, 1 cm (no ...)


@pytest.mark.parametrize(
    ("sentence", "value", "reason"),
    [
        ("The mass decreased from 2.3 cm to 1.9 cm.", "2.3 cm", HISTORICAL),
        ("The nodule measured 1.1 cm on the prior study.", "1.1 cm", HISTORICAL),
        ("No lymph node measures more than 1 cm.", "1 cm", NEGATED),
    ],
)
def test_context_rules_for_measurements(sentence, value, reason):
    text = f"FINDINGS:\n{sentence}\nIMPRESSION:\nStable."
    outline = outline_for([text])
    span = locate(outline, 1, sentence, value)
    assert reason in examine(RADIOLOGY.field("measurements"), outline, span, value)


def test_the_current_value_after_a_prior_one_stands():
    sentence = "The mass decreased from 2.3 cm to 1.9 cm."
    outline = outline_for([f"FINDINGS:\n{sentence}"])
    span = locate(outline, 1, sentence, "1.9 cm")
    assert examine(RADIOLOGY.field("measurements"), outline, span, "1.9 cm") == []


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("ki67", "30", NO_UNIT),
        ("measurements", "3.2", NO_UNIT),
        ("tmb", "12", NO_UNIT),
        ("her2_status", "Pending", DEFERRED),
    ],
)
def test_values_without_a_unit_or_with_only_a_deferral_are_not_values(field, value, reason):
    template = GENOMIC if field == "tmb" else RADIOLOGY if field == "measurements" else PATHOLOGY
    outline = outline_for(["A report."])
    assert reason in examine(template.field(field), outline, None, value)


def test_an_extractors_unsupported_value_is_withdrawn_and_costs_more_than_a_missing_one():
    """Any extractor's answer (an LLM's) goes through the same screen: a negated value is
    withdrawn, and the score is lower than if the extractor had said nothing."""
    from engine.fields.evaluator import evaluate, screen

    text = "FINAL DIAGNOSIS:\nInvasive ductal carcinoma, grade 3.\nER: not performed."
    answer = {
        "histology": ExtractedField(
            "histology",
            "Invasive ductal carcinoma",
            FOUND,
            0.9,
            "Invasive ductal carcinoma, grade 3.",
            1,
        ),
        "grade": ExtractedField(
            "grade", "grade 3", FOUND, 0.9, "Invasive ductal carcinoma, grade 3.", 1
        ),
        "er_status": ExtractedField(
            "er_status", "not performed", FOUND, 0.9, "ER: not performed.", 1
        ),
    }
    screened = screen(PATHOLOGY, answer, [text])
    er = screened["er_status"]
    assert er.value is None and er.withdrawn == "not performed"
    assert NOT_PERFORMED in er.unsupported or DEFERRED in er.unsupported
    silent = dict(answer, er_status=ExtractedField("er_status"))
    assert (
        evaluate(PATHOLOGY, screened, [text]).overall
        < evaluate(PATHOLOGY, screen(PATHOLOGY, silent, [text]), [text]).overall
    )


def test_a_parenthesised_prior_value_does_not_make_the_current_one_historical():
    text = (
        "FINDINGS: The liver lesion measures 2.4 x 2.0 cm (previously 3.1 x 2.8 cm). The "
        "spleen measures 11 cm. No lymph nodes larger than 1 cm.\nIMPRESSION: Smaller lesion."
    )
    assert fields(RADIOLOGY, text)["measurements"].value == ["2.4 x 2.0 cm", "11 cm"]


def test_a_tumour_named_first_in_a_title_case_history_line_is_not_this_reports():
    text = (
        "Clinical history: history of high grade urothelial carcinoma on prior TURBT (2021).\n"
        "DIAGNOSIS:\nA. Bladder, cystectomy:\n- Invasive urothelial carcinoma, high grade.\n"
        "B. Lymph nodes:\n- Six lymph nodes, negative for carcinoma (0/6).\n"
    )
    found = fields(PATHOLOGY, text)
    assert found["grade"].value == "high grade"
    assert found["grade"].span is not None
    _page, start, _end = found["grade"].span
    assert start > text.index("DIAGNOSIS")  # the diagnosis's, not the history's


def test_a_specimen_line_after_the_diagnosis_label_is_not_the_histology():
    text = (
        "Diagnosis: Kidney, left, radical nephrectomy:\n"
        "Clear cell renal cell carcinoma, Fuhrman nuclear grade 3, 6.2 cm.\n"
    )
    found = fields(PATHOLOGY, text)
    assert found["histology"].value.startswith("Clear cell renal cell carcinoma")
    assert found["grade"].value == "Fuhrman nuclear grade 3"


def test_variants_of_unknown_significance_are_not_reported_as_mutations():
    text = (
        "Genomic Findings:\nKRAS G12D\nTP53 R273H\nVariants of unknown significance: ATM "
        "p.V410A\nEGFR mutations were not detected.\nMicrosatellite status: MS-Stable\n"
    )
    assert fields(GENOMIC, text)["mutations"].value == ["KRAS G12D", "TP53 R273H"]


def test_several_tumours_lower_the_score_of_a_tumours_properties():
    """Two parts with a carcinoma: whose grade is whose cannot be told; the score says so."""
    one = "DIAGNOSIS:\nA. Bladder:\n- Urothelial carcinoma, high grade.\nB. Lymph nodes: benign."
    two = one.replace("B. Lymph nodes: benign.", "B. Prostate:\n- Adenocarcinoma, Gleason 3+3.")
    score = {}
    for name, text in (("one", one), ("two", two)):
        result = run_loop(
            template=PATHOLOGY,
            pages=[text],
            extractor=offline_extractor(PATHOLOGY, [text]),
            config=LoopConfig(),
        )
        score[name] = result.final_score
    assert score["two"] < score["one"]


NOTE = load_packs(("clinical",))["clinical"].template("clinical_note")


def test_a_procedures_figures_are_not_findings():
    text = (
        "TECHNIQUE: Axial images in 10 mm sections after 80 mL of contrast.\n"
        "ESTIMATED BLOOD LOSS:\n400 ml.\n"
        "FINDINGS: A 3 x 4 cm right supraclavicular lymph node.\nIMPRESSION: Adenopathy."
    )
    assert fields(RADIOLOGY, text)["measurements"].value == ["3 x 4 cm"]


def test_a_complaint_that_says_there_is_none_is_not_a_complaint():
    text = "CHIEF COMPLAINT: Unobtainable as the patient is intubated.\nPLAN: Admit to ICU."
    complaint = fields(NOTE, text)["chief_complaint"]
    assert complaint.value is None and complaint.unsupported == [NOT_PERFORMED]


def test_who_came_along_is_not_the_complaint():
    text = "Patient presents with Mom and Dad for her 5-year well-child check. She is well."
    assert fields(NOTE, text)["chief_complaint"].value == "her 5-year well-child check"
