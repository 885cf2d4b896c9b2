"""Crafted documents through the whole offline chain: paperwork, leaflets, letters, lab panels
and messages that quote a report must never be auto-accepted with a wrong type, and genuine
reports that mention such things must still be accepted.

The fixtures (tests/engine/crafted/) are synthetic, with invented names and numbers. A file's
name starts with its true type: ``other__biopsy_consent.txt`` is "other". The traps of issue 25
are in one folder per class of document that reads like a report without being one:
``education`` (patient information and teaching material about reports), ``consent`` (consents
and procedure information that describe histology or imaging), ``lab_panel`` (routine panels
with targeted single-gene tests) and ``keyword`` (keyword-dense text with no report structure,
alone or written into a real document of another type).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.faults import clean_output
from documents.pages import extract_text_file
from engine import pipeline
from engine.classifiers.offline import OfflineClassifier
from engine.document import DocumentContext, SecondOpinion
from engine.schemas import REPORT_TYPES, ClassificationOutput, Decision, DocType
from engine.verifiers.structure import read_shape

CRAFTED = Path(__file__).resolve().parent / "crafted"
TRAPS = sorted((CRAFTED / "traps").glob("**/*.txt"))
GENUINE = sorted((CRAFTED / "genuine").glob("*.txt"))
CLASSES = ("education", "consent", "lab_panel", "keyword")


def pages_of(path: Path) -> list[str]:
    return [page.text for page in extract_text_file(path.read_text(encoding="utf-8"))]


def true_type(path: Path) -> DocType:
    return DocType(path.name.split("__", 1)[0])


def run_chain(
    pages: list[str],
    preset: pipeline.Preset,
    *,
    output: ClassificationOutput | None = None,
    second: SecondOpinion | None = None,
) -> pipeline.Outcome:
    """The chain with the offline classifier as the primary, or with ``output`` as if a model
    had answered it; ``second`` is the independent gate's opinion (none: no gate)."""
    classifier = OfflineClassifier()
    context = DocumentContext(
        pages=pages, min_dominant_confidence=preset.min_dominant_confidence, second=second
    )
    return pipeline.orchestrate(
        classify=lambda feedback: (
            output if output is not None else classifier.classify(pages, feedback),
            0,
        ),
        context=context,
        preset=preset,
        can_reask=False,
    )


def test_there_are_enough_crafted_documents():
    for name in CLASSES:
        assert len(list((CRAFTED / "traps" / name).glob("*.txt"))) >= 20, name
    assert len(GENUINE) >= 15
    # Keyword stuffing is written into real reports too: their true type is the report's.
    assert {true_type(p) for p in TRAPS} == set(DocType)


@pytest.mark.parametrize("preset", sorted(pipeline.PRESETS))
@pytest.mark.parametrize("path", TRAPS, ids=lambda p: p.stem)
def test_no_crafted_document_is_auto_accepted_with_a_wrong_type(path, preset):
    outcome = run_chain(pages_of(path), pipeline.PRESETS[preset])
    predicted = outcome.best.output.dominant_type_overall
    if outcome.decision == Decision.AUTO_ACCEPT:
        assert predicted == true_type(path), (
            f"{path.name} auto-accepted as {predicted.value}; issues: "
            f"{[i.code for i in outcome.best.verification.issues]}"
        )


@pytest.mark.parametrize("path", TRAPS, ids=lambda p: p.stem)
def test_a_model_that_names_a_report_type_for_a_trap_is_stopped_by_the_rules_alone(path):
    """As if a language model answered each report type a trap is not, confidently and with
    verbatim evidence: the deterministic checks escalate it without the independent gate
    (which a model's mistake does not fool, but keyword stuffing might)."""
    pages = pages_of(path)
    for claimed in sorted(REPORT_TYPES - {true_type(path)}):
        output = clean_output(pages, claimed.value)
        outcome = run_chain(pages, pipeline.PRESETS["real-time"], output=output)
        issues = [i.code for i in outcome.best.verification.issues]
        assert outcome.decision == Decision.ESCALATE_TO_SME, (claimed.value, issues)


@pytest.mark.parametrize("path", GENUINE, ids=lambda p: p.stem)
def test_genuine_documents_that_mention_paperwork_are_still_accepted(path):
    outcome = run_chain(pages_of(path), pipeline.PRESETS["clinical"])
    issues = [f"{i.code}: {i.message}" for i in outcome.best.verification.issues]
    assert outcome.decision == Decision.AUTO_ACCEPT, issues
    assert outcome.best.output.dominant_type_overall == true_type(path)


