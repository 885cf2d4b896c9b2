"""Bundles are cut where documents change: counters, identifiers, letterheads, dates, openings.
Every document here is fictional."""

from __future__ import annotations

import json

from engine.boundaries import detect, starts
from engine.classifiers.offline import OfflineClassifier
from engine.schemas import ClassificationOutput


def pathology_page(
    *, lab: str, accession: str, patient: str, page: int, of: int, body: str, date: str
) -> str:
    return (
        f"{lab}\n"
        "SURGICAL PATHOLOGY REPORT\n"
        f"Patient: {patient}    MRN: 448{accession[-4:]}\n"
        f"Accession #: {accession}    Date of report: {date}\n\n"
        f"{body}\n\n"
        f"Page {page} of {of}\n"
    )


DIAGNOSIS = (
    "FINAL DIAGNOSIS:\nLeft breast, core biopsy: invasive ductal carcinoma, Nottingham grade 2.\n"
    "MICROSCOPIC DESCRIPTION:\nNests of malignant epithelial cells infiltrate the stroma."
)
MORE = (
    "GROSS DESCRIPTION:\nReceived in formalin are three cores of tan tissue, 1.2 cm in aggregate.\n"
    "Electronically signed by Ann Example, MD"
)


def two_reports_same_lab() -> list[str]:
    """Two pathology reports of one laboratory, each of two pages: only the counter, the
    patient and the accession number show where the second starts."""
    lab = "Northwind Regional Hospital Laboratory"
    first = dict(lab=lab, accession="S24-10231", patient="Quill, Avery", date="03/04/2024")
    second = dict(lab=lab, accession="S24-11872", patient="Marsh, Robin", date="03/09/2024")
    return [
        pathology_page(**first, page=1, of=2, body=DIAGNOSIS),
        pathology_page(**first, page=2, of=2, body=MORE),
        pathology_page(**second, page=1, of=2, body=DIAGNOSIS),
        pathology_page(**second, page=2, of=2, body=MORE),
    ]


def test_a_restarting_counter_and_a_new_accession_cut_reports_of_one_type():
    pages = two_reports_same_lab()
    output = OfflineClassifier().classify(pages)
    assert [(s.start_page, s.end_page) for s in output.segments] == [(1, 2), (3, 4)]
    assert {s.dominant_type.value for s in output.segments} == {"pathology"}
    cut = next(b for b in output.boundaries if b.page == 3)
    codes = {c.code for c in cut.cues}
    assert {"counter_restart", "identifier_change"} <= codes
    change = next(c for c in cut.cues if c.code == "identifier_change")
    assert "S24-10231" in change.text and "S24-11872" in change.text  # the evidence, verbatim


def test_pages_of_one_report_are_not_cut_and_say_why():
    pages = two_reports_same_lab()[:2]
    boundaries = detect(pages)
    assert starts(boundaries) == set()
    codes = {c.code for c in boundaries[0].cues}
    assert {"counter_continues", "identifier_same", "running_lines"} <= codes
    assert boundaries[0].score < 0


def test_a_new_identifier_alone_cuts_when_nothing_else_changes():
    """No counters, the same letterhead: a different accession number is enough."""
    pages = [
        p.replace("Page 1 of 2\n", "").replace("Page 2 of 2\n", "") for p in two_reports_same_lab()
    ]
    assert starts(detect(pages)) == {3}


def test_a_counter_that_ran_out_starts_the_next_page_as_a_new_document():
    pages = [
        "Lakeside Imaging Associates\nCT CHEST WITH CONTRAST\nFINDINGS:\nNo nodule.\nPage 1 of 1",
        "Consent for telehealth visits\nI agree to be seen by video.\nSignature ________",
    ]
    boundary = detect(pages)[0]
    assert boundary.cut and "counter_end" in {c.code for c in boundary.cues}


def test_a_new_letterhead_after_a_forms_footer_is_a_new_document():
    pages = [
        "Harbour Pathology Services, LLC\nADVANCE NOTICE OF NONCOVERAGE\nPatient Name:\n"
        "Reason Medicare may not pay:\nForm CMS-R-131 (03/11)",
        "PINE STREET FAMILY PRACTICE\nPatient history form\nPrevious physician: ______\n"
        "Allergies: ______",
    ]
    boundary = detect(pages)[0]
    codes = {c.code for c in boundary.cues}
    assert boundary.cut and {"form_end", "letterhead_change"} <= codes


