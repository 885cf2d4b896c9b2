"""The offline classifier: deterministic, evidence copied verbatim, segments by page."""

from __future__ import annotations

from pathlib import Path

import pytest

from documents.pages import extract_pdf, extract_text_file
from engine.classifiers.offline import OfflineClassifier, load_vocabulary, score_page
from engine.classifiers.vocabulary import keyword_line
from engine.grounding import find_snippet
from engine.schemas import DocType, Presence

DEMO = Path(__file__).resolve().parents[2] / "demo" / "documents"


def pages_of(name: str) -> list[str]:
    data = (DEMO / name).read_bytes()
    if name.endswith(".txt"):
        return [p.text for p in extract_text_file(data.decode())]
    return [p.text for p in extract_pdf(data, ocr=None)]


@pytest.mark.parametrize(
    "name,expected",
    [
        ("pathology_core_biopsy_demo.pdf", DocType.PATHOLOGY),
        ("ct_chest_demo.pdf", DocType.RADIOLOGY),
        ("genomic_profile_demo.pdf", DocType.GENOMIC),
        ("oncology_clinic_note_demo.txt", DocType.CLINICAL_NOTE),
        ("fax_cover_demo.pdf", DocType.OTHER),
    ],
)
def test_the_demo_documents_get_their_type(name, expected):
    output = OfflineClassifier().classify(pages_of(name))
    assert output.dominant_type_overall == expected


def test_every_evidence_snippet_is_verbatim_from_its_page():
    pages = pages_of("pathology_core_biopsy_demo.pdf")
    output = OfflineClassifier().classify(pages)
    snippets = [(e, t.type) for s in output.segments for t in s.types for e in t.top_evidence]
    assert snippets
    for evidence, _type in snippets:
        assert evidence.snippet in pages[evidence.page - 1]
        for anchor in evidence.anchors_found:
            assert find_snippet(anchor, pages[evidence.page - 1]) is not None


def test_the_output_is_complete_and_consistent():
    output = OfflineClassifier().classify(pages_of("genomic_profile_demo.pdf"))
    assert output.number_of_segments == len(output.segments)
    for segment in output.segments:
        assert {t.type for t in segment.types} == set(DocType)
        assert abs(sum(t.segment_share for t in segment.types) - 1) < 1e-6
        assert segment.assessment(segment.dominant_type).presence_level == Presence.PRIMARY
    assert abs(sum(m.overall_share for m in output.document_mixture) - 1) < 1e-6


def test_a_strong_page_of_another_type_starts_a_new_segment():
    pages = pages_of("fax_cover_demo.pdf") + pages_of("pathology_core_biopsy_demo.pdf")
    output = OfflineClassifier().classify(pages)
    assert [(s.start_page, s.end_page, s.dominant_type) for s in output.segments] == [
        (1, 1, DocType.OTHER),
        (2, 3, DocType.PATHOLOGY),
    ]


def test_a_mixture_of_types_lowers_confidence():
    note = "HISTORY OF PRESENT ILLNESS\nShe presents with cough for two weeks. Denies fever."
    mixed = note + "\nCT chest showed a 2 cm nodule. MRI brain revealed no enhancing lesion."
    clean = OfflineClassifier().classify([note]).segments[0]
    blended = OfflineClassifier().classify([mixed]).segments[0]
    assert (
        blended.assessment(blended.dominant_type).confidence
        < clean.assessment(clean.dominant_type).confidence
    )


def test_the_same_input_gives_the_same_output():
    pages = pages_of("ct_chest_demo.pdf")
    assert OfflineClassifier().classify(pages) == OfflineClassifier().classify(pages)


def test_the_vocabulary_is_versioned_data():
    vocabulary = load_vocabulary()
    assert vocabulary.version.startswith("offline-vocab-")
    assert set(vocabulary.types) == set(DocType)


def test_page_numbering_that_restarts_starts_a_new_document_of_the_same_type():
    report = pages_of("ct_chest_demo.pdf")[0]
    first = report.replace("Page 1 of 1", "") + "\nPage 1 of 2"
    second = "FINDINGS\nNo change in the nodule.\nIMPRESSION\nStable.\nPage 2 of 2"
    third = report.replace("Page 1 of 1", "") + "\nPage 1 of 1"
    output = OfflineClassifier().classify([first, second, third])
    assert [(s.start_page, s.end_page, s.dominant_type) for s in output.segments] == [
        (1, 2, DocType.RADIOLOGY),
        (3, 3, DocType.RADIOLOGY),
    ]


# Keyword lines (issue 25): a list of a type's words is not evidence of it -------------------


@pytest.mark.parametrize(
    "line",
    [
        "Coding note: document type = surgical pathology report",
        "Index terms: adenocarcinoma, margins, lymphovascular invasion, perineural invasion",
        "Keywords: carcinoma; excision; resection; histologic grade; immunohistochemistry",
        "Tags: nausea; vomiting; fever; twice daily; prn; regular rate",
        "carcinoma, malignant, neoplasm, atypia, histologic, cytology, margins, invasion, excision",
    ],
)
def test_a_list_of_a_types_words_or_a_claim_of_the_documents_type_is_a_keyword_line(line):
    assert keyword_line(line, load_vocabulary())


@pytest.mark.parametrize(
    "line",
    [
        "FINAL DIAGNOSIS: Invasive carcinoma; HER2 FISH pending.",
        "No consolidation, effusion or pneumothorax on axial images.",
        "Invasive ductal carcinoma, Nottingham grade 2, margins negative, 1.6 cm.",
        "CT ANGIOGRAPHY CHEST WITH CONTRAST",
        "VITAL SIGNS: Blood pressure 120/80, pulse 82, respirations 20, temperature 36.8.",
    ],
)
def test_findings_titles_and_values_are_not_keyword_lines(line):
    assert not keyword_line(line, load_vocabulary())


def test_keyword_lines_and_repeated_lines_are_not_counted():
    report = (
        "CHEST, PA AND LATERAL\nFindings: The lungs are clear without consolidation or effusion."
        "\nImpression: No acute cardiopulmonary process."
    )
    stuffing = (
        "Index terms: adenocarcinoma, margins, lymphovascular invasion, perineural invasion\n"
        "Keywords: carcinoma; excision; resection; histologic grade; immunohistochemistry\n"
    )
    stuffed = f"{report}\n{stuffing}{stuffing}"
    output = OfflineClassifier().classify([stuffed])
    assert output.dominant_type_overall == DocType.RADIOLOGY
    pathology = output.segments[0].assessment(DocType.PATHOLOGY)
    assert pathology is not None and pathology.presence_level == Presence.NO_EVIDENCE
    # The same words in a sentence count; a repeated line counts once.
    sentence = "The adenocarcinoma invades through the wall, with lymphovascular invasion."
    vocabulary = load_vocabulary()
    once = score_page(f"{report}\n{sentence}", vocabulary)[DocType.PATHOLOGY].score
    twice = score_page(f"{report}\n{sentence}\n{sentence}", vocabulary)[DocType.PATHOLOGY].score
    assert once > 0 and twice == once
