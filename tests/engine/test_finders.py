"""The readers behind the clinical fields, on the forms real reports use (texts written for
these tests in the shapes of OCR'd pathology reports, transcriptions, chest X-ray reports,
vendor genomic reports and clinic notes). Each value must come with its own page text."""

from __future__ import annotations

import pytest

from engine.fields import evaluator
from engine.fields.extractors import offline_extractor
from engine.fields.finders import MAX_LEVEL
from engine.fields.library import find_template, load_packs
from engine.fields.loop import LoopConfig, run_loop
from engine.fields.offline_extractor import extract_field, outline_for
from engine.fields.sections import Outline, label_match

PACKS = load_packs(("clinical",))
PATHOLOGY = find_template(PACKS, "pathology")
RADIOLOGY = find_template(PACKS, "radiology")
GENOMIC = find_template(PACKS, "genomic")
NOTE = find_template(PACKS, "clinical_note")
OTHER = find_template(PACKS, "other")


def read(template, name, text):
    """The field read with every level open, as the loop ends up reading it."""
    pages = text if isinstance(text, list) else [text]
    field = extract_field(template.field(name), pages, max_level=MAX_LEVEL)
    if field.status == "found":
        assert evaluator._grounded(field, pages), f"{name}: {field.value!r} not grounded"
    return field


def value(template, name, text):
    field = read(template, name, text)
    return field.value if field.status == "found" else None


# -- sections --------------------------------------------------------------------------------------


def test_sections_are_read_from_inline_and_standalone_headers():
    outline = Outline(
        [
            "EXAMINATION: PA and lateral chest\n\nFINDINGS: The lungs are clear. No effusion.\n\n"
            "IMPRESSION: No acute disease.",
            "CC: ,Headache.\nHX: ,This 37y/o man.\nASSESSMENT:\n1.  Migraine.\n2.  Anemia.\n"
            "PLAN: , Follow up.",
        ]
    )
    sections = {(s.page, s.header.key): s.text for s in outline.sections}
    assert sections[(1, "findings")] == "The lungs are clear. No effusion."
    assert sections[(1, "impression")] == "No acute disease."
    assert sections[(2, "cc")] == "Headache."
    assert sections[(2, "assessment")] == "1.  Migraine.\n2.  Anemia."


def test_a_header_with_nothing_under_it_heads_the_sub_sections_that_follow():
    outline = Outline(
        [
            "FINAL DIAGNOSIS:\nA. LEFT BREAST, MASTECTOMY:\n- INVASIVE DUCTAL CARCINOMA.\n"
            "COMMENT: see synoptic."
        ]
    )
    [diagnosis] = [s for s in outline.sections if s.header.key == "final diagnosis"]
    assert diagnosis.text.endswith("- INVASIVE DUCTAL CARCINOMA.")


def test_a_title_case_label_inside_a_section_does_not_end_it():
    outline = Outline(["FINAL DIAGNOSIS:\nAdenocarcinoma.\nMargins:  Negative.\nGROSS: 3 cm."])
    [diagnosis] = [s for s in outline.sections if s.header.key == "final diagnosis"]
    assert diagnosis.text == "Adenocarcinoma.\nMargins:  Negative."


@pytest.mark.parametrize(
    "header,label,kind",
    [
        ("final diagnosis", "final diagnosis", 0),
        ("reason for neurological consultation", "reason for", 1),
        ("post operative diagnosis", "diagnosis", 2),
        ("history and reason for consultation", "reason for", 3),
        ("history of present illness", "complaint", None),
    ],
)
def test_how_a_header_names_a_label(header, label, kind):
    assert label_match(header, label) == kind


