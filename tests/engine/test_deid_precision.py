"""What de-identification must find whatever the name, and what nursing notes hold that is
not PHI (issue 36: precision on PhysioNet's notes was 0.19, most of it CRF guesses and shape
rules firing on vital signs, ventilator settings and clinical words)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.deid import detect, lexicon, recognisers
from engine.deid.detect import _beside
from engine.deid.spans import ADDRESS, DATE, EMAIL, ID, NAME, PHONE, Phi

FIRST = sorted(lexicon.first_names())
LAST = sorted(
    n for n in lexicon.surnames() if len(n) > 2 and not lexicon.is_not_a_name(n) and n.isalpha()
)
# Header forms a name is written in, with a second field on the same line.
HEADERS = (
    "Patient: {First} {Last}\nMRN: 00481234\n",
    "Pt: {First} {Last}   Hospital number: 123 456 789\n",
    "Name: {LAST}, {First}   DOB: 03/04/1950\n",
    "PATIENT NAME: {FIRST} {LAST}\n",
    "Patient name - {Last}, {First}\nReason: chest pain\n",
)


def removed(text: str) -> str:
    """The text with every found span blanked out."""
    out = list(text)
    for span in detect([text])[0]:
        out[span.start : span.end] = ["#"] * (span.end - span.start)
    return "".join(out)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(FIRST), st.sampled_from(LAST), st.sampled_from(HEADERS))
def test_any_census_name_in_any_header_form_is_removed(first: str, last: str, header: str):
    text = header.format(
        First=first.title(), Last=last.title(), FIRST=first.upper(), LAST=last.upper()
    )
    left = removed(text).lower()
    assert first not in left.split() and last not in left.replace(",", " ").split(), (text, left)


def found(text: str) -> dict[str, str]:
    return {s.text(text): s.type for s in detect([text])[0]}


def test_oxygen_and_lines_via_are_not_addresses():
    text = "o2 sat 97% on 4l via n/c. bp 110/60 via r rad aline. 3 way foley placed.\n"
    assert ADDRESS not in found(text).values()
    # A street word written before the street's name, in any language, still is one.
    assert "12 rue des Lilas" in removed_values("Adresse: 12 rue des Lilas, 75011 Paris\n")
    assert "4 calle Mayor" in removed_values("lives at 4 calle Mayor, Madrid\n")


def removed_values(text: str) -> str:
    return " ".join(s.text(text) for s in detect([text])[0])


def test_ranges_ratios_and_settings_are_not_identifiers_or_dates():
    text = (
        "NURSING NOTE 1900-0700\nspont VT 750-1000 on 40/1000/15. cks 2245-105-4.7\n"
        "psv 12/5/40% tolerating well. RECURRANCE OF AF-130'S\n"
    )
    assert not found(text), found(text)
    # Record numbers by shape still are.
    assert found("Specimen SP:21:004471 and S24-118734 received\n").get("S24-118734") == ID


def test_relatives_verbs_and_mental_status_are_not_names():
    text = (
        "son arrived at 1400. daughter claims mother has DNR. dtr died at 22.\n"
        "MS continues to improve. ms clears slowly.\n"
    )
    assert NAME not in found(text).values(), found(text)
    # A listed first name after a relation, or after Ms, is still one.
    assert found("dtr suzette called, spoke w/ ms kowalski\n").get("suzette") == NAME


def ruled(text: str) -> dict[str, str]:
    return {s.text(text): s.type for s in recognisers.find(text)}


def test_clinical_lists_after_a_comma_are_not_last_first_names():
    # The rules alone: the default model still guesses "Hypercholesterolemia" a name.
    text = "PMH: CABG, MVR, HTN, Hypercholesterolemia, Afib\nAdmitted to CCU, Aline placed\n"
    assert NAME not in ruled(text).values(), ruled(text)
    assert ruled("QUILLEN, Marisol  seen today\n").get("Marisol") == NAME
    assert ruled("RE: CODE STATUS, NPO\n") == {}
    assert ruled("RE: MARISOL QUILLEN\n").get("MARISOL") == NAME


def test_statistical_guesses_that_cannot_be_of_their_type_are_dropped():
    text = "BP 120/60 HR 80 PEEP 20 min 5 Ingrid 4.7 x@y.org 10/3 2021/00457 5551234567"

    def at(value: str, kind: str) -> Phi:
        start = text.index(value)
        return Phi(start, start + len(value), kind, "crf")

    guesses = [
        at("120/60", ID),
        at("120/60", DATE),
        at("80", PHONE),
        at("20", DATE),
        at("min", NAME),
        at("Ingrid", NAME),
        at("4.7", EMAIL),
        at("x@y.org", EMAIL),
        at("10/3", DATE),
        at("2021/00457", ID),
        at("5551234567", PHONE),
    ]
    kept = {(g.text(text), g.type) for g in _beside(text, guesses, [])}
    assert kept == {
        ("Ingrid", NAME),
        ("x@y.org", EMAIL),
        ("10/3", DATE),
        ("2021/00457", ID),
        ("5551234567", PHONE),
    }


def test_clinicians_named_by_role_initial_or_aware_are_removed():
    text = (
        "HO Falco notified. NO LABS PER NP Wolfe. md wyman aware.\n"
        "REVERSALS NOT GIVEN PER K. ABRAMS PA. N. GRANDONE AWARE.\n"
        "ANTHONY C. KOZICKI, RRT\n"
    )
    left = removed(text)
    for word in ("Falco", "Wolfe", "wyman", "ABRAMS", "GRANDONE", "KOZICKI", "K.", "N.", "C."):
        assert word not in left.split(), (word, left)
    # The roles and what they did stay.
    assert "notified." in left and "AWARE." in left
    assert found("md aware. ho notified. team aware.\n") == {}


def test_lower_case_months_with_a_day_or_year_are_dates():
    for text, date in (
        ("stated march 21, 1899 then corrected", "march 21, 1899"),
        ("birthday is tomorrow, may 16, 2015.", "may 16, 2015"),
        ("in march of 2022 pt was", "march of 2022"),
    ):
        assert date in removed_values(text), text
    assert DATE not in found("may 3 times a day, mar 2 tabs\n").values()


def test_a_field_label_after_a_credential_is_no_name():
    text = "Ordering physician: Tobias Vandermeer, MD    Phone: (608) 555-0142\n"
    assert "Phone" not in found(text)
    assert found(text).get("Vandermeer") == NAME
