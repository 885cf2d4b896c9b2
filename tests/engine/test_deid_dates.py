"""Dates are a finite class of shapes (issue 36, version 5): every way clinical text writes a
date is removed, in any case and beside any punctuation; vital signs, ventilator settings,
scores, doses, fractions and times of day that look like dates are not."""

from __future__ import annotations

import calendar
import re

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from engine.deid import detect
from engine.deid.spans import DATE, ID, PHONE

ORDINAL = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}
MONTH_WORDS = {m.lower() for m in (*calendar.month_name[1:], *calendar.month_abbr[1:], "Sept")}
# Month abbreviations that are also words in lower case ("may 3 times", "mar 2 tabs", "dec"
# for decreased): a date only after a word that places it in time.
AMBIGUOUS = ("may", "mar", "dec", "jun")


def ordinal(day: int) -> str:
    return f"{day}{ORDINAL.get(day, 'th')}"


@st.composite
def dates(draw: st.DrawFn) -> str:
    """A date in one of the shapes clinical text writes."""
    month = draw(st.integers(1, 12))
    day = draw(st.integers(1, calendar.monthrange(2001, month)[1]))
    later = draw(st.integers(day, calendar.monthrange(2001, month)[1]))
    year = draw(st.integers(1900, 2099))
    yy = year % 100
    name, abbr = calendar.month_name[month], calendar.month_abbr[month]
    shapes = [
        f"{month}/{day}",
        f"{month:02}/{day:02}",
        f"{month}/{day}/{yy:02}",
        f"{month}/{day}/{year}",
        f"{month:02}/{day:02}/{year}",
        f"{month}-{day}-{yy:02}",
        f"{month}-{day}-{year}",
        f"{day}.{month}.{year}",
        f"{day:02}.{month:02}.{year}",
        f"{year}-{month:02}-{day:02}",
        f"{year}/{month:02}/{day:02}",
        f"{month:02}/{year}",
        f"{name} {day}",
        f"{abbr} {day}",
        f"{abbr}. {day}",
        f"{name} {day}, {year}",
        f"{abbr} {day} {year}",
        f"{name} {ordinal(day)}",
        f"{name} the {ordinal(day)}",
        f"{day} {name} {year}",
        f"{day} {abbr}",
        f"{ordinal(day)} of {name}",
        f"{ordinal(day)} of {name}, {year}",
        f"{day:02}-{abbr}-{year}",
        f"{day:02}-{abbr}-{yy:02}",
        f"{day:02}{abbr.upper()}{year}",
        f"{name} {year}",
        f"{abbr}-{year}",
        f"{month}/{day}-{month}/{later}",
        f"{month}/{day} - {month}/{later}",
        f"{month}/{day} to {month}/{later}",
        f"{month}/{day}/{yy:02}-{month}/{later}/{yy:02}",
        f"{abbr} {day}-{later}",
        f"{day}-{later} {name}",
        f"Monday, {name} {day}",
        f"Tues {month}/{day}",
    ]
    return draw(st.sampled_from(shapes))


# Where a date stands: after a word that dates it, opening a line or a sentence, in brackets
# or quotes, before any punctuation, glued to a word.
CONTEXTS = (
    "Pt was admitted on {}.",
    "Since {}, no further events",
    "NPN\n{} CSRU 7P-7A SHIFT SUMMARY;",
    "Seen by surgery. {} repeat CXR clear",
    "s/p CABG on {}; EF 50%",
    "last seen ({}) by PCP",
    'states it is "{}"',
    "CT [{}] negative",
    "pelvic fx on {}: ORIF",
    "labs on{} hct 28",
    "d/c'd {}, then restarted",
)


# The contexts with a word that dates what follows.
DATED = ("Pt was admitted", "Since", "s/p", "pelvic", "labs on", "d/c'd")


def fraction_shaped(value: str) -> bool:
    match = re.fullmatch(r"([1-9]\d*)/(2|3|4|5|10)", value)
    return match is not None and int(match[1]) <= int(match[2])