# -- pathology -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Nottingham grade 2 (tubules 3, nuclei 2, mitoses 1).", "Nottingham grade 2"),
        ("Histologic grade:  Well differentiated.", "Histologic grade: Well differentiated"),
        ("Overall Grade: Grade 2 (scores of 6 or 7)", "Grade 2"),
        ("Grade: G3\nR-Classification: R0", "Grade: G3"),
        ("- INVASIVE DUCTAL CARCINOMA, NOTTINGHAM GRADE 3 OF 3.", "NOTTINGHAM GRADE 3 OF 3"),
        ("SBR grade 2/3", "SBR grade 2/3"),
        ("Adenocarcinoma, Grade 2, measuring 1 cm.", "Grade 2"),
        ("Fuhrman nuclear grade 3", "Fuhrman nuclear grade 3"),
        ("Histologic grade\n2\nTumor size\n1.2 cm", "2"),
        ("High grade muscle invasive urothelial cell carcinoma. T3aN0Mx", "High grade"),
        ("Invasive urothelial carcinoma of high-grade", "high-grade"),
        ("Infiltrating ductal carcinoma, moderately differentiated.", "moderately differentiated"),
        ("Carcinoma, poorly differentiated, pT2bG3 N0", "poorly differentiated"),
    ],
)
def test_the_grade_in_its_common_forms(text, expected):
    assert value(PATHOLOGY, "grade", "FINAL DIAGNOSIS:\n" + text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Ductal carcinoma in situ, nuclear grade 2.",
        "Adenocarcinoma of prostate, Gleason score 9 (5+4).",
        "Benign breast tissue; low grade fever noted clinically.",
        "CLINICAL HISTORY: poorly differentiated carcinoma on prior biopsy.\nDIAGNOSIS: Scar.",
    ],
)
def test_what_is_not_a_tumour_grade(text):
    assert value(PATHOLOGY, "grade", text) is None


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Histologic diagnosis\nHigh grade urothelial cell carcinoma + CIS.", "High grade"),
        ("DIAGNOSIS: , Benign cystic ovary.", "Benign cystic ovary."),
        (
            "PATHOLOGY REPORT:\nPRIMARY SITE: Bladder\nCarcinoma, urothelial NOS\n"
            '1 - "Bladder + prostate":\nHigh-grade urothelial carcinoma of the bladder.',
            "High-grade urothelial carcinoma of the bladder.",
        ),
        (
            "DIAGNOSTIC OPINION:\n1.  Adenocarcinoma, Gleason score 9.\nPOST-OPERATIVE "
            "DIAGNOSIS: , Adenocarcinoma of prostate, erectile dysfunction.",
            "Adenocarcinoma, Gleason score 9.",
        ),
        (
            "Pathologic Diagnosis\nProvided on Initial\nPathology Report\nSlides of a "
            "cystectomy with a poorly differentiated urothelial carcinoma.",
            "Slides of a cystectomy",
        ),
    ],
)
def test_the_histology_under_its_label_or_in_the_diagnosis(text, expected):
    assert value(PATHOLOGY, "histology", text).startswith(expected)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Margins:  Bronchial margins are free of tumor.", "Bronchial margins are free of tumor."),
        ("Margins of excision:  Negative for malignancy.", "Negative for malignancy."),
        (
            "Carcinoma invades the wall with surgical\nmargins of the ureters free of neoplasia.",
            "Carcinoma invades the wall with surgical margins of the ureters free of neoplasia.",
        ),
        ("D.  Excision margin is positive.", "Excision margin is positive."),
        ("- MARGINS FREE OF TUMOR; CLOSEST 0.4 CM.", "MARGINS FREE OF TUMOR"),
    ],
)
def test_margins(text, expected):
    assert value(PATHOLOGY, "margins", text) == expected


@pytest.mark.parametrize(
    "text,er,pr",
    [
        ("Estrogen receptor (ER): positive, 95%.", "positive, 95%", None),
        (
            "ER (clone SP1): Positive (95%, strong)\nPR: Negative (<1%)",
            "Positive (95%, strong)",
            "Negative (<1%)",
        ),
        (
            "ESTROGEN RECEPTOR: POSITIVE (90%)\nPROGESTERONE RECEPTOR: NEGATIVE",
            "POSITIVE (90%)",
            "NEGATIVE",
        ),
        (
            "Estrogen Receptor (ER) Status: Positive (Allred score 8/8)",
            "Positive (Allred score 8/8)",
            None,
        ),
        (
            "Estrogen Receptor\nPositive\n95%\nProgesterone Receptor\nPositive\n40%",
            "Positive",
            "Positive",
        ),
        (
            "The tumor cells are strongly positive for estrogen and progesterone receptors.",
            "strongly positive",
            "strongly positive",
        ),
        ("ER positive, PR negative, HER2 negative.", "positive", "negative"),
        (
            "CELLS ARE ER POSITIVE (95%),\nPR POSITIVE (60%) AND HER2/NEU NEGATIVE (SCORE 1+).",
            "POSITIVE (95%)",
            "POSITIVE (60%)",
        ),
    ],
)
def test_hormone_receptors(text, er, pr):
    assert value(PATHOLOGY, "er_status", text) == er
    assert value(PATHOLOGY, "pr_status", text) == pr


