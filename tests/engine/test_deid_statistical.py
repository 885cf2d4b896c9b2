# ruff: noqa: RUF001 (names in other scripts are the point)
"""The statistical recogniser (engine.deid.statistical), the generated notes it learns from
(engine.deid.synthetic) and the rules added beside it for issue 36's leaks."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from engine.deid import DocumentScrub, Pseudonyms, Surrogates, detect, statistical, synthetic
from engine.deid.detect import widen
from engine.deid.spans import ADDRESS, ID, NAME, PHONE, resolve

KEY = b"test-key"


def found(text: str) -> dict[str, str]:
    return {s.text(text): s.type for s in detect([text])[0]}


def test_the_shipped_model_is_the_one_the_code_would_train():
    # A change to the rules, the features or the generated notes needs
    # `manage.py bench_deid --train-default`: otherwise every process trains it again.
    assert statistical.shipped_is_current(), "run manage.py bench_deid --train-default"
    assert statistical.SHIPPED.stat().st_size < 1_000_000


def test_training_is_deterministic(tmp_path: Path):
    notes = list(synthetic.corpus(count=12, seed=1))
    first, second = tmp_path / "a.crfsuite", tmp_path / "b.crfsuite"
    statistical.train(notes, first)
    statistical.train(notes, second)
    assert first.read_bytes() == second.read_bytes()
    model = statistical.Model(first)
    text, gold = notes[0]
    assert all(0 <= s.start < s.end <= len(text) for s in model.find(text))
    assert gold  # the generated notes carry their annotations


def test_generated_notes_are_the_same_for_the_same_seed_and_annotate_what_they_insert():
    a = list(synthetic.corpus(family="held", count=5, seed=3))
    b = list(synthetic.corpus(family="held", count=5, seed=3))
    assert a == b
    for text, gold in a:
        for span in gold:
            assert text[span.start : span.end].strip() == text[span.start : span.end]


def test_a_name_before_a_second_header_field_is_found():
    text = "Pt: Marisol Quillen   Hospital number: 123 456 789"
    spans = found(text)
    assert spans["Marisol"] == NAME and spans["Quillen"] == NAME
    assert spans["123 456 789"] == ID


def test_names_in_other_scripts_are_names():
    text = "患者：王伟 seen with Иван Петров today"
    spans = found(text)
    for name in ("王伟", "Иван", "Петров"):
        assert spans[name] == NAME


def test_addresses_and_identifiers_by_shape_and_context_whatever_the_country():
    text = (
        "Address: 12 rue des Lilas, 75011 Paris\nFlat 3, 22 Mill Lane, Leeds LS6 2AB\n"
        "Seen in Springfield IL. Specimen SP:21:004471, NHI ZAC4471, Ref 2021/00457, "
        "collected 20210314. Call 0161 496 0958."
    )
    spans = detect([text])[0]
    covered = "".join(text[s.start : s.end] + "|" for s in spans)
    expected = (
        *("rue des Lilas", "75011 Paris", "Mill Lane", "Leeds LS6 2AB", "Springfield"),
        *("SP:21:004471", "ZAC4471", "2021/00457", "20210314", "0161 496 0958"),
    )
    for value in expected:
        assert value in covered, value
    types = {s.text(text): s.type for s in spans}
    # A number's type may come from the CRF's guess (ID) or the rule's (PHONE): either way
    # every digit is drawn again.
    assert types["0161 496 0958"] in (PHONE, ID) and types["Springfield"] == ADDRESS


def test_a_fraction_a_pressure_and_a_date_keep_their_kinds():
    text = "BP 120/80, pain 4/10, Gleason 3+4=7, seen 03/14/2025."
    spans = found(text)
    assert "120/80" not in spans and "4/10" not in spans
    assert spans["03/14/2025"] == "DATE"


def test_a_first_name_beside_a_found_surname_goes_with_it():
    text = "Seen with Dr. Fitzgibbon; later Hannelore Fitzgibbon agreed."
    spans = detect([text])[0]
    names = {s.text(text) for s in spans if s.type == NAME}
    assert {"Fitzgibbon", "Hannelore"} <= names
    assert widen(text, []) == []


def test_a_file_name_loses_its_names_and_dates_and_keeps_its_extension():
    scrub = DocumentScrub.of(["Patient: QUILLEN, Marisol"], Pseudonyms(Surrogates(KEY)))
    out = scrub.filename("quillen_marisol_20210314.pdf")
    assert out.endswith(".pdf")
    for value in ("quillen", "marisol", "20210314"):
        assert value not in out.lower()
    assert "lindqvist" not in DocumentScrub(Pseudonyms(Surrogates(KEY))).filename(
        "lindqvist_path.pdf"
    )


@given(st.text(max_size=120))
def test_spans_are_inside_the_text_and_never_overlap(text: str):
    spans = detect([text])[0]
    assert spans == resolve(spans)
    for span in spans:
        assert 0 <= span.start < span.end <= len(text)