def cased(text: str, case: str) -> str:
    return {"as": text, "lower": text.lower(), "upper": text.upper()}[case]


def kept_tokens(text: str, start: int, end: int, types: tuple[str, ...] | None = None) -> list[str]:
    """The tokens of ``text[start:end]`` that carry a date's information (figures, month
    names) and that no span removes (of the given types)."""
    spans = [s for s in detect([text])[0] if types is None or s.type in types]
    kept = []
    for token in re.finditer(r"\w+", text[start:end]):
        word = token.group()
        if not (any(c.isdigit() for c in word) or word.lower() in MONTH_WORDS):
            continue  # "the", "of", "to" between a date's parts
        a, b = start + token.start(), start + token.end()
        if not any(s.start <= a and b <= s.end for s in spans):
            kept.append(word)
    return kept


@settings(max_examples=400, deadline=None)
@given(dates(), st.sampled_from(CONTEXTS), st.sampled_from(("as", "lower", "upper")))
def test_every_shape_of_a_date_is_removed_in_any_case_and_beside_any_punctuation(
    date: str, context: str, case: str
):
    text = cased(context.format(date), case)
    start = text.lower().index(date.lower())
    value = text[start : start + len(date)]
    if fraction_shaped(value):
        # 1/2, 2/3, 5/5, 4/10: a fraction, a score or a setting more often than a date, unless
        # a word dates it, or (but for 1/x, 2/3, 3/4) it opens a line or a sentence
        assume(context.startswith(DATED) or not re.fullmatch(r"1/\d+|2/3|3/4", value))
        assume(not context.startswith(("last seen", "states", "CT [")))
    if context.startswith("labs on"):
        assume(value[:1].isdigit())  # glued to a word: figures ("on10/14/82"), not "onMarch"
    if re.search(rf"\b(?:{'|'.join(AMBIGUOUS)})\b", value) and context.startswith(("NPN", "Seen")):
        # "mar 4 csru", "19 mar repeat" opening a line in lower case: the word, not the month
        assume(re.search(r"\d{4}|-\d\d$", value) is not None)
    assert kept_tokens(text, start, start + len(date)) == [], (text, value)


@given(
    st.sampled_from(calendar.month_name[1:]),
    st.sampled_from(("in", "since", "until", "early", "during")),
    st.sampled_from(("as", "lower", "upper")),
)
def test_a_month_alone_after_a_word_that_places_it_in_time_is_removed(
    month: str, word: str, case: str
):
    text = cased(f"Symptoms began {word} {month}, worse since.", case)
    start = text.lower().index(month.lower())
    assume(not (month == "May" and case == "lower"))  # "in may" is too often the verb
    assert kept_tokens(text, start, start + len(month)) == [], text


@st.composite
def not_dates(draw: st.DrawFn) -> str:
    """Figures clinical text writes that look like a date and are none: vital signs and their
    ranges, ventilator settings, scores, strengths, murmur grades, vertebrae, doses, fractions
    and times of day."""
    small = draw(st.integers(1, 12))
    peep = draw(st.integers(0, 15))
    support = draw(st.integers(peep, 25))
    fio2 = draw(st.integers(21, 100))
    low = draw(st.integers(40, 140))
    high = draw(st.integers(low, 200))
    score = draw(st.integers(0, 5))
    hour = draw(st.integers(0, 23))
    later = draw(st.integers(0, 23))
    forms = [
        f"BP {high}/{min(low, 110)}",
        f"HR {low}-{high}",
        f"RR {small}-{small + 10}",
        f"SpO2 {min(low, 90)}-{min(high, 100)}%",
        f"PS {support}/{peep}",
        f"PSV {support}/{peep}/{fio2}%",
        f"psv {support}/peep {peep}/{fio2}%",
        f"CPAP {support}/{peep}",
        f"on bi-pap {support}/{peep}",
        f"Pt remained on {support}/{peep}, {fio2}% overnight",
        f"trialed on {support}/{peep}, tolerated well",
        f"IMV 700x10, {fio2}% {support}/{peep}",
        f"weaned to {support}/{peep}",
        f"mask ventilation {support}/{peep} {fio2}%",
        f"strength {score}/5 in all extremities",
        f"{score}/5 strength RUE",
        f"pain {score}/10",
        f"+{max(score, 1)}/6 SEM",
        f"C{small % 6 + 1}/{small % 6 + 2} disc",
        f"L{small % 4 + 1}/{small % 4 + 2}",
        f"1/{draw(st.sampled_from((2, 3, 4)))} NS at {low} cc/hr",
        f"{small} mg x {score} doses",
        f"CO/CI {small}.{score}/{score}.{small}",
        f"shift {hour:02}00-{later:02}30",
        f"NPN {hour:02}00-{later:02}00:",
        f"at {hour:02}{later:02}",
        f"{score + 2} weeks ago",
        f"the {draw(st.sampled_from(('3rd', '4th')))} ventricle",
        "on the 2nd floor",
        f"{small}-{small + 1} breaths",
        f"may {score + 2} times",
        f"mar {score + 1} tabs",
        "Aug dia 110",
        "per MAR",
        f"nc 02 dec from {score + 2}->2",
    ]
    return draw(st.sampled_from(forms))