def test_a_pr_in_a_case_barcode_is_not_a_progesterone_receptor():
    text = "TCGA-2F-A9KO-01A-PR\nPathology report\nHistologic diagnosis\nCarcinoma."
    assert read(PATHOLOGY, "pr_status", text).status == "not_present"


@pytest.mark.parametrize(
    "text,expected",
    [
        ("HER2 (HercepTest) 1+", "1+"),
        ("HER2/NEU: 1+ (NEGATIVE)", "1+ (NEGATIVE)"),
        ("HER-2/neu by FISH: not amplified (ratio 1.1)", "not amplified (ratio 1.1)"),
        ("HER2 (by immunohistochemistry): Equivocal (Score 2+)", "Equivocal (Score 2+)"),
        ("and negative for HER2 (score 0).", "negative"),
    ],
)
def test_her2(text, expected):
    assert value(PATHOLOGY, "her2_status", text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Ki-67: 20%.", "20%"),
        ("Ki67 proliferation index: 15-20%", "15-20%"),
        ("Ki-67 (MIB-1) labeling index of 30%", "30%"),
    ],
)
def test_ki67(text, expected):
    assert value(PATHOLOGY, "ki67", text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Date of report: 03/14/2025", "03/14/2025"),
        ("Electronically signed out by A. Smith, MD on 03/22/2013", "03/22/2013"),
        ("Date of report\nICD-O-3\nDate Reviewed: 12/10/2013", None),
    ],
)
def test_report_date(text, expected):
    assert value(PATHOLOGY, "report_date", text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        (
            "SURGICAL PATHOLOGY REPORT\nMemorial Regional Hospital\nDepartment of Pathology",
            "Memorial Regional Hospital",
        ),
        (
            "Final Report\nbody\n\u00a92019 Caris Life Sciences. All rights reserved.",
            "Caris Life Sciences",
        ),
        ("SURGICAL PATHOLOGY REPORT\nClinical Laboratory\nFINAL DIAGNOSIS: Carcinoma.", None),
    ],
)
def test_the_institution_from_a_letterhead_or_copyright_line(text, expected):
    assert value(PATHOLOGY, "institution", text) == expected


# -- genomic ---------------------------------------------------------------------------------------


def test_variants_msi_and_tmb_from_a_vendor_report():
    text = (
        "BIOMARKER FINDINGS\nMicrosatellite status - MS-Stable\nTumor Mutational Burden - 12 "
        "Muts/Mb\nGENOMIC FINDINGS\nEGFR exon 19 deletion (E746_A750del)\nTP53 R273H\n"
        "CDKN2A/B loss\nEML4-ALK fusion\nKRAS   p.G12D   c.35G>A   31.2%\nBRCA2 c.5000C>T\n"
        "Fusions: NTRK1 RNA-Seq Fusion Not Detected\nERBB2 (Her2/Neu) NGS Mutation Not Detected\n"
        "Patients with BRAF V600E mutations may benefit from therapy.\n"
        "Smith J, et al. (2014) KRAS and MAPK1 gene amplification in ovarian carcinoma."
    )
    assert value(GENOMIC, "mutations", text) == [
        "EGFR exon 19 deletion",
        "TP53 R273H",
        "CDKN2A/B loss",
        "EML4-ALK fusion",
        "KRAS p.G12D",
        "BRCA2 c.5000C>T",
    ]
    assert value(GENOMIC, "msi_status", text) == "MS-Stable"
    assert value(GENOMIC, "tmb", text) == "12 Muts/Mb"


def test_a_flattened_xml_report_pairs_genes_with_their_alteration():
    text = "Name: TP53\nInclude: true\nName: R248W\nGene: CCNE1\nAlteration: amplification"
    field = read(GENOMIC, "mutations", text)
    assert field.value == ["TP53 R248W", "CCNE1 amplification"]
    assert field.snippets[0] == "Name: TP53\nInclude: true\nName: R248W"