@pytest.mark.parametrize("path", GENUINE, ids=lambda p: p.stem)
def test_a_correct_answer_for_a_genuine_neighbour_is_accepted_through_the_gate(path):
    """A model's correct answer, checked against the independent classifier in the clinical
    preset (an agreement without confidence must be confirmed by the structure)."""
    pages = pages_of(path)
    output = clean_output(pages, true_type(path).value)
    second = SecondOpinion("offline", OfflineClassifier().classify(pages))
    outcome = run_chain(pages, pipeline.PRESETS["clinical"], output=output, second=second)
    assert outcome.decision == Decision.AUTO_ACCEPT, [
        i.code for i in outcome.best.verification.issues
    ]


# Which trap fires, for the documents the offline classifier gets wrong with confidence ------


@pytest.mark.parametrize(
    "name,code",
    [
        ("clinical_note__telephone_note_pathology.txt", "note_quoting_report"),
        ("clinical_note__nurse_call_pathology_hard.txt", "note_quoting_report"),
        ("other__lab_panel_genomic_vendor.txt", "routine_lab_panel"),
        ("other__lab_panel_molecular_lines.txt", "routine_lab_genomic"),
        ("other__pathology_order_printout.txt", "administrative_with_report"),
        ("other__biopsy_consent_signed_electronically.txt", "administrative_with_report"),
    ],
)
def test_the_trap_that_reads_the_structure_is_the_one_that_escalates(name, code):
    outcome = run_chain(pages_of(CRAFTED / "traps" / name), pipeline.PRESETS["real-time"])
    assert outcome.decision == Decision.ESCALATE_TO_SME
    assert code in {i.code for i in outcome.best.verification.issues}


@pytest.mark.parametrize(
    "name,lure",
    [
        ("other__patient_leaflet_pathology.txt", DocType.PATHOLOGY),
        ("other__patient_leaflet_ct_scan.txt", DocType.RADIOLOGY),
        ("other__patient_leaflet_genetic_testing.txt", DocType.GENOMIC),
        ("other__insurance_letter_genomic_detailed.txt", DocType.GENOMIC),
    ],
)
def test_paperwork_the_offline_classifier_once_took_for_a_report_is_other_with_evidence(name, lure):
    """Issue 32: the learned discriminator reads these as paperwork about reports, so the
    offline classifier answers 'other' and says why; a model that answers the report type
    still escalates, with V3's evidence."""
    pages = pages_of(CRAFTED / "traps" / name)
    offline = OfflineClassifier().classify(pages)
    assert offline.dominant_type_overall == DocType.OTHER
    assert any("paperwork about reports" in c for c in offline.self_evaluation.concerns)
    outcome = run_chain(pages, pipeline.PRESETS["real-time"], output=clean_output(pages, lure))
    assert outcome.decision == Decision.ESCALATE_TO_SME
    assert {"administrative_with_report", "not_a_report"} & {
        i.code for i in outcome.best.verification.issues
    }


# The structure itself ----------------------------------------------------------------------


def test_a_form_is_read_from_its_blanks_boxes_title_and_instructions():
    shape = read_shape(pages_of(CRAFTED / "traps" / "other__pathology_order_form.txt"))
    assert shape.titled == ["Anatomic Pathology Services - Tissue Examination Order"]
    assert {"blank fields", "checkboxes", "completion language", "order language"} <= set(
        shape.paperwork
    )
    assert not shape.has_findings  # "DIAGNOSIS (required)" is followed by blanks only


def test_a_report_is_read_as_having_findings_and_no_paperwork():
    shape = read_shape(pages_of(CRAFTED / "genuine" / "pathology__report_mentions_consent.txt"))
    assert shape.has_findings and not shape.paperwork and not shape.titled
    assert not shape.is_message_note


def test_a_findings_section_that_says_the_result_is_to_come_is_not_findings():
    assert not read_shape(["Result: not yet available. The report will appear here."]).has_findings
    assert not read_shape(["FINAL DIAGNOSIS: pending"]).has_findings
    assert read_shape(["FINAL DIAGNOSIS: Invasive carcinoma; HER2 FISH pending."]).has_findings


def test_blanks_are_underscores_or_dotted_lines_that_wait_for_a_value():
    form = ["Name: ....................\nDate: ........\nAddress: ______________"]
    assert read_shape(form).paperwork == {"blank fields": "3 blanks to fill in"}
    leaders = ["Tumor Mutational Burden ........ 3 Muts/Mb\nMSI ........ stable\nTMB ........ low"]
    assert read_shape(leaders).paperwork == {}


def test_a_label_line_at_the_head_of_a_page_is_not_a_title():
    assert read_shape(["Clinical history per requisition: colon mass.\nFINDINGS: x"]).titled == []
    assert read_shape(["RE: Letter of medical necessity\nDear Dr. Example"]).titled


def test_a_message_note_needs_its_title_or_several_of_its_marks():
    assert read_shape(["TELEPHONE ENCOUNTER\nCalled patient with results."]).is_message_note
    assert not read_shape(
        ["IMPRESSION: mass.\nThe findings were discussed by telephone with Dr. Example."]
    ).is_message_note