def test_a_report_that_opens_after_one_that_closed_is_a_new_document():
    pages = [
        "EXAM: Chest two views.\nFINDINGS: The lungs are clear.\nIMPRESSION: No acute disease.",
        "EXAM: Left knee three views.\nFINDINGS: No fracture.\nIMPRESSION: Normal knee.",
    ]
    boundary = detect(pages)[0]
    assert boundary.cut and {"opening", "closing"} <= {c.code for c in boundary.cues}


def test_a_sentence_running_on_keeps_pages_together():
    pages = [
        "HISTORY OF PRESENT ILLNESS: The patient reports three days of cough and\n",
        "fever, without chest pain.\nPLAN: Fluids and rest.",
    ]
    boundaries = detect(pages)
    assert starts(boundaries) == set()
    assert "runs_on" in {c.code for c in boundaries[0].cues}


def test_a_different_report_date_weighs_for_a_cut_and_the_same_against():
    base = "Riverbend Clinic\nProgress note\nDate of service: {d}\nPatient seen for follow-up."
    same = detect([base.format(d="02/01/2024"), base.format(d="02/01/2024")])
    changed = detect([base.format(d="02/01/2024"), base.format(d="05/17/2024")])
    assert "date_same" in {c.code for c in same[0].cues}
    assert "date_change" in {c.code for c in changed[0].cues}


def test_a_blank_forms_labels_are_not_identifiers():
    pages = [
        "LIMITED PATIENT WAIVER\nPatient's Name: Provider Name:\nIdentification Number:",
        "LIMITED PATIENT WAIVER\nPatient's Name: Provider Name:\nIdentification Number:",
    ]
    assert all(c.code != "identifier_change" for b in detect(pages) for c in b.cues)


def test_generated_bundles_of_shuffled_reports_are_cut_where_documents_start():
    """Reports of one lab shuffled into bundles of 2 to 4, each report 1 to 3 pages."""
    import random

    rng = random.Random(5)
    names = ["Quill, Avery", "Marsh, Robin", "Stone, Kai", "Vale, Jordan", "Reed, Sasha"]
    found = expected = correct = 0
    for bundle in range(8):
        pages: list[str] = []
        truth: set[int] = set()
        for index in range(rng.randint(2, 4)):
            length = rng.randint(1, 3)
            if index:
                truth.add(len(pages) + 1)
            report = dict(
                lab="Northwind Regional Hospital Laboratory",
                accession=f"S24-{rng.randint(10000, 99999)}",
                patient=rng.choice(names),
                date=f"0{rng.randint(1, 9)}/1{rng.randint(0, 9)}/2024",
            )
            for page in range(1, length + 1):
                pages.append(
                    pathology_page(
                        **report, page=page, of=length, body=DIAGNOSIS if page == 1 else MORE
                    )
                )
        cut = starts(OfflineClassifier().classify(pages).boundaries)
        found += len(cut)
        expected += len(truth)
        correct += len(cut & truth)
        assert cut == truth, f"bundle {bundle}"
    assert found == expected == correct


def test_boundaries_are_kept_in_the_output_but_not_asked_of_a_model():
    output = OfflineClassifier().classify(two_reports_same_lab())
    stored = output.model_dump(mode="json")
    assert stored["boundaries"] and stored["boundaries"][0]["cues"]
    assert ClassificationOutput.model_validate(stored).boundaries == output.boundaries
    assert "boundaries" not in json.dumps(ClassificationOutput.model_json_schema())


def test_a_model_that_misses_a_cut_the_pages_show_gets_an_issue_with_the_evidence():
    from engine.document import DocumentContext
    from engine.verifiers.v2_consistency import verify_rules

    pages = two_reports_same_lab()
    output = OfflineClassifier().classify(pages)
    context = DocumentContext(pages=pages)
    assert not [i for i in verify_rules(output, context) if i.code == "missed_boundary"]
    # One segment over the four pages, as a model might answer.
    merged = output.model_copy(deep=True)
    merged.segments = [merged.segments[0].model_copy(update={"end_page": 4})]
    merged.segments[0].segment_page_count = 4
    merged.number_of_segments = 1
    [issue] = [i for i in verify_rules(merged, context) if i.code == "missed_boundary"]
    assert issue.severity.value == "MAJOR" and issue.llm_fixable
    assert "Page 3" in issue.message and "S24-11872" in issue.message