@settings(max_examples=300, deadline=None)
@given(not_dates(), st.sampled_from(("as", "lower", "upper")))
def test_vital_signs_settings_scores_doses_and_times_are_not_removed(form: str, case: str):
    text = cased(f"Resp: {form}. Will follow.", case)
    start = text.index(cased(form, case))
    spans = [s for s in detect([text])[0] if s.type in (DATE, ID, PHONE)]
    removed = [
        token.group()
        for token in re.finditer(r"\w+", text[start : start + len(form)])
        if any(s.start < start + token.end() and start + token.start() < s.end for s in spans)
    ]
    assert removed == [], (text, removed)


def test_a_year_month_and_day_run_together_is_a_date_even_in_a_file_name():
    text = "file: smith-20021220.tif"
    start = text.index("2002")
    assert kept_tokens(text, start, start + 8) == []


def test_the_models_vital_sign_ranges_and_oxygen_readings_are_no_identifier_or_phone():
    from engine.deid.detect import _possible
    from engine.deid.spans import Phi

    for value in ("HR 44-60", "SpO2 89-100", "ABP 83-131/37-57", "HR99-99", "RR 12-22"):
        assert not _possible(Phi(0, len(value), ID, "crf"), value)
    for value in ("ZAC4471", "DEMO-0001", "00618254"):
        assert _possible(Phi(0, len(value), ID, "crf"), value)
    assert not _possible(Phi(0, 20, PHONE, "crf"), "70%fi02 sao2 97-98")
    assert _possible(Phi(0, 8, PHONE, "crf"), "555-0142")


def test_a_street_in_lower_case_is_an_address_and_a_shift_is_no_phone_number():
    from engine.deid.spans import ADDRESS

    text = "lives alone in 98 harbour avenue. NPN 0700-1930: 3 way foley in place"
    spans = detect([text])[0]
    assert any(s.type == ADDRESS and s.text(text) == "98 harbour avenue" for s in spans)
    assert not any(s.type == PHONE for s in spans)
    assert not any(s.type == ADDRESS and "foley" in s.text(text) for s in spans)


@given(dates())
def test_a_dates_surrogate_is_written_as_a_date_of_the_same_shape(date: str):
    # Not its letters and digits drawn one by one ("March the 4th" was "Pgavb wol 4sk"):
    # month words, the words between, and as many numbers.
    from engine.deid.surrogates import Surrogates

    surrogate = Surrogates(b"k" * 32).date(date)
    glue = {"the", "of", "to", "st", "nd", "rd", "th", "monday", "tues"}
    for word in re.findall(r"[A-Za-z]+", surrogate):
        assert word.lower() in MONTH_WORDS | glue, (date, surrogate)
    assert len(re.findall(r"\d+", surrogate)) == len(re.findall(r"\d+", date)), (date, surrogate)
