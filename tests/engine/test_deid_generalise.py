"""De-identification that holds for other patients' notes (issue 36): the CRF learns where a
name stands, not which names a corpus held; a word of the language guessed as a name is
dropped; and the rules for the classes of names and dates nursing notes write."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.deid import detect, lexicon, recognisers, statistical, synthetic
from engine.deid.detect import _possible
from engine.deid.spans import DATE, NAME, Phi

# First names that are no word of the language ("Marisol", not "Pearl" or "Will").
FIRST = sorted(n for n in lexicon.first_names() if not lexicon.is_dictionary_word(n))
# Dictionary words that no list gives as a first name ("large", "clear", "walker").
WORDS = sorted(
    w
    for w in lexicon.dictionary_words()
    if len(w) > 3 and not lexicon.is_first_name(w) and not lexicon.is_not_a_name(w)
)[::50]
CASES = ("lower", "upper", "title")


def invented(seed: int) -> str:
    """A surname no list holds, from the generator's syllables."""
    rng = random.Random(seed)
    return "".join(rng.choice(synthetic._SYLLABLES) for _ in range(3))


def cased(word: str, case: str) -> str:
    return {"lower": word.lower(), "upper": word.upper(), "title": word.title()}[case]


def removed_words(text: str) -> set[str]:
    return {s.text(text) for s in detect([text])[0]}


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_two_unlisted_names_give_the_model_the_same_word_feature(a: int, b: int):
    # A site model trained on a corpus learnt its surrogate names one by one; their identity
    # is withheld, so what it learns is where a name stands.
    first, second = invented(a), invented(b)
    if lexicon.is_dictionary_word(first) or lexicon.is_dictionary_word(second):
        return
    assert statistical._word_features(first)["w"] == statistical._word_features(second)["w"]
    assert statistical._word_features(first.upper())["w"] == "<cand>"


@given(st.sampled_from(WORDS))
def test_a_word_of_the_language_keeps_its_identity_and_is_no_name_for_the_crf(word: str):
    assert statistical._word_features(word)["w"] == word
    assert not _possible(Phi(0, len(word), NAME, "crf"), word)
    assert not _possible(Phi(0, len(word), NAME, "crf"), word.upper())


@given(st.sampled_from(FIRST), st.integers(0, 10_000))
def test_a_name_not_in_the_dictionary_can_be_a_crf_name(first: str, seed: int):
    assert _possible(Phi(0, len(first), NAME, "crf"), first.title())
    surname = invented(seed)
    if not lexicon.is_dictionary_word(surname):
        assert _possible(Phi(0, len(surname), NAME, "crf"), surname)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(FIRST), st.integers(0, 10_000), st.sampled_from(CASES))
def test_a_first_name_beside_an_unlisted_word_is_a_name_in_any_case(
    first: str, seed: int, case: str
):
    surname = invented(seed)
    if lexicon.is_dictionary_word(surname) or lexicon.is_not_a_name(surname):
        return
    sentence = "psych nurse {} aware of plan. lungs clear.\n"
    if case == "upper":
        sentence = sentence.upper()
    text = sentence.format(f"{cased(first, case)} {cased(surname, case)}")
    left = removed_words(text)
    assert cased(first, case) in left and cased(surname, case) in left, text
    # The rules find it alone (so it teaches the document's vocabulary), not the CRF only.
    ruled = {s.text(text) for s in recognisers.find(text) if s.source == "first-pair"}
    assert {cased(first, case), cased(surname, case)} <= ruled, text


@given(st.sampled_from(FIRST), st.sampled_from(WORDS))
def test_a_first_name_before_a_word_of_the_language_is_no_pair(first: str, word: str):
    text = f"{first.lower()} {word} noted\n"
    assert not [s for s in recognisers.find(text) if s.source == "first-pair"]


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(sorted(lexicon.surnames())[::40]),
    st.sampled_from(("RRT", "rrt", "RN", "np")),
    st.sampled_from("QDJW"),
)
def test_an_initial_and_a_surname_before_a_credential_are_removed(
    surname: str, credential: str, initial: str
):
    word = surname.upper() if credential.isupper() else surname.lower()
    text = f"all is well at this time. {initial}. {word} {credential}\n"
    left = removed_words(text)
    assert word in left and initial in left, text


def test_ventilator_settings_are_not_dates_and_a_drug_weaned_on_a_day_is():
    for text in (
        "Pt intubated on CPAP .5% 5/8. TV low.",
        "changed to PSV of 10/5, 60%.",
        "Continued to wean down to 10/5 and tolerating.",
        "Psv 10, Cpap 5, Fio2 40%, with flowby 6/3.",
    ):
        assert DATE not in {s.type for s in detect([text])[0]}, text
    text = "levo weaned 4/2. PA line out."
    assert "4/2" in {s.text(text) for s in detect([text])[0] if s.type == DATE}


def test_generated_notes_hold_unknown_words_that_are_not_phi():
    unknown = 0
    for text, gold in synthetic.corpus(count=60, seed=3):
        phi = {(s.start, s.end) for s in gold}
        for a, b in statistical.tokenize(text):
            word = text[a:b]
            if not word.isalpha() or lexicon.is_not_a_name(word):
                continue
            if statistical._identity(word, word.lower()) != "<cand>":
                continue
            if not any(s <= a and b <= e for s, e in phi):
                unknown += 1
    # Without them every unknown word of the generated notes was a name.
    assert unknown >= 60


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_two_unknown_capitalised_words_in_mixed_case_prose_are_a_name(a: int, b: int):
    first, last = invented(a).title(), invented(b).title()
    if any(lexicon.is_dictionary_word(w) or lexicon.is_not_a_name(w) for w in (first, last)):
        return
    text = f"Team has spoken with {first} {last} about the plan. Lungs clear.\n"
    ruled = {s.text(text) for s in recognisers.find(text) if s.source == "capital-pair"}
    assert {first, last} <= ruled
    # Before an institution word it is the institution's name; in capitals it tells nothing.
    hospital = f"Transferred from {first} {last} Hospital today. Lungs clear.\n"
    assert not [s for s in recognisers.find(hospital) if s.source == "capital-pair"]
    assert not [s for s in recognisers.find(text.upper()) if s.source == "capital-pair"]
    # Before a colon or a number sign it is a form's label ("Med Rec #:").
    for label in (f"{first} {last}:", f"{first} {last} #:", f"{first} {last}#"):
        form = f"Seen today in clinic.\n{label} 44817\nLungs clear.\n"
        assert not [s for s in recognisers.find(form) if s.source == "capital-pair"], label
