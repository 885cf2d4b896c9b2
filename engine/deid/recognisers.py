"""Vetted's own PHI recognisers for clinical documents: regular expressions over the shapes
that clinical paperwork gives PHI (labelled header fields, titles and credentials, greetings
and signatures, relatives, dates, record numbers, phone numbers, addresses), and a name list
for names that stand alone. Pure Python, no model, nothing downloaded.

``find(text)`` gives one text's spans; ``engine.deid.detect`` adds what only the whole
document tells: a name found once in a labelled field is a name wherever it appears again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import date

from engine.deid import lexicon
from engine.deid.spans import ADDRESS, AGE, DATE, EMAIL, ID, NAME, PHONE, URL, Phi

# -- names ------------------------------------------------------------------------------------

_UPPER = "A-ZÀ-ÖØ-Þ"
_LETTERS = r"[^\W\d_]"
# A capitalised name word: O'Brien, Okonkwo-Bell, Sørensen, QUILLEN (no digits, no lone letter).
WORD = rf"[{_UPPER}]{_LETTERS}*(?:['\u2019-][{_UPPER}a-zß-ÿ]{_LETTERS}*)*"
INITIAL = rf"[{_UPPER}]\.?"
# Up to four words, middle initials allowed ("Marisol A.", "Tobias J. Vandermeer").
FULL_NAME = rf"{WORD}(?:[ \t]+(?:{INITIAL}[ \t]+)?{WORD}){{0,3}}"
LAST_FIRST = rf"{WORD}(?:[ -]{WORD})?,[ \t]*{WORD}(?:[ \t]+{INITIAL})?(?![\w])"
# After a label, words joined by one space: two spaces or a tab end the field ("Pt: Alex
# Demo   Hospital number: 1234"), so the next field's words are not read as the name's.
TIGHT_NAME = rf"{WORD}(?: (?:{INITIAL} )?{WORD}){{0,3}}"
# Letters of a script other than Latin: a name, wherever it stands in a Latin-script text.
_NON_LATIN = r"[^\W\d_A-Za-z\u00c0-\u024f]"
FOREIGN_NAME = rf"{_NON_LATIN}+(?:[ \t·.]{_NON_LATIN}+){{0,3}}"

CREDENTIALS = (
    r"M\.?D|D\.?O|R\.?N|NP|N\.P|PA-C|P\.?A|Ph\.?D|MBBS|MBChB|DNP|APRN|CNP|CRNA|CNM|PharmD|"
    r"LCSW|LICSW|MSW|LPN|FACS|FACP|FRCPC?|FRCPath|MPH|DDS|DMD|OD|DPM|RPh|CNA|BSN|MSN|RRT|"
    r"CRT|PT|OT|SLP|RD|LDN|CCC-SLP|CNS|ACNP|FNP|ANP"
)
NAME_LABELS = (
    r"patient(?:'s)?(?:\s+name)?|pt(?:\s+name)?|name|patient\s+full\s+name|"
    r"(?:ordering|referring|attending|admitting|consulting|treating|requesting|primary|"
    r"performing|responsible|reading|interpreting|submitting)(?:\s+(?:physician|provider|"
    r"doctor|clinician|md|surgeon|pathologist|radiologist))?|physician|provider|clinician|"
    r"surgeon|assistant|pathologist|radiologist|resident|fellow|technologist|nurse|pcp|"
    r"primary\s+care(?:\s+(?:physician|provider))?|attending|consultant|anesthesiologist|"
    r"(?:electronically\s+)?signed(?:\s+by)?|(?:dictated|transcribed|verified|reviewed|"
    r"approved|authori[sz]ed|reported|ordered|requested|collected|performed|read|"
    r"interpreted|entered|prepared|signed\s+out|seen|examined|referred)\s+by|"
    r"attn|attention|cc|c/c|to|from|re|for|witness|guardian|next\s+of\s+kin|"
    r"emergency\s+contact|contact(?:\s+person)?|interpreter|caregiver|signature|"
    r"mother|father|spouse|husband|wife|son|daughter|parent|insured|subscriber|"
    r"policy\s*holder|responsible\s+party|author|sender|recipient|member(?:\s+name)?"
)
TITLES = r"Drs|Dr|Doctor|Mr|Mrs|Ms|Miss|Mx|Prof|Professor|Sr|Sister|Fr|Rev"
RELATIONS = (
    r"wife|husband|spouse|partner|fianc[ée]e?|daughter(?:-in-law)?|son(?:-in-law)?|"
    r"mother(?:-in-law)?|father(?:-in-law)?|sister(?:-in-law)?|brother(?:-in-law)?|"
    r"grand(?:son|daughter|mother|father|child)|niece|nephew|aunt|uncle|cousin|friend|"
    r"neighbou?r|caregiver|guardian|roommate|boyfriend|girlfriend|stepson|stepdaughter|"
    r"stepmother|stepfather|sibling|child|parent|mom|dad|pastor|priest|sons|daughters|"
    r"brothers|sisters|dtr|dau|sis|bro|hus|proxy|hcp"
)
GREETINGS = (
    r"Dear|Hello|Hi|Hey|Thanks|Thank\s+you|Sincerely|Regards|Best|Cheers|Cordially|"
    r"Respectfully|Yours|Love|Warmly"
)

_NAME_LABEL_RE = re.compile(
    rf"(?<![\w])(?i:{NAME_LABELS})\s*(?:[:#(]|\s-\s)[ \t]*(?:\(?[ \t]*)"
    rf"(?:(?:{TITLES})\.?[ \t]+)?(?P<name>{LAST_FIRST}|{TIGHT_NAME}|{FOREIGN_NAME})"
)
_TITLE_RE = re.compile(
    rf"(?<![\w])(?:{TITLES})(?:\.[ \t]*|[ \t]+)(?P<name>{FULL_NAME}(?:[ \t]+and[ \t]+{WORD})?)"
)
_TITLE_ANYCASE_RE = re.compile(
    r"(?<![\w])(?:drs|dr|mr|mrs|ms)(?:\.[ \t]*|[ \t]+)"
    r"(?P<name>[A-Za-z][a-z'\u2019-]+(?:[ \t]+[A-Za-z][a-z'\u2019-]+)?)",
    re.IGNORECASE,
)
_CREDENTIAL_RE = re.compile(
    rf"(?P<name>{FULL_NAME}|{LAST_FIRST}),?[ \t]+(?:{CREDENTIALS})\b(?![-\w])"
)
_LAST_FIRST_RE = re.compile(
    rf"(?<![\w])(?P<name>[{_UPPER}][{_UPPER}'\u2019-]+(?:[ -][{_UPPER}][{_UPPER}'\u2019-]+)?,"
    rf"[ \t]*{WORD}"
    rf"(?:[ \t]+{INITIAL})?)(?![\w])"
)
_RELATION_RE = re.compile(
    rf"(?<![\w])(?i:{RELATIONS})\b(?:\(\?\))?[ \t]*[,:(-]?[ \t]*\n?[ \t]*,?"
    rf"(?:named[ \t]+|is[ \t]+)?"
    rf"(?P<name>{WORD}(?:[ \t]+{WORD})?(?:[ \t]+and[ \t]+{WORD})?)"
)
# "son bill", "dtr suzette": a lower-case word after a relation, when it is no common word.
_RELATION_LOWER_RE = re.compile(
    rf"(?<![\w])(?i:{RELATIONS})\b[ \t]*[,:(-]?[ \t]*,?(?P<name>[a-z][a-z'\u2019-]+)(?![\w])"
)
# A signature line: a name and a credential, alone on their line ("JON DEVAUX RRT").
_SIGNATURE_LINE_RE = re.compile(
    rf"^[ \t]*(?P<name>{FULL_NAME}),?[ \t]+(?:{CREDENTIALS})\.?[ \t]*$", re.MULTILINE
)
_GREETING_RE = re.compile(
    rf"(?<![\w])(?:{GREETINGS})\b,?[ \t]+(?:(?:{TITLES})\.?[ \t]+)?"
    rf"(?P<name>{WORD}(?:[ \t]+{WORD})?)"
)
_I_NAME_RE = re.compile(rf"(?<![\w])I,[ \t]+(?P<name>{FULL_NAME}),")
_LISTED_RE = re.compile(rf"(?<![\w])(?P<name>{WORD}(?:[ \t]+{INITIAL})?[ \t]+{WORD})(?![\w])")
_WORD_RE = re.compile(rf"{WORD}|{_LETTERS}+")
_ROLE_NAME_RE = re.compile(
    r"(?<![\w/])(?:HO|NP|PA|RN|RRT|MD|ho|np|md|Intern|intern|Resident|resident|Fellow|fellow)"
    r" (?:[A-Za-z]\. ?)?(?P<name>[A-Za-z][a-z'\u2019-]+|[A-Z][A-Z'\u2019-]+)(?![\w]|[ \t]*:)"
)
_PER_INITIAL_RE = re.compile(
    rf"(?<![\w])(?i:per|by|dr|drs)\.?[ \t]+(?:(?i:dr)\.?[ \t]+)?[A-Za-z]\.[ \t]*"
    rf"(?P<name>{_LETTERS}{{3,}})"
)
_AWARE_RE = re.compile(
    rf"(?<![\w])[{_UPPER}a-z]\.?[ \t]+(?P<name>{_LETTERS}{{3,}})"
    rf"(?:,?[ \t]+(?:{CREDENTIALS}))?[ \t]+(?i:aware|notified|paged|called|informed)\b"
)
_NEXT_WORD_RE = re.compile(rf"[ \t]+({_LETTERS}+)")
# "Q. LANDER RRT", "q. lander rrt", "d. renna rn": an initial with its full stop, a word, then a
# clinician's credential, in any case.
_INITIAL_CREDENTIAL_RE = re.compile(
    rf"(?<![\w.])[A-Za-z]\.[ \t]*(?P<name>{_LETTERS}{{3,}}),?[ \t]+"
    r"(?i:rrt|rn|np|md|pa|bsn|lpn|crt|rpt)\b(?![-\w])"
)
_MADE_AWARE_RE = re.compile(r"[ \t]+(?:(?i:made)[ \t]+)?(?i:aware|notified)\b")


def _name_tokens(text: str, start: int, end: int, source: str, *, strict: bool) -> Iterator[Phi]:
    """The words of a matched name as NAME spans, one per word (so that each gets its own
    surrogate and a later lone mention matches). Initials, titles and credentials are left;
    so is a word that is a common word rather than a name. ``strict``: a candidate holding an
    institution word ("Oncology Pool") is not a person at all."""
    words = []
    for match in _WORD_RE.finditer(text[start:end]):
        words.append((start + match.start(), start + match.end(), match.group()))
    if strict and any(lexicon.is_institution_word(w) for _, _, w in words):
        return
    for a, b, word in words:
        if len(word.strip("'\u2019-")) < 2 or lexicon.is_not_a_name(word):
            continue
        yield Phi(a, b, NAME, source)


# Sources whose context alone makes a name, whatever its case; the others, in capitals
# ("VENT, RR", "OLD RECORDS FROM ANNAPOLIS, MD"), need a listed first name or a header line.
_STRONG = ("name-label", "title", "signatory", "greeting", "signature")
_HEADER_LINE_RE = re.compile(
    r"\b(?:MRN|DOB|D\.O\.B|Date\s+of\s+Birth|Acct|Account|MR#|Med\s*Rec)\b",
    re.IGNORECASE,
)


def _capitals_only(words: str) -> bool:
    letters = [c for c in words if c.isalpha()]
    return bool(letters) and all(c.isupper() for c in letters)


def _line_of(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start : end if end >= 0 else len(text)]


# Labels that are also words of prose ("RE: ILEUS, NPO", "TO CODE STATUS"): in capitals,
# what follows them is a name only when it starts with a listed first name or surname.
_WEAK_LABELS = ("re", "to", "for", "from", "cc")


def _plausible(text: str, match: re.Match[str], source: str) -> bool:
    """Whether a name pattern's match can be a name, beyond its shape. "LAST, First" needs a
    listed first name or surname, or a header line ("Admitted to CCU, Aline", "HTN,
    Hypercholesterolemia" are lists); a weak label in capitals needs a listed name."""
    a, _b = match.span("name")
    words = _WORD_RE.findall(match.group("name"))
    listed = any(lexicon.is_first_name(w) or lexicon.is_surname(w) for w in words)
    if source == "last-first":
        return listed or bool(_HEADER_LINE_RE.search(_line_of(text, a)))
    if source == "name-label":
        label = re.sub(r"[\s:#(\-]+$", "", text[match.start() : a]).lower()
        if label in _WEAK_LABELS and _capitals_only(match.group("name")):
            return listed and not lexicon.is_not_a_name(words[0])
    return True


def _names(text: str) -> Iterator[Phi]:
    for pattern, source, strict in (
        (_NAME_LABEL_RE, "name-label", True),
        (_TITLE_RE, "title", False),
        (_CREDENTIAL_RE, "credential", False),
        (_LAST_FIRST_RE, "last-first", True),
        (_RELATION_RE, "relation", True),
        (_GREETING_RE, "greeting", True),
        (_I_NAME_RE, "signatory", True),
        (_SIGNATURE_LINE_RE, "signature", False),
    ):
        for match in pattern.finditer(text):
            a, b = match.span("name")
            if not _plausible(text, match, source):
                continue
            if (
                source not in _STRONG
                and _capitals_only(match.group("name"))
                and not (
                    source == "relation"
                    and lexicon.is_first_name(_WORD_RE.findall(match.group("name"))[0])
                )
                and not _HEADER_LINE_RE.search(_line_of(text, a))
            ):
                continue
            yield from _name_tokens(text, a, b, source, strict=strict)
    for match in _RELATION_LOWER_RE.finditer(text):
        word = match.group("name")
        # A listed first name or surname only: "son arrived", "daughter claims", "dtr died"
        # and "daughter, russian speaking" are not names.
        if not lexicon.is_common_word(word) and (
            lexicon.is_first_name(word) or lexicon.is_surname(word)
        ):
            yield Phi(*match.span("name"), NAME, "relation")
    for match in _TITLE_ANYCASE_RE.finditer(text):
        # "dr quartermain", "DR. KLEIN": the first word after the title, when it is no common
        # word ("dr aware", "dr notified").
        word = match.group("name").split()[0]
        if match.group().startswith(("MS", "ms")) and not (
            lexicon.is_first_name(word) or lexicon.is_surname(word)
        ):
            continue  # in nursing notes "MS" and "ms" are mental status: "MS continues"
        if not lexicon.is_common_word(word) and not lexicon.is_institution_word(word):
            a = match.start("name")
            yield Phi(a, a + len(word), NAME, "title")
    for match in _ROLE_NAME_RE.finditer(text):
        # "HO Falco notified", "NP Wolfe", "md wyman aware", "per K. ABRAMS PA": a clinician's
        # role before the name; in capitals or lower case the word must be a listed name.
        word = match.group("name")
        if lexicon.is_common_word(word) or lexicon.is_institution_word(word) or len(word) < 3:
            continue
        listed = lexicon.is_first_name(word) or lexicon.is_surname(word)
        aware = _MADE_AWARE_RE.match(text, match.end())  # "NP DJURIC MADE AWARE"
        if listed or (word[:1].isupper() and word[1:].islower()) or aware:
            yield Phi(*match.span("name"), NAME, "role")
    for match in _INITIAL_CREDENTIAL_RE.finditer(text):
        word = match.group("name")
        if not lexicon.is_not_a_name(word) and not lexicon.is_institution_word(word):
            yield Phi(match.start(), match.start() + 1, NAME, "initial-credential")
            yield Phi(*match.span("name"), NAME, "initial-credential")
    for match in _PER_INITIAL_RE.finditer(text):
        # "PER B. KARGAS", "per dr b. gill": an initial and a surname after "per" or a title.
        word = match.group("name")
        if not lexicon.is_not_a_name(word) and not lexicon.is_institution_word(word):
            yield Phi(*match.span("name"), NAME, "per-initial")
    for match in _AWARE_RE.finditer(text):
        # "N. GRANDONE AWARE", "B. CLIFFORD MD AWARE": an initial and a word, then "aware".
        word = match.group("name")
        if not lexicon.is_not_a_name(word) and not lexicon.is_institution_word(word):
            yield Phi(*match.span("name"), NAME, "aware")
    for match in _LISTED_RE.finditer(text):
        # "Ingrid Lindqvist" with no label: a listed first name and a capitalised word that
        # is not a common word.
        words = match.group("name").split()
        first, last = words[0], words[-1]
        following = _NEXT_WORD_RE.match(text, match.end())
        if _capitals_only(match.group("name")) and not _HEADER_LINE_RE.search(
            _line_of(text, match.start())
        ):
            continue  # capitals tell nothing: "MAE SPONT", "AMBER COLOR"
        if (
            lexicon.is_first_name(first)
            and not lexicon.is_not_a_name(last)
            and not lexicon.is_institution_word(last)
            and not (following and lexicon.is_institution_word(following.group(1)))
        ):
            yield from _name_tokens(text, *match.span("name"), "name-list", strict=True)
    for match in _FIRST_PAIR_RE.finditer(text):
        # "leslie kiezulas", "grace dudak aware", "CAROLE HAYES", "barbara j. parrilli": in any
        # case, a listed first name that is no word of the language, then a word written the
        # same way that is no word either (or a listed surname).
        first, last = match.group("first"), match.group("last")
        if not _same_case(first, last) or not lexicon.is_first_name(first):
            continue
        if lexicon.is_dictionary_word(first) or lexicon.is_not_a_name(last):
            continue
        if lexicon.is_institution_word(last) or (
            lexicon.is_dictionary_word(last) and not lexicon.is_surname(last)
        ):
            continue
        yield Phi(*match.span("first"), NAME, "first-pair")
        if match.group("initial"):
            yield Phi(*match.span("initial"), NAME, "first-pair")
        yield Phi(*match.span("last"), NAME, "first-pair")
    if not _mostly_capitals(text):
        for match in _CAPITAL_PAIR_RE.finditer(text):
            # "Radu Crosson", "Wil Laberbera": in a text written in mixed case, two capitalised
            # words that are no word of the language (or are listed names), before no
            # institution word ("Warren Grant Hospital").
            words = (match.group("first"), match.group("last"))
            following = _NEXT_WORD_RE.match(text, match.end())
            if following and lexicon.is_institution_word(following.group(1)):
                continue
            if _LABEL_END_RE.match(text, match.end()):
                continue  # "Med Rec #:", "Ref Doc:": a form's label, not a person
            if all(_unknown_or_listed(w) for w in words):
                yield Phi(*match.span("first"), NAME, "capital-pair")
                yield Phi(*match.span("last"), NAME, "capital-pair")


_LABEL_END_RE = re.compile(r"[ \t]*[#:]")
_CAPITAL_PAIR_RE = re.compile(
    r"(?<![\w'])(?P<first>[A-Z][a-z]{2,})[ \t]+(?P<last>[A-Z][a-z][a-z'\u2019-]*[a-z])(?![\w])"
)


def _unknown_or_listed(word: str) -> bool:
    if lexicon.is_not_a_name(word) or lexicon.is_institution_word(word):
        return False
    listed = lexicon.is_first_name(word) or lexicon.is_surname(word)
    return listed or not lexicon.is_dictionary_word(word)


def _mostly_capitals(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return sum(c.isupper() for c in letters) > 0.5 * len(letters)


_FIRST_PAIR_RE = re.compile(
    r"(?<![\w'])(?P<first>[A-Za-z]{3,})[ \t]+(?:(?P<initial>[A-Za-z])\.?[ \t]+)?"
    r"(?P<last>[A-Za-z][A-Za-z'\u2019-]*[A-Za-z])(?![\w])"
)


def _same_case(a: str, b: str) -> bool:
    if a.islower() or a.isupper():
        return a.islower() == b.islower() and a.isupper() == b.isupper()
    return a.istitle() and b[:1].isupper() and not b.isupper()


_NON_LATIN_WORD_RE = re.compile(rf"{_NON_LATIN}+")


def _foreign_names(text: str) -> Iterator[Phi]:
    """In a text written in Latin script, words in another script are names (王伟, Иван
    Петров): a clinical document in English quotes other scripts for a person's name far
    more often than for anything else, and a wrong guess costs a word, not a patient."""
    found = list(_NON_LATIN_WORD_RE.finditer(text))
    if not found:
        return
    foreign = sum(m.end() - m.start() for m in found)
    latin = sum(1 for c in text if c.isalpha()) - foreign
    if latin < foreign and len(found) > 4:
        return  # a text in that script: its words are not all names
    for match in found:
        yield Phi(*match.span(), NAME, "script")


# -- dates --------------------------------------------------------------------------------------

MONTHS = (
    r"(?i:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_DAY = r"(?:0?[1-9]|[12]\d|3[01])"
_MONTH = r"(?:0?[1-9]|1[0-2])"
_YEAR = r"(?:1[89]\d\d|20\d\d)"
_ORD = r"(?i:st|nd|rd|th)"
# Between the two ends of a range: "3/4-3/6", "3/4 - 3/6", "3/4 to 3/6", "1->2 nov", "4 thru 6".
_TO = r"[ \t]*(?:-+>?|\u2013|(?i:to|thru|through|till|until))[ \t]*"
# Figures glued to a word ("fx4/97", "labs on10/14/82", "Quartermain.8/31", "LA-10/3") are
# still dates; a lone letter before them is a vertebra or a lead ("C5/6", "L4/5", "V1/2").
_GLUED = r"(?:(?<![\w/.,-])|(?<=[A-Za-z]{2})|(?<=[A-Za-z]{2}[.-]))"
_DATE_RES = [
    # 03/14/2025, 3-14-25, 14.03.2025 (day first too: both orders are dates)
    re.compile(
        rf"{_GLUED}(?:{_MONTH}|{_DAY})([/.-])(?:{_DAY}|{_MONTH})\1(?:{_YEAR}|\d\d)(?![\w/-])"
    ),
    # 2025-03-14, 2025/03/14
    re.compile(rf"{_GLUED}{_YEAR}([/.-]){_MONTH}\1{_DAY}(?![\w/-])"),
    # March 4, 2025; Mar. 4th 2025; March 4; MARCH 4TH; March the 4th; Mar 4-6; Nov 3, '96
    re.compile(
        rf"(?<![\w])(?:{MONTHS})\.?[ \t]+(?:(?i:the)[ \t]+)?{_DAY}{_ORD}?"
        rf"(?:{_TO}{_DAY}{_ORD}?)?(?:,?[ \t]+(?:{_YEAR}|'\d\d))?(?![\w])"
    ),
    # 4 March 2025; 4th of March, 2025; 12-May-1961; 12-May-61; 1->2 nov; 15-16 March
    re.compile(
        rf"{_GLUED}(?:{_DAY}{_ORD}?{_TO})?{_DAY}{_ORD}?(?:[ \t]+(?i:of))?[ \t-]+(?:{MONTHS})\.?"
        rf"(?:,?[ \t-]+{_YEAR}|-\d\d(?!\d)|,?[ \t]+'\d\d)?(?![\w])",
    ),
    # March 2025, Mar-2025, nov, 96, March of 2022
    re.compile(rf"(?<![\w])(?:{MONTHS})\.?,?[ \t-]+(?:of[ \t]+)?(?:{_YEAR}|'?\d\d)(?![\w])"),
    # 04MAR2025, 4mar25
    re.compile(rf"{_GLUED}{_DAY}(?:{MONTHS})(?:{_YEAR}|\d\d)(?![\w])"),
    # 20021220, note_20111112.tif: a year, a month and a day run together
    re.compile(r"(?<!\d)(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])(?!\d)"),
    # 03/2019: a month and a year in full
    re.compile(rf"{_GLUED}{_MONTH}/{_YEAR}(?![\w/]|\.\d)"),
    # 10/03/10/04: two dates joined by a slash
    re.compile(
        r"(?<![\w/.,-])(?:0[1-9]|1[0-2])/(?:0[1-9]|[12]\d|3[01])/(?:0[1-9]|1[0-2])/"
        r"(?:0[1-9]|[12]\d|3[01])(?![\w/]|\.\d)"
    ),
]
# A month named alone after a word that places something in time ("in July", "since Nov.",
# "until september"). Not "Mar"/"MAR" (the medication record), "Aug" (an augmented pressure),
# "Dec" (decreased) or a lower-case "may".
_MONTH_ALONE_RE = re.compile(
    r"\b(?i:in|since|during|until|till|early|late|mid|last|next|through|thru|before|"
    r"after|from)[ \t]+(?P<month>(?i:january|february|march|april|june|july|august|september|"
    r"october|november|december|jan|feb|apr|jun|jul|sept?|oct|nov)\.?|May|MAY)(?![\w])"
)
# Two dates joined as a range: "8/2 - 8/10", "3/4 to 3/6", "3-14-25 thru 3-16-25" (the
# second, alone, would read as a fraction; together each tells the other is a date).
_NUM_DATE = rf"{_MONTH}/{_DAY}(?:/(?:{_YEAR}|\d\d))?|{_MONTH}-{_DAY}-(?:{_YEAR}|\d\d)"
_RANGE_RE = re.compile(rf"{_GLUED}(?P<first>{_NUM_DATE}){_TO}(?P<second>{_NUM_DATE})(?![\w/]|\.\d)")
# 7/22, 12/14: a month and a day, unless a score, a fraction or a dose says otherwise.
_MONTH_DAY_RE = re.compile(rf"{_GLUED}{_MONTH}/{_DAY}(?![\w/]|\.\d)")
_NOT_MONTH_DAY_BEFORE = re.compile(
    r"(?:\b(?:pain|score|scale|rated|rates|strength|grade|gleason|bp|ratio|x|sats?|gcs|apgar|"
    r"mmhg|cores?|ef|power|motor|ps|psv|peep|cpap|bi-?pap|ips|vent\w*|simv|imv|ac|a/c|"
    r"settings?|crackles|rales|rhonchi|cp|ventilator|co|ci|co/ci|cvp|pcwp|pap|pad|svr|iabp|"
    r"i:e|murmur|sem|hsm)\s*[:=]?\s*"
    # Beside an oxygen fraction: "50% 8/5", "40%, & 5/8" (a ventilator's pressures).
    r"|\d\s*%\s*[,&]?\s*(?:&\s*)?|\+\s*)$",
    re.IGNORECASE,
)
_NOT_MONTH_DAY_AFTER = re.compile(
    r"^(?:\s*(?:cores?|tabs?|tablets?|pills?|caps?|capsules?|puffs?|nodes?|lymph|"
    r"positive|mg|mcg|ml|cc|units?|strength|power|inch|teaspoons?|tsp|tbsp|doses?|ns|"
    r"normal|saline|times|ips|cpap|bipap|psv|peep|fio2|str|up|way|bilat|pain|cp|of\s+the|"
    r"sem|hsm|sm|murmurs?|systolic|diastolic|[rl]ue|[rl]le|[bu]ue|[bu]le|ue|le|extremit\w*|"
    r"grips?)\b"
    # A ventilator's pressures before their oxygen: "5/5, 40%", "5/5-.40", "10/5 40%".
    r"|\s*%|-\.?\d|\s*x\b|\s*[,&]?\s*(?:&\s*)?(?:fio2\s*)?\.?\d{1,3}\s*%)",
    re.IGNORECASE,
)
# A ventilator's settings earlier in the sentence ("CPAP .5% 5/8", "PSV of 10/5", "flowby 6/3")
# or "weaned (down) to 10/5": pressures, not a month and a day ("levo weaned 4/2" is a date).
_VENT_BEFORE = re.compile(
    r"\b(?:ps|psv|peep|cpap|bi-?pap|simv|imv|ac|a/c|vent|flow-?by)\b(?:[^\n.;]|\.\d){0,12}$"
    r"|\bwean(?:ed|ing)?[ \t]+(?:(?:back|down)[ \t]+)?to[ \t]+$",
    re.IGNORECASE,
)
# "trialed on 5/5", "remained on 10/5" in a sentence about breathing: a pressure support over
# a PEEP (the first no smaller, the second at most 15), not the 5th of May; an event's date
# ("extubated on 8/5") stays a date.
_RESP_WORDS_RE = re.compile(
    r"\b(?:resp\w*|abg|gas|vent\w*|wean\w*|trial\w*|tried|fio2|peep|psv?|cpap|bi-?pap|simv|"
    r"imv|tv|vt|tidal|sats?|spo2|sao2|rsbi|mask|ett)\b",
    re.IGNORECASE,
)
_ON_BEFORE_RE = re.compile(r"\b(?i:on|of)[ \t]+$")
_EVENT_BEFORE_RE = re.compile(
    r"\b(?i:\w*(?:tubat|admit|transferr|discharg|insert|remov|chang|start|pull|place|cultur|"
    r"drawn|sent|done|seen|began|begun)\w*|d/?c'?d?)[ \t]+(?i:on)[ \t]+$"
)
# A fraction more often than a date: 1/2, 2/3, 5/5, 4/10 (unless a date word comes first, or
# it opens a line or a sentence: "9/10 PROCAN DCED", "FEMALE. 10/10 2WK HX").
_FRACTION_RE = re.compile(r"^([1-9]\d*)/(2|3|4|5|10)$")  # "01/10" is written as a date
_WEEKDAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|wed|thu|thurs?|fri"
_DATE_CUE_RE = re.compile(
    rf"\b(?:on|since|from|until|till|dated?|by|before|after|of|d/c'?d|post|through|thru|"
    rf"starting|started|last|next|{_WEEKDAYS})\.?,?\s*$",
    re.I,
)
# Opening a line or a sentence is a date's place too, though not for the fractions written
# most ("1/2 left stump", "1/4 BLOOD CULTURES", "2/3", "3/4").
_OPENING_RE = re.compile(r"(?:\A|\n|[.!?][ \t])[ \t]*$")
_COMMON_FRACTION_RE = re.compile(r"^(?:1/\d+|2/3|3/4)$")
# "on 7-8 for coiling", "since 3-5.": a month and a day joined by a hyphen, after a word that
# dates it and before the phrase ends (elsewhere "3-4 breaths", "rr 12-18" are ranges).
_HYPHEN_MONTH_DAY_RE = re.compile(
    rf"\b(?i:on|since|dated?)[ \t]+(?P<date>{_MONTH}-{_DAY})(?![\w/-])"
    r"(?=[ \t]*(?:[.,;)]|\n|$|(?i:for|at|and|with|when|until|thru|through|pt|he|she)\b))"
)
# 8/84, 11/92: a month and a two-digit year (no day is above 31).
_MONTH_YEAR_RE = re.compile(rf"{_GLUED}{_MONTH}/(?:3[2-9]|[4-9]\d)(?![\w/%]|\.\d|[ \t]*%)")
# "the 15th", "on the 3rd", "since 2nd": an ordinal day after a word that places it in time,
# unless a noun follows it ("the 4th ventricle", "the 2nd floor", "3rd dose").
_ORDINAL_DAY_RE = re.compile(
    r"\b(?P<cue>(?i:the|on|since|until|till|by|before|after|from|of))[ \t]+"
    r"(?P<day>(?:[12]?\d|3[01])(?i:st|nd|rd|th))\b"
)
_ORDINAL_NOUN_RE = re.compile(r"[ \t]+([A-Za-z]+)")
_DATE_FOLLOWERS = frozenset(
    re.findall(
        r"\w+",
        "at of in on and or when to the pt patient he she they was were is will for with by "
        "after before until till am pm morning afternoon evening night overnight while where "
        "which that but so then this",
    )
)


def _glued_before(text: str, start: int, width: int) -> str:
    """The text before a match, with a space when the match is glued to a word ("PS10/5")."""
    before = text[max(0, start - width) : start]
    if before[-1:] in (".", "-"):
        return before[:-1] + " "
    return before + " " if before[-1:].isalnum() else before


def _month_day(text: str, start: int, end: int, value_end: int | None = None) -> str:
    """Whether figures of a month/day shape are a date ("date"), need a date word before
    them ("fraction": 1/2, 5/5, 4/10), or are no date ("no": a score, a dose, a setting).
    ``value_end``: where the first date of a range ends (the context is the whole range's)."""
    value = text[start : value_end if value_end is not None else end]
    before = _glued_before(text, start, 14)
    after = text[end : end + 14]
    if _NOT_MONTH_DAY_BEFORE.search(before) or _NOT_MONTH_DAY_AFTER.search(after):
        return "no"
    if _VENT_BEFORE.search(_glued_before(text, start, 24)):
        return "no"
    first, second = (int(g) for g in re.findall(r"\d+", value)[:2])
    if first >= second and second <= 15 and _ON_BEFORE_RE.search(before):
        sentence_start = max(text.rfind("\n", 0, start), text.rfind(". ", 0, start), start - 80)
        stops = [i for i in (text.find("\n", end), text.find(". ", end)) if i >= 0]
        sentence_end = min([*stops, end + 60])
        sentence = text[sentence_start + 1 : start] + " " + text[end:sentence_end]
        if _RESP_WORDS_RE.search(sentence) and not _EVENT_BEFORE_RE.search(
            _glued_before(text, start, 30)
        ):
            return "no"
    fraction = _FRACTION_RE.match(value)
    if fraction and int(fraction[1]) <= int(fraction[2]):
        return "fraction"
    return "date"


_LOWER_MONTH_WORD_RE = re.compile(r"(?<![A-Za-z])(?:may|mar|jun|dec|sun)(?![a-z])")
_TIME_WORD_BEFORE_RE = re.compile(
    r"(?:\b(?i:in|since|on|of|until|till|from|by|early|late|mid|d/c'?d)[ \t]+|[(\[\"'])$"
)
_VERB_AFTER_RE = re.compile(r"[ \t]+(?i:from|to|by)\b")
_PHRASE_END_RE = re.compile(r"[ \t]*(?:[.,;:)\]\"']|\n|$)")


def _word_not_month(text: str, match: re.Match[str]) -> bool:
    """ "may 3 times", "mar 2 tabs", "nc 02 dec from 4": lower-case words, not months, unless
    a year is written, a word before places them in time ("in may 15'") or a bracket opens
    them, or the date ends its phrase ("(mar 19)", "15 dec."); "march 21" is a month."""
    value = match.group()
    if re.search(r"(?i:\b(?:dec|may|mar))$", value) and _VERB_AFTER_RE.match(text, match.end()):
        return True  # "NC 02 DEC FROM 4", "hr 80 dec to 60": decreased, in any case
    if not _LOWER_MONTH_WORD_RE.search(value) or re.search(
        rf"{_YEAR}|'\d\d|-\d\d$|^\d+[a-z]+\d+$", value
    ):
        return False
    if _TIME_WORD_BEFORE_RE.search(_glued_before(text, match.start(), 12)):
        return False
    return not _PHRASE_END_RE.match(text, match.end())


def _dates(text: str) -> Iterator[Phi]:
    for pattern in _DATE_RES:
        for match in pattern.finditer(text):
            if _word_not_month(text, match):
                continue
            if re.match(r"[ \t]?%", text[match.end() : match.end() + 2]):
                continue  # ventilator settings: "psv 12/5/40%"
            yield Phi(*match.span(), DATE, "date")
    for match in _MONTH_ALONE_RE.finditer(text):
        yield Phi(*match.span("month"), DATE, "date")
    for match in _RANGE_RE.finditer(text):
        if _month_day(text, match.start(), match.end(), match.end("first")) != "no":
            # each end its own span: "to" between them is no date
            yield Phi(*match.span("first"), DATE, "date-range")
            yield Phi(*match.span("second"), DATE, "date-range")
    for match in _MONTH_DAY_RE.finditer(text):
        verdict = _month_day(text, *match.span())
        if verdict == "no":
            continue
        before = _glued_before(text, match.start(), 14)
        if verdict == "fraction" and not (
            _DATE_CUE_RE.search(before)
            or (_OPENING_RE.search(before) and not _COMMON_FRACTION_RE.match(match.group()))
        ):
            continue
        yield Phi(*match.span(), DATE, "month-day")
    for match in _MONTH_YEAR_RE.finditer(text):
        yield Phi(*match.span(), DATE, "month-day")
    for match in _HYPHEN_MONTH_DAY_RE.finditer(text):
        yield Phi(*match.span("date"), DATE, "month-day")
    for match in _ORDINAL_DAY_RE.finditer(text):
        noun = _ORDINAL_NOUN_RE.match(text, match.end())
        if noun:
            word = noun.group(1).lower()
            if word not in _DATE_FOLLOWERS and (
                lexicon.is_dictionary_word(word) or match.group("cue").lower() != "the"
            ):
                # "the 4th ventricle", "on the 2nd floor"; without "the", any word but one
                # that follows a date: "after 3rd cdiff", "on 2nd cpap trial"
                continue
        yield Phi(*match.span("day"), DATE, "ordinal-day")


# -- ages over 89 ---------------------------------------------------------------------------------

_OLD = r"(?:9\d|1[01]\d)"
_AGE_RES = [
    re.compile(
        rf"(?<![\w.]){_OLD}"
        r"(?=[ \t-]*(?:years?|yrs?|y)[ \t-]*(?:old|o\b|/o)|[ \t]*(?:yo|y\.o\.|y/o)\b)",
        re.IGNORECASE,
    ),
    re.compile(rf"(?<![\w])(?:age[ds]?|aged)\b[ \t:]*(?P<age>{_OLD})(?![\w.])", re.IGNORECASE),
    re.compile(rf"(?<![\w])(?P<age>{_OLD})[ \t]*(?:M|F|male|female|man|woman)\b(?![\w])"),
]


def _ages(text: str) -> Iterator[Phi]:
    for pattern in _AGE_RES:
        for match in pattern.finditer(text):
            group = "age" if "age" in pattern.groupindex else 0
            yield Phi(*match.span(group), AGE, "age")


# -- identifiers --------------------------------------------------------------------------------

ID_LABELS = (
    r"MRN|MR#|MR\s*No\.?|Med(?:ical)?\s*Rec(?:ord)?\.?(?:\s*(?:#|No\.?|Number|Num))?|"
    r"Record\s*(?:#|No\.?|Number)|Unit\s*(?:#|No\.?|Number)|Hosp(?:ital)?\s*(?:#|No\.?|Number)|"
    r"Acc(?:ession)?\.?(?:\s*(?:#|No\.?|Number|ID))?|Acct\.?(?:\s*(?:#|No\.?))?|"
    r"Account(?:\s*(?:#|No\.?|Number))?|Specimen\s*(?:#|No\.?|Number|ID)|Case\s*(?:#|No\.?|Number|ID)|"
    r"Case|Lab\s*(?:#|No\.?|Number|ID)|Order\s*(?:#|No\.?|Number|ID)|Requisition(?:\s*(?:#|No\.?|Number|ID))?|"
    r"Encounter\s*(?:#|No\.?|Number|ID)|Visit\s*(?:#|No\.?|Number|ID)|FIN|CSN|HAR|EMPI|"
    r"Patient\s*(?:#|ID|No\.?|Number)|Pt\.?\s*(?:#|ID)|PID|Member\s*(?:ID|#|No\.?|Number)|"
    r"Subscriber\s*(?:ID|#|No\.?)|(?:Insurance|Policy|Plan|Group|Claim|Certificate)\s*(?:ID|#|No\.?|Number)|"
    r"(?:Prior\s+)?Auth(?:ori[sz]ation)?\s*(?:#|No\.?|Number|Code)?|Ref(?:erence)?\s*(?:#|No\.?|Number)|"
    r"SSN|SS#|Social\s*Security(?:\s*(?:#|No\.?|Number))?|Medicare(?:\s*(?:#|ID|No\.?|Number))?|"
    r"Medicaid(?:\s*(?:#|ID|No\.?|Number))?|MBI|NPI|DEA(?:\s*#)?|UPIN|License\s*(?:#|No\.?|Number)|"
    r"Driver'?s?\s*License(?:\s*(?:#|No\.?|Number))?|Passport(?:\s*(?:#|No\.?|Number))?|"
    r"Device\s*(?:ID|#|Serial(?:\s*(?:#|No\.?|Number))?)|Serial\s*(?:#|No\.?|Number)|"
    r"Health\s*(?:Card|Plan)\s*(?:#|No\.?|Number)|NHS\s*(?:#|No\.?|Number)?|Block|Slide|Tube|"
    r"Barcode|Container|Sample\s*(?:ID|#|No\.?)|Specimen|Report\s*(?:ID|#|No\.?)|Study\s*(?:ID|#)|"
    r"Exam\s*(?:ID|#)|Control\s*(?:#|No\.?)|Confirmation\s*(?:#|No\.?|Number)|Ticket\s*(?:#|No\.?)"
)
# Letters and digits joined by - / . : or one space before a digit ("123 456 789"): the
# whole number, never its first group only.
_ID_VALUE = r"(?=[A-Z0-9-]*\d)[A-Z0-9](?:[A-Z0-9]|[-/.:](?=[A-Z0-9])| (?=\d{2,}\b)){2,30}"
_LABELLED_ID_RE = re.compile(
    rf"(?<![\w])(?:{ID_LABELS})[ \t]*(?:[:#=]|\bis\b)?[ \t]*(?:#[ \t]*)?"
    rf"(?P<id>{_ID_VALUE})(?![\w])",
    re.IGNORECASE,
)
_SSN_RE = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")
# Shapes that are identifiers wherever they are: letters and digits joined by hyphens
# (S24-118734, GX-2025-004417, PA-77120-B), and long digit runs (00618254).
_ID_SHAPE_RES = [
    # (Four digits at least after the hyphen: "AF-130", "ABG-119" are a rate and a result.)
    re.compile(r"(?<![\w-])[A-Z]{1,5}\d{0,4}(?:-[A-Z0-9]+)*-\d{4,}[A-Z0-9-]*(?![\w-])"),
    re.compile(r"(?<![\w-])[A-Z]{1,4}\d{6,}[A-Z]?(?![\w-])"),
    re.compile(r"(?<![^\W_]|[.,/-])\d{7,}(?![^\W_]|[,/-]|[.,]\d)"),
    # NHI-like: three or four capitals and four or five digits (ABC1234).
    re.compile(r"(?<![\w-])[A-Z]{3,4}\d{4,5}[A-Z]?(?![\w-])"),
]
# Any other run of letters and digits joined by - / : . with at least six digits, one group
# of four or more, and no date's shape: SP:21:004471, 2021/00457, H21-4471/3.
_ID_JOINED_RE = re.compile(
    r"(?<![^\W_]|[-/:.])[A-Z0-9]+(?:[-/:.][A-Z0-9]+)+(?![^\W_]|[-/:]|\.[A-Z0-9])", re.IGNORECASE
)
_DATE_SHAPE_RE = re.compile(r"^\d{1,4}([-/.])\d{1,2}\1\d{1,4}$")


def _joined_id(value: str) -> bool:
    groups = re.split(r"[-/:.]", value)
    digits = sum(c.isdigit() for c in value)
    return (
        digits >= 6
        and any(len(g) >= 4 and g.isdigit() for g in groups)
        and not _DATE_SHAPE_RE.match(value)
        and not re.fullmatch(r"\d+\.\d+", value)  # a measurement
        # Volumes and doses joined ("400cc-1500", "1000-1500cc", "10mg/2mg"): measurements.
        and not any(
            re.fullmatch(r"\d+(?i:cc|ml|mls|l|mg|mcg|g|kg|u|units|hrs?|min)", g) for g in groups
        )
        # Numbers of up to four digits joined: a range, a ratio, a time span, lab values or
        # ventilator settings ("1900-0700", "40/1000/15", "2245-105-4.7"), not a record number.
        and not (
            all(g.isdigit() and len(g) <= 4 for g in groups)
            and not (len(groups) >= 3 and all(len(g) == 4 for g in groups))  # 4-4-4 card-like
        )
    )


def _ids(text: str) -> Iterator[Phi]:
    for match in _LABELLED_ID_RE.finditer(text):
        yield Phi(*match.span("id"), ID, "id-label")
    for match in _SSN_RE.finditer(text):
        yield Phi(*match.span(), ID, "ssn")
    for pattern in _ID_SHAPE_RES:
        for match in pattern.finditer(text):
            yield Phi(*match.span(), ID, "id-shape")
    for match in _ID_JOINED_RE.finditer(text):
        value = match.group()
        while re.search(r"[-/:.][A-Za-z]+$", value):
            value = re.sub(r"[-/:.][A-Za-z]+$", "", value)  # "20210314.pdf": not the extension
        if _joined_id(value):
            yield Phi(match.start(), match.start() + len(value), ID, "id-shape")


# -- phone numbers ------------------------------------------------------------------------------

_PHONE_RES = [
    re.compile(
        r"(?<![\w+])(?:\+?1[ \t.-]?)?(?:\(\d{3}\)[ \t]?|\d{3}[ \t.-])\d{3}[ \t.-]\d{4}(?!\d)"
    ),
    re.compile(r"(?<![\w+])\+\d{1,3}[ \t.-]\(?\d{1,4}\)?(?:[ \t.-]?\d{2,4}){2,4}(?!\d)"),
    # A national number with its trunk 0, in two or three groups: 0161 496 0958, 09 555 0142.
    re.compile(r"(?<![\w+/.])\(?0\d{1,4}\)?[ \t-]\d{3,4}(?:[ \t-]\d{3,4})?(?![\w/]|\.\d)"),
    # Written loosely: "212- 476- 8356", "201/324/1423", "(201-223-4567", "202 2671093".
    re.compile(
        r"(?<![\w+/.])\(?\d{3}\)?[ \t]?[-./]?[ \t]?\d{3}[ \t]?[-./]?[ \t]?\d{4}(?![\w/]|\.\d)"
    ),
]
_EXTENSION_RE = re.compile(r"(?<![\w])(?:ext\.?|extension)[ \t]*(?P<ext>\d{2,6})(?!\d)", re.I)
_X_EXTENSION_RE = re.compile(r"[ \t]*x[ \t]*(?P<ext>\d{2,6})(?!\d)", re.I)
_PHONE_LABEL_RE = re.compile(
    r"(?<![\w])(?:phone|ph|tel|telephone|fax|pager|pgr|beeper|cell|mobile|call|contact|"
    r"beep|page|pg)\b\.?[ \t]*(?:#|no\.?|number)?[ \t]*[:#]?[ \t]*#?[ \t]*"
    r"(?P<phone>\(?\d[\d \t().-]{3,16}\d)(?![\w.])",
    re.IGNORECASE,
)


_CLOCK_RE = re.compile(r"(?:[01]?\d|2[0-4])(?:[0-5]\d)?")


def _clock_times(value: str) -> bool:
    """Two clock times joined: a shift or an interval ("0700-1930", "07-1530", "0330 0630",
    "@ 0430 150"), not a national number (which has three groups, or a longer second one)."""
    groups = re.findall(r"\d+", value)
    return len(groups) == 2 and all(len(g) <= 4 and _CLOCK_RE.fullmatch(g) for g in groups)


def _phones(text: str) -> Iterator[Phi]:
    for pattern in _PHONE_RES:
        for match in pattern.finditer(text):
            if pattern is _PHONE_RES[2] and _clock_times(match.group()):
                continue
            yield Phi(*match.span(), PHONE, "phone")
            extension = _X_EXTENSION_RE.match(text, match.end())
            if extension:
                yield Phi(*extension.span("ext"), PHONE, "extension")
    for match in _EXTENSION_RE.finditer(text):
        yield Phi(*match.span("ext"), PHONE, "extension")
    for match in _PHONE_LABEL_RE.finditer(text):
        value = match.group("phone")
        if sum(c.isdigit() for c in value) >= 4:
            yield Phi(*match.span("phone"), PHONE, "phone-label")


# -- addresses ----------------------------------------------------------------------------------

STREET_TYPES = (
    r"Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Way|"
    r"Terrace|Ter|Parkway|Pkwy|Circle|Cir|Highway|Hwy|Square|Sq|Trail|Trl|Pike|Alley|Row|"
    r"Crescent|Close|Path|Loop|Plaza|Point|Pt|Run|Walk|Heights|Hts"
)
STATES = (
    r"AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|"
    r"NH|NJ|NM|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|PR|"
    r"Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|"
    r"Georgia|Hawaii|Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|"
    r"Massachusetts|Michigan|Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|"
    r"New\s+Hampshire|New\s+Jersey|New\s+Mexico|New\s+York|North\s+Carolina|North\s+Dakota|"
    r"Ohio|Oklahoma|Oregon|Pennsylvania|Rhode\s+Island|South\s+Carolina|South\s+Dakota|"
    r"Tennessee|Texas|Utah|Vermont|Virginia|Washington|West\s+Virginia|Wisconsin|Wyoming"
)
_STREET_RE = re.compile(
    rf"(?<![\w])\d{{1,6}}[A-Z]?(?:[ \t]+(?:[NSEW]\.?|North|South|East|West))?"
    rf"(?:[ \t]+{WORD}){{1,4}}[ \t]+(?:{STREET_TYPES})\.?(?![\w])"
)
# In lower case ("lives alone in 98 harbour avenue", "NOK: ... (son), 58 kowhai lane"): a
# number, one or two words that are no clinical or function word, and a street type in full.
_STREET_LOWER_RE = re.compile(
    r"(?<![\w/.-])\d{1,5}[ \t]+(?P<words>[a-z][a-z'-]+(?:[ \t]+[a-z][a-z'-]+)?)[ \t]+"
    r"(?:street|avenue|road|lane|drive|court|place|crescent|close|terrace|boulevard|parkway)"
    r"(?![\w])"
)
_UNIT_RE = re.compile(
    r"(?<![\w])(?:Apt|Apartment|Suite|Ste|Unit|Room|Rm|Floor|Fl|Bldg|Building|#)\.?[ \t]*"
    r"#?[ \t]*[A-Z0-9]{1,6}(?![\w])"
)
_UNIT_BEFORE_RE = re.compile(
    r"(?<![\w])(?:Flat|Apt|Apartment|Unit|Suite|Ste)\.?[ \t]*[A-Z0-9]{1,5},?[ \t]*$", re.IGNORECASE
)
_PO_BOX_RE = re.compile(r"(?<![\w])P\.?[ \t]*O\.?[ \t]*Box[ \t]+\d+(?![\w])", re.IGNORECASE)
_CITY_STATE_ZIP_RE = re.compile(
    rf"(?P<city>{WORD}(?:[ \t]+{WORD}){{0,2}}),[ \t]*(?:{STATES})\.?,?[ \t]+"
    rf"(?P<zip>\d{{5}}(?:-\d{{4}})?)(?![\w-])"
)
_CITY_STATE_RE = re.compile(
    rf"(?<=,)[ \t]*(?P<city>{WORD}(?:[ \t]+{WORD}){{0,2}}),[ \t]*(?:{STATES})(?![\w])"
)
_ZIP_AFTER_STATE_RE = re.compile(
    rf"(?<![\w])(?:{STATES})\.?,?[ \t]+(?P<zip>\d{{5}}(?:-\d{{4}})?)(?![\w-])"
)


# By context: whatever follows an address label, to the end of its field.
_ADDRESS_LABEL_RE = re.compile(
    r"(?<![\w])(?i:(?:home\s+|postal\s+|mailing\s+|street\s+)?address|addr|adresse|"
    r"lives\s+at|living\s+at|resides\s+at|residing\s+at|residence)\b[ \t]*[:\-]?[ \t]*"
    r"(?P<address>[^\n:]*?\d[^\n:]*?|[A-Z][^\n:]*?)(?=[ \t]{2,}|\t|\n|$| with\b| and\b|\.(?:\s|$))"
)
# By shape, whatever the country: a number, a street word of the languages that write it
# before the street's name, and that name with a capital ("12 rue des Lilas", "4 calle
# Mayor"), then the town and postcode that follow after commas ("12 rue des Lilas, 75011
# Paris"). English street words come after the name (the rule below): "3L via NC", "3 way
# foley", "60 via r rad aline" are nursing notes, not addresses.
_STREET_ANY_RE = re.compile(
    r"(?<![\w/.-])\d{1,5}[a-zA-Z]?,?[ \t]+(?:rue|avenue|av\.|boulevard|bd|chemin|all[ée]e|"
    r"impasse|place|quai|calle|avenida|Rue|Avenue|Av\.|Boulevard|Bd|Chemin|All[ée]e|Impasse|"
    r"Place|Quai|Calle|Avenida)(?:[ \t]+[a-zà-ÿ']{1,4}){0,2}[ \t]+[A-ZÀ-Þ][a-zà-ÿ][^\n,;]*"
)
_ADDRESS_TAIL_RE = re.compile(
    r"(?:,[ \t]*(?:[A-Z][\w'-]+(?:[ \t][A-Z][\w'-]+){0,2}|\d{4,5}(?:[ \t][A-Z][\w'-]+)?|"
    r"[A-Z]{1,2}\d[A-Z\d]?[ \t]?\d[A-Z]{2})){1,3}(?:[ \t]+\d{4,5}\b)?"
)
# A UK postcode (LS6 2AB, SW1A 1AA), a Canadian one (K1A 0B1).
_POSTCODE_RES = [
    re.compile(r"(?<![\w])[A-Z]{1,2}\d[A-Z\d]?[ \t]?\d[A-Z]{2}(?![\w])"),
    re.compile(r"(?<![\w])[A-Z]\d[A-Z][ \t]?\d[A-Z]\d(?![\w])"),
]
# "Springfield IL": a town before a state's abbreviation. Not MD, PA, DE, OR, IN, ME, OK,
# HI, CO: after a name they are a credential or a word ("Tobias Vandermeer, MD").
_CITY_ABBR_RE = re.compile(
    r"(?<![\w])(?P<city>[A-Z][a-z]+(?:[ \t][A-Z][a-z]+)?)[ \t]+"
    r"(?:AL|AK|AZ|AR|CA|CT|FL|GA|IA|IL|KS|KY|LA|MA|MI|MN|MO|MS|MT|NC|ND|NE|NH|"
    r"NJ|NM|NV|NY|OH|RI|SC|SD|TN|TX|UT|VA|VT|WA|WI|WV|WY)(?![\w])"
)


def _addresses(text: str) -> Iterator[Phi]:
    for match in _ADDRESS_LABEL_RE.finditer(text):
        value = match.group("address").rstrip(" ,;")
        if value and not lexicon.is_not_a_name(value.split()[0]):
            start = match.start("address")
            yield Phi(start, start + len(value), ADDRESS, "address-label")
    for match in _STREET_ANY_RE.finditer(text):
        end = match.end()
        tail = _ADDRESS_TAIL_RE.match(text, end)
        if tail:
            end = tail.end()
        value = text[match.start() : end].rstrip(" ,;")
        yield Phi(match.start(), match.start() + len(value), ADDRESS, "street")
    for pattern in _POSTCODE_RES:
        for match in pattern.finditer(text):
            if any(c.isdigit() for c in match.group()[-3:]):
                yield Phi(*match.span(), ADDRESS, "postcode")
    for match in _CITY_ABBR_RE.finditer(text):
        words = match.group("city").split()
        if not any(lexicon.is_not_a_name(w) or lexicon.is_institution_word(w) for w in words):
            yield Phi(*match.span("city"), ADDRESS, "city")
    for match in _STREET_LOWER_RE.finditer(text):
        if not any(lexicon.is_not_a_name(w) for w in match.group("words").split()):
            yield Phi(*match.span(), ADDRESS, "street")
    for match in _STREET_RE.finditer(text):
        yield Phi(*match.span(), ADDRESS, "street")
        tail = _ADDRESS_TAIL_RE.match(text, match.end())
        if tail:  # the town and postcode after it; the comma stays
            begin = tail.start() + len(tail.group()) - len(tail.group().lstrip(", \t"))
            yield Phi(begin, tail.end(), ADDRESS, "street")
        unit = _UNIT_BEFORE_RE.search(text[max(0, match.start() - 20) : match.start()])
        if unit:
            yield Phi(match.start() - len(unit.group()), match.start(), ADDRESS, "unit")
        tail = _UNIT_RE.match(
            text, match.end() + len(text[match.end() :]) - len(text[match.end() :].lstrip(" ,\t"))
        )
        if tail:
            yield Phi(*tail.span(), ADDRESS, "unit")
    for match in _UNIT_RE.finditer(text):
        if match.group().startswith("#"):
            continue  # "#" alone is too common ("# 2 cores"); after a street it is taken above
        before = text[max(0, match.start() - 40) : match.start()]
        if re.search(rf"(?:{STREET_TYPES})\.?,?[ \t]*$", before):
            yield Phi(*match.span(), ADDRESS, "unit")
    for match in _PO_BOX_RE.finditer(text):
        yield Phi(*match.span(), ADDRESS, "po-box")
    for match in _CITY_STATE_ZIP_RE.finditer(text):
        city = match.group("city")
        if not lexicon.is_institution_word(city.split()[-1]):
            yield Phi(*match.span("city"), ADDRESS, "city")
        yield Phi(*match.span("zip"), ADDRESS, "zip")
    for match in _CITY_STATE_RE.finditer(text):
        city = match.group("city")
        if not any(lexicon.is_not_a_name(w) for w in city.split()):
            yield Phi(*match.span("city"), ADDRESS, "city")
    for match in _ZIP_AFTER_STATE_RE.finditer(text):
        yield Phi(*match.span("zip"), ADDRESS, "zip")


# -- e-mail and web addresses ---------------------------------------------------------------------

_EMAIL_RE = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_URL_RES = [
    re.compile(r"(?<![\w])(?:https?|ftp)://[^\s<>\"')\]]+", re.IGNORECASE),
    re.compile(r"(?<![\w.@])www\.[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?:/[^\s<>\"')\]]*)?", re.I),
    re.compile(
        r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\w.])"
    ),
]


def _emails_and_urls(text: str) -> Iterator[Phi]:
    for match in _EMAIL_RE.finditer(text):
        yield Phi(*match.span(), EMAIL, "email")
    for pattern in _URL_RES:
        for match in pattern.finditer(text):
            yield Phi(
                match.start(),
                match.end() - len(match.group()) + len(match.group().rstrip(".,;:")),
                URL,
                "url",
            )


RECOGNISERS: tuple[Callable[[str], Iterator[Phi]], ...] = (
    _names,
    _foreign_names,
    _dates,
    _ages,
    _ids,
    _phones,
    _addresses,
    _emails_and_urls,
)


def find(text: str) -> list[Phi]:
    """Every span the recognisers find in one text (overlapping, unresolved)."""
    return [span for recogniser in RECOGNISERS for span in recogniser(text)]


def this_year() -> int:
    return date.today().year
