"""The discriminator's model (engine.discriminator): the shipped coefficients are used only while
they mean what the code's signals mean; general health information is told from a note; and a
reading sure enough to veto a report type but not to give 'other' leaves the offline answer
below every preset's threshold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.report_bench import fooled_output, run
from documents.pages import extract_text_file
from engine import discriminator, pipeline
from engine.classifiers import offline
from engine.classifiers.offline import OfflineClassifier
from engine.lookalikes import CONDITIONS, TEMPLATES, generate
from engine.schemas import Decision, DocType


def test_the_shipped_model_matches_the_code_and_a_stale_one_is_never_used(tmp_path: Path):
    data = json.loads(discriminator.MODEL_FILE.read_text())
    assert data["fingerprint"] == discriminator.fingerprint(), (
        "the signals changed: train the model again (docs/security.md)"
    )
    assert "medquad (dev split)" in data["trained_on"]
    assert discriminator.load() is not None

    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({**data, "fingerprint": "0" * 64}))
    assert discriminator.load(stale) is None
    assert discriminator.load(tmp_path / "missing.json") is None


def test_a_saved_model_reads_exactly_as_the_model_it_was_saved_from():
    texts, labels = discriminator.generated_training()
    model = discriminator.Discriminator(texts[::5], labels[::5])
    again = discriminator.Discriminator.of(json.loads(json.dumps(model.as_dict())))
    for text in texts[1::40]:
        assert again.read(text).paperwork == pytest.approx(model.read(text).paperwork, abs=1e-6)
        assert again.read(text).note == pytest.approx(model.read(text).note, abs=1e-6)


INFORMATION = [
    t
    for t in TEMPLATES
    if t.name
    in {
        "condition_overview",
        "condition_faq",
        "disease_fact_sheet",
        "living_with_condition",
        "treatment_summary",
        "aftercare_instructions",
        "test_explainer",
        "gene_condition_summary",
        "medication_guide",
    }
]


@given(
    template=st.sampled_from(INFORMATION),
    seed=st.integers(0, 10_000),
    preset=st.sampled_from(sorted(pipeline.PRESETS)),
)
def test_general_health_information_is_never_accepted_as_a_note_or_a_report(template, seed, preset):
    """A page about a condition, a test, a gene or a medicine, in any of the generator's
    wordings and fills, through the offline chain and through a model fooled into a note or
    into the template's lure (the offline classifier as the gate): never accepted as one."""
    (page,) = generate(1, seed=seed, templates=(template,))
    pages = [p.text for p in extract_text_file(page.text)]
    chosen = pipeline.PRESETS[preset]
    outcome = run(pages, chosen)
    if outcome.decision == Decision.AUTO_ACCEPT:
        assert outcome.best.output.dominant_type_overall == DocType.OTHER
    for claimed in {DocType.CLINICAL_NOTE, template.lure}:
        fooled = run(pages, chosen, output=fooled_output(pages, claimed))
        assert fooled.decision != Decision.AUTO_ACCEPT, (template.name, claimed)


@pytest.mark.parametrize("paperwork,accepted", [(0.93, False), (0.99, True)])
def test_a_veto_without_the_surety_to_label_leaves_the_answer_under_every_threshold(
    monkeypatch: pytest.MonkeyPatch, paperwork: float, accepted: bool
):
    name, what, *_ = CONDITIONS[0]
    text = f"PROGRESS NOTE\nPatient seen today for {name.lower()}, {what}.\nPlan: review."
    reading = discriminator.Reading(
        paperwork=paperwork,
        note=0.5,
        signals={"questions it answers": 3, "people in general": 5},
        evidence=("people in general (5)", "questions it answers (3)"),
    )
    monkeypatch.setattr(offline.discriminator, "read", lambda _text: reading)
    output = OfflineClassifier().classify([text])
    assert output.dominant_type_overall == DocType.OTHER
    assessment = output.segments[0].assessment(DocType.OTHER)
    assert assessment is not None
    confidence = assessment.confidence
    thresholds = [p.min_dominant_confidence for p in pipeline.PRESETS.values()]
    assert (confidence >= max(thresholds)) is accepted
    assert (confidence < min(thresholds)) is not accepted