@pytest.mark.parametrize(
    "text,msi,tmb",
    [
        (
            "MSI NGS Stable\nTumor Mutational Burden High | 19 Mutations/Mb",
            "Stable",
            "High | 19 Mutations/Mb",
        ),
        ("MSI Status: MSI-High\nTMB: 14.2 m/MB (High)", "MSI-High", "14.2 m/MB"),
        (
            "Microsatellite instability: Not Detected\nTumor Mutational Burden: 8.6 mut/Mb",
            "Not Detected",
            "8.6 mut/Mb",
        ),
        (
            "Name: Microsatellite status\nInclude: true\nName: MS-Stable\n"
            "Name: Tumor Mutation Burden\nName: TMB-Low",
            "MS-Stable",
            "TMB-Low",
        ),
    ],
)
def test_msi_and_tmb_forms(text, msi, tmb):
    assert value(GENOMIC, "msi_status", text) == msi
    assert value(GENOMIC, "tmb", text) == tmb


# -- radiology -------------------------------------------------------------------------------------


def test_measurements_are_the_findings_not_the_technique():
    text = (
        "TECHNIQUE: 5 mm thick spiral images after 100 mL of Omnipaque contrast.\n"
        "HISTORY: 3 cm mass on outside CT.\n"
        "FINDINGS: The right ovary measures 3.1 x 1.6 x 2.3 cm. A 4 mm nodule.\n"
        "The aneurysm measures 3.7 cm transversely x 3.4 AP. Spur measuring 6mm.\n"
        "IMPRESSION: Stable 4 mm nodule."
    )
    assert value(RADIOLOGY, "measurements", text) == ["3.1 x 1.6 x 2.3 cm", "4 mm", "3.7 cm", "6mm"]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("FINDINGS:\nExamination was performed on 9/1/05.\nNormal.", "9/1/05"),
        ("CLINICAL: Study performed on 10/04/05.\nFINDINGS: Normal.", "10/04/05"),
        ("DATE OF EXAM: 01/12/2010\nFINDINGS: Normal.", "01/12/2010"),
        ("COMPARISON: CT of the abdomen dated 02/13/09.\nFINDINGS: Normal.", None),
        ("IMPRESSION: Pregnancy with an estimated date of delivery of 09/28/09.", None),
        ("Comparison is made with the prior study performed on 10/20/04.", None),
    ],
)
def test_the_exam_date_near_its_label(text, expected):
    assert value(RADIOLOGY, "exam_date", text) == expected


def test_a_hyphenated_measurement_is_a_measurement():
    text = "FINDINGS: A 12-mm simple cyst is present in the right kidney."
    assert value(RADIOLOGY, "measurements", text) == ["12-mm"]


def test_findings_and_impression_are_whole_sections():
    text = "FINDINGS: , The lungs are clear.\nNo effusion.\nIMPRESSION:\n1.  No acute disease."
    assert value(RADIOLOGY, "findings", text) == "The lungs are clear. No effusion."
    assert value(RADIOLOGY, "impression", text) == "No acute disease."


# -- clinical notes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("CC: ,Headache,HX: ,This 16 y/o RHF was well.", "Headache"),
        (
            "CHIEF COMPLAINT:\nRule out sleep apnea.\nSample Patient is a pleasant man.",
            "Rule out sleep apnea.",
        ),
        ("REASON FOR NEUROLOGICAL CONSULTATION: , Cervical spondylosis.", "Cervical spondylosis."),
        (
            "SUBJECTIVE:\nThe patient is a 33-year-old man who comes in to the office today main "
            "complaint of sexual dysfunction.  He reports...",
            "sexual dysfunction",
        ),
        (
            "S -, An 84-year-old woman.  She presents today with complaint of a very painful left "
            "foot.",
            "a very painful left foot",
        ),
        (
            "HISTORY OF PRESENT ILLNESS: , She presented after intractable nausea and vomiting.",
            "intractable nausea and vomiting",
        ),
    ],
)
def test_the_chief_complaint_under_its_header_or_in_the_opening_history(text, expected):
    assert value(NOTE, "chief_complaint", text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("DATE OF SERVICE: 03/02/2011\nASSESSMENT: Stable.", "03/02/2011"),
        (
            "DISCHARGE SUMMARY: , The patient was seen for evaluation on 12/11/06 followed by "
            "2 treatment sessions.",
            "12/11/06",
        ),
        ("HX: He was evaluated in the NeuroOncology clinic on 10/26/95.", None),
        ("She was last seen on 5/2/95 and was speaking fluently.", None),
    ],
)
def test_the_visit_date(text, expected):
    assert value(NOTE, "visit_date", text) == expected