def test_a_lab_panel_is_counted_in_rows_with_units_and_ranges():
    rows = "\n".join(
        f"{name}  {value}  {unit}  {low}-{high}"
        for name, value, unit, low, high in [
            ("Sodium", 139, "mmol/L", 134, 144),
            ("Glucose", 102, "mg/dL", 65, 99),
            ("Hemoglobin", 10.9, "g/dL", 11.1, 15.9),
            ("WBC", 3.2, "x10E3/uL", 4, 10.5),
            ("AST", 41, "IU/L", 0, 40),
        ]
    )
    assert read_shape([rows]).lab_rows == 5
    assert read_shape(["Tumor size 1.2-1.8 cm; 2/32 lymph nodes"]).lab_rows == 0


def test_a_sequencing_report_is_read_from_its_variants_with_an_assay_or_sections_not_its_vendor():
    assert not read_shape(["Foundation Medicine, Tempus, Guardant360"]).genomic_findings
    variants = "KRAS c.35G>A p.Gly12Asp; TP53 c.818G>A"
    assert read_shape([f"{variants}\nMethod: next-generation sequencing"]).genomic_findings
    assert read_shape([f"GENOMIC FINDINGS\n{variants}"]).genomic_findings
    # Variants alone are a genotype (a routine panel's targeted tests), not a sequencing report.
    assert not read_shape([variants]).genomic_findings
    assert not read_shape(["GENOMIC FINDINGS\nEGFR L858R"]).genomic_findings


# A report's structure, not its vocabulary (issue 25) ----------------------------------------


def test_each_type_is_read_from_its_own_structure():
    pathology = read_shape(
        ["SPECIMEN: Colon, sigmoid, resection.\nFINAL DIAGNOSIS: Adenocarcinoma, pT3 pN1b."]
    )
    assert pathology.reads_as == {DocType.PATHOLOGY}
    radiology = read_shape(
        ["FINDINGS: The lungs are clear bilaterally.\nIMPRESSION: No acute process seen."]
    )
    assert radiology.reads_as == {DocType.RADIOLOGY}
    genomic = read_shape(
        ["KRAS c.35G>A p.Gly12Asp\nEGFR L858R\nMethod: hybrid capture next-generation sequencing"]
    )
    assert genomic.reads_as == {DocType.GENOMIC}
    note = read_shape(
        ["CHIEF COMPLAINT: cough for two weeks.\nASSESSMENT AND PLAN: bronchitis; fluids."]
    )
    assert note.reads_as == {DocType.CLINICAL_NOTE}


def test_keyword_lines_make_no_structure_and_no_paperwork():
    stuffing = (
        "Coding note: document type = surgical pathology report\n"
        "Index terms: requisition, consent, authorization, signature, insurance\n"
        "Keywords: next-generation sequencing; tumor mutational burden; MSI-high; VAF; fusion\n"
    )
    shape = read_shape(
        ["FINDINGS: The lungs are clear.\nIMPRESSION: Normal chest radiograph.\n" + stuffing]
    )
    assert shape.reads_as == {DocType.RADIOLOGY}
    assert not shape.shows_structure_of(DocType.PATHOLOGY)
    assert not shape.shows_structure_of(DocType.GENOMIC)
    assert shape.paperwork == {}


def test_a_sequencing_assay_named_anywhere_completes_a_structure_but_shows_none_alone():
    shape = read_shape(["We offer next-generation sequencing of 500 genes to our patients."])
    assert not shape.shows_structure_of(DocType.GENOMIC)


def test_text_addressed_to_the_patient_and_options_to_pick_are_paperwork():
    leaflet = ["Your results will be sent to you. Ask your doctor what your report means to you."]
    assert "addressed to the patient" in read_shape(leaflet).paperwork
    template = ["Laterality: right / left\nMargins: involved / free\nInvasion: present / absent"]
    assert "options to pick" in read_shape(template).paperwork


def test_a_lab_panel_with_an_interpretation_line_is_still_a_lab_panel():
    rows = "\n".join(
        f"{name}  {value}  {unit}  {ref}"
        for name, value, unit, ref in [
            ("Cholesterol", 262, "mg/dL", "<200"),
            ("Triglycerides", 410, "mg/dL", "<150"),
            ("Prothrombin time", 12.1, "sec", "11.0-13.5"),
            ("Protein C activity", 105, "%", "70-140"),
            ("Glucose", 92, "mg/dL", "65-99"),
        ]
    )
    shape = read_shape([rows + "\nInterpretation: E2/E2 genotype (APOE c.526C>T homozygous)."])
    assert shape.lab_rows == 5 and shape.lab_panel
    assert DocType.RADIOLOGY not in shape.reads_as