def test_a_story_pasted_again_and_again_counts_as_often_as_once():
    """The writer's voice about one patient counts its different wordings: the same sentences
    pasted into a leaflet weigh no more the tenth time than the first."""
    story = "The patient was seen. He was well. I examined the patient.\n"
    once = discriminator.signals_of(story)["one patient's story"]
    assert once == 3
    assert discriminator.signals_of(story * 10)["one patient's story"] == once
    # A disease's abbreviation is no title: "MS symptoms", "MR angiography".
    assert (
        discriminator.signals_of("MS symptoms vary. MR angiography helps.")["one patient's story"]
        == 0
    )
    assert discriminator.signals_of("Mr. Smith was seen.")["one patient's story"] == 1


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        json.dumps({"fingerprint": "stale"}),
        json.dumps({"model": {}}),  # the fingerprint of no version
    ],
)
def test_a_model_file_that_is_unreadable_stale_or_malformed_is_never_used(
    tmp_path: Path, content: str
):
    path = tmp_path / "model.json"
    path.write_text(content)
    assert discriminator.load(path) is None


def test_a_model_file_of_the_right_fingerprint_but_the_wrong_width_is_never_used(tmp_path: Path):
    data = json.loads(discriminator.MODEL_FILE.read_text())
    data["model"]["paperwork"]["coef"] = data["model"]["paperwork"]["coef"][:-3]
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data))
    assert discriminator.load(path) is None
    data = json.loads(discriminator.MODEL_FILE.read_text())
    del data["model"]["note"]
    path.write_text(json.dumps(data))
    assert discriminator.load(path) is None


def test_a_table_of_results_claimed_as_a_report_is_vetoed_at_its_own_level_and_a_note_is_not():
    signals = {"reference ranges": 4, "a date of service": 1, "a patient named or numbered": 1}
    reading = discriminator.Reading(
        paperwork=0.85, note=0.1, signals=signals, evidence=("reference ranges (4)",)
    )
    assert reading.not_a_report(DocType.PATHOLOGY) is not None
    assert not reading.agrees(DocType.PATHOLOGY)
    assert reading.not_a_report(DocType.CLINICAL_NOTE) is None  # an EHR summary holds results
    assert reading.agrees(DocType.CLINICAL_NOTE)


@pytest.mark.parametrize("anchor", [None, *discriminator.ANCHORS])
def test_a_note_about_no_one_is_vetoed_from_an_even_chance_of_paperwork(anchor):
    """A clinical note names a patient, a date of service or an author; one with none of
    them that reads as paperwork at even odds is not a note (its story can be pasted in)."""
    signals = {"people in general": 9, "questions it answers": 4, "one patient's story": 5}
    if anchor:
        signals[anchor] = 1
    evidence = ("people in general (9)", "questions it answers (4)")
    for paperwork, vetoed in ((0.55, anchor is None), (0.45, False), (0.92, True)):
        reading = discriminator.Reading(paperwork, 0.1, signals, evidence)
        assert (reading.not_a_report(DocType.CLINICAL_NOTE) is not None) is vetoed
        # A report type keeps its own level.
        assert (reading.not_a_report(DocType.RADIOLOGY) is not None) is (paperwork >= 0.9)


# Pages that speak to their reader in two kinds of wording (questions and general statements).
# A fact sheet or an aftercare sheet has one kind only: a pasted story still passes there (6 and
# 3 of 24 tries; docs/security.md).
TWO_KINDS = [
    t for t in INFORMATION if t.name not in {"disease_fact_sheet", "aftercare_instructions"}
]


@given(
    template=st.sampled_from(TWO_KINDS),
    seed=st.integers(0, 10_000),
    pasted=st.integers(1, 6),
)
@settings(max_examples=60)
def test_a_story_pasted_into_general_health_information_does_not_make_it_a_note(
    template, seed, pasted
):
    """The stuffing a review found: sentences of one patient's story pasted into a page about
    a condition. Through a model fooled into a note, it is never accepted."""
    story = "The patient was seen. He was well. She had no pain. I examined the patient.\n"
    (page,) = generate(1, seed=seed, templates=(template,))
    pages = [p.text for p in extract_text_file(page.text + "\n" + story * pasted)]
    fooled = run(
        pages, pipeline.PRESETS["clinical"], output=fooled_output(pages, DocType.CLINICAL_NOTE)
    )
    assert fooled.decision != Decision.AUTO_ACCEPT