def test_a_sentence_ending_in_a_colon_is_not_a_header_that_beats_an_exact_one():
    text = (
        "Assessment for peripheral vestibular function follows:\nOTOSCOPY:\nintact.\n"
        "IMPRESSION: , Decompensated vestibular hypofunction.\nPLAN:  ,Electronystagmography."
    )
    assert value(NOTE, "assessment", text) == "Decompensated vestibular hypofunction."


def test_a_discharge_summary_states_the_complaint_in_its_hospital_course():
    text = (
        "DIAGNOSES ON DISCHARGE:\n1.  COPD exacerbation.\nHOSPITAL COURSE:  ,The patient is a "
        "65-year-old man who presented in the emergency room with increasing shortness of "
        "breath.\nFOLLOWUP APPOINTMENTS:\n1.  Cardiology in a week."
    )
    assert value(NOTE, "chief_complaint", text) == "increasing shortness of breath"
    assert value(NOTE, "plan", text) == "Cardiology in a week."


def test_assessment_and_plan_sections():
    text = "ASSESSMENT AND PLAN:\n1.  Ruptured appendicitis.\n2.  We will do an ultrasound."
    assert value(NOTE, "assessment", text).startswith("Ruptured appendicitis. 2.")
    assert "We will do an ultrasound." in value(NOTE, "plan", text)


# -- other documents -------------------------------------------------------------------------------


def test_the_title_skips_the_letterhead_and_the_issuer_is_the_letterhead():
    text = (
        "Kansas Pathology Services, LLC\n2501 E 13th Street, Building 2\nHays, Kansas 67601\n\n"
        "Patient Name: Identification Number:\n\nAdvance Beneficiary Notice of Noncoverage (ABN)"
    )
    assert value(OTHER, "title", text) == "Advance Beneficiary Notice of Noncoverage (ABN)"
    assert value(OTHER, "issuer", text) == "Kansas Pathology Services, LLC"


# -- the loop on a whole report --------------------------------------------------------------------

BREAST = """SURGICAL PATHOLOGY REPORT
Memorial Regional Hospital

DATE OF REPORT: 04/12/2011

FINAL DIAGNOSIS:
A. LEFT BREAST, MODIFIED RADICAL MASTECTOMY:
- INVASIVE DUCTAL CARCINOMA, NOTTINGHAM GRADE 3 OF 3 (TUBULES 3, NUCLEI 3, MITOSES 3).
- MARGINS FREE OF TUMOR; CLOSEST MARGIN (DEEP) 0.4 CM.

IMMUNOHISTOCHEMISTRY:
ESTROGEN RECEPTOR: POSITIVE (90%, STRONG)
PROGESTERONE RECEPTOR: NEGATIVE (<1%)
HER2/NEU (HERCEPTEST): 1+ (NEGATIVE)
KI-67: 35%
"""


def test_the_loop_reads_a_whole_breast_report_and_scores_it_as_complete():
    result = run_loop(
        template=PATHOLOGY,
        pages=[BREAST],
        extractor=offline_extractor(PATHOLOGY, [BREAST]),
        config=LoopConfig(),
    )
    values = {k: f.value for k, f in result.best.fields.items()}
    assert values == {
        "histology": "INVASIVE DUCTAL CARCINOMA, NOTTINGHAM GRADE 3 OF 3 (TUBULES 3, NUCLEI 3, "
        "MITOSES 3).",
        "grade": "NOTTINGHAM GRADE 3 OF 3",
        # status and distance, read as the MARGINS key's row (no separator after the key)
        "margins": "FREE OF TUMOR; CLOSEST MARGIN (DEEP) 0.4 CM.",
        "er_status": "POSITIVE (90%, STRONG)",
        "pr_status": "NEGATIVE (<1%)",
        "her2_status": "1+ (NEGATIVE)",
        "ki67": "35%",
        "report_date": "04/12/2011",
        "institution": "Memorial Regional Hospital",
    }
    # The breast report's structure reader reads the margin sentence in the first pass
    # (before it, the loop had to widen the search for it in a second iteration).
    first = result.iterations[0]
    assert first.fields["margins"].status == "found"
    assert first.fields["margins"].canonical == "not involved (4 mm)"
    assert result.final_score >= 0.95 and len(result.iterations) == 1


def test_outlines_are_parsed_once_per_document():
    assert outline_for([BREAST]) is outline_for([BREAST])
