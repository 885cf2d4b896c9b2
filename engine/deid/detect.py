"""PHI in a whole document: each text's recogniser spans, then what only the whole document
tells. A name written once in a labelled field ("Patient: QUILLEN, Marisol") is a name
wherever else it appears ("Hello Marisol"), and an identifier found once beside its label
is an identifier wherever it is quoted again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from engine.deid import lexicon, recognisers, statistical
from engine.deid.spans import ADDRESS, DATE, EMAIL, ID, NAME, PHONE, Phi, resolve

# Words shorter than this, or common words, are matched again only with a capital (the
# name "Per" is not the word "per"); longer uncommon words in any case ("QUILLEN", "Quillen").
CASELESS_MIN = 3
PROPAGATED = (NAME, ID, ADDRESS)


@dataclass
class Vocabulary:
    """The document's PHI values found by the recognisers: text -> type. Values met again
    anywhere in the document (or in another text about it) are PHI of the same type."""

    terms: dict[str, str] = field(default_factory=dict)

    def learn(self, text: str, spans: Iterable[Phi]) -> None:
        for span in spans:
            if span.type not in PROPAGATED:
                continue
            value = span.text(text).strip()
            if span.type == ADDRESS and (
                not value[:1].isupper() or any(c.isdigit() for c in value)
            ):
                continue  # city names only: streets and ZIP codes are not quoted apart
            if span.type == NAME and (len(value) < 2 or lexicon.is_not_a_name(value)):
                continue
            if span.type == ID and len(value) < 4:
                continue
            self.terms.setdefault(value, span.type)

    def update(self, other: Vocabulary) -> None:
        for value, kind in other.terms.items():
            self.terms.setdefault(value, kind)

    def find(self, text: str) -> list[Phi]:
        if not self.terms:
            return []
        return [
            Phi(m.start(), m.end(), self._type_of(m.group()), "document")
            for m in self._pattern().finditer(text)
            if self._type_of(m.group())
        ]

    def _type_of(self, found: str) -> str:
        if found in self.terms:
            return self.terms[found]
        return self._caseless().get(found.casefold(), "")

    def _caseless(self) -> dict[str, str]:
        return {
            value.casefold(): kind
            for value, kind in self.terms.items()
            if (kind == NAME and len(value) >= CASELESS_MIN and not lexicon.is_common_word(value))
            or kind == ID
        }

    def _pattern(self) -> re.Pattern[str]:
        caseless = self._caseless()
        parts = []
        for value in sorted(self.terms, key=len, reverse=True):
            escaped = re.escape(value)
            if value.casefold() in caseless:
                parts.append(f"(?i:{escaped})")
            else:
                # Exact, or as a capitalised word: "Per" and "PER", never "per".
                variants = {value, value.upper(), value[:1].upper() + value[1:].lower()}
                parts.extend(re.escape(v) for v in sorted(variants))
        # Letters and digits on neither side: "Alex" in "Alex's" but not in "Alexander"; a
        # name in a file name ("note_demo.pdf") counts, so "_" is a separator here.
        return re.compile(r"(?<![^\W_])(?:" + "|".join(parts) + r")(?![^\W_])")


_INITIAL_BEFORE_RE = re.compile(r"(?<![\w.'/-])[^\W\d_]\.?[ \t]+$")
_NEXT_RE = re.compile(r"(?:,)?[ \t]([^\W\d_][^\W\d_'\u2019-]*)")
_PREV_RE = re.compile(r"([^\W\d_][^\W\d_'\u2019-]*),?[ \t]$")


def _name_like(word: str, like: str) -> bool:
    """Is ``word``, beside the name ``like``, part of the same name? Written the same way
    (capitalised beside a capitalised name, lower case beside a lower-case one), no common,
    clinical or institution word, and a first name or a surname in the Census lists."""
    if len(word) < 2 or lexicon.is_not_a_name(word) or lexicon.is_institution_word(word):
        return False
    if like.isupper() != word.isupper() or like.islower() != word.islower():
        return False
    if not (word[:1].isupper() or word.islower()):
        return False
    return lexicon.is_first_name(word) or lexicon.is_surname(word)


def widen(text: str, spans: list[Phi]) -> list[Phi]:
    """A name's neighbouring name word is a name too: "Marisol QUILLEN" when only the
    surname was found, "Jon Devaux" when only Jon was (a first name kept beside a replaced
    surname tells who it was)."""
    names = [s for s in spans if s.type == NAME]
    if not names:
        return spans
    taken = {(s.start, s.end) for s in spans}
    covered = [False] * (len(text) + 1)
    for s in spans:
        for i in range(s.start, s.end):
            covered[i] = True
    added: list[Phi] = []
    for span in names:
        like = span.text(text)
        after = _NEXT_RE.match(text, span.end)
        if after and not covered[after.start(1)] and _name_like(after.group(1), like):
            added.append(Phi(after.start(1), after.end(1), NAME, "beside-name"))
        before = _PREV_RE.search(text[max(0, span.start - 40) : span.start])
        if before:
            start = span.start - len(before.group())
            if not covered[start] and _name_like(before.group(1), like):
                added.append(Phi(start, start + len(before.group(1)), NAME, "beside-name"))
        initial = _INITIAL_BEFORE_RE.search(text[max(0, span.start - 6) : span.start])
        if initial and not covered[span.start - len(initial.group())]:
            # "B. KARGAS", "barbara j. parrilli", "J SMITH": the initial tells who it was.
            start = span.start - len(initial.group())
            added.append(Phi(start, start + 1, NAME, "beside-name"))
    fresh = [a for a in added if (a.start, a.end) not in taken]
    return resolve([*spans, *fresh]) if fresh else spans


def detect(texts: Sequence[str], *, vocabulary: Vocabulary | None = None) -> list[list[Phi]]:
    """Resolved PHI spans of each text of one document (its pages, or any texts about one
    patient). ``vocabulary`` collects the document's PHI values (pass one to reuse them for
    other texts about the same document, e.g. a model's answer or an export's fields).

    The rules' spans teach the vocabulary; the statistical recogniser's (which reads the
    rules' as features) are added to each text but teach nothing: a guess repeated over a
    whole document ("pt claims", "AF-130") cost more precision than it gained recall."""
    vocabulary = vocabulary if vocabulary is not None else Vocabulary()
    rules = [resolve(recognisers.find(text)) for text in texts]
    for text, spans in zip(texts, rules, strict=True):
        vocabulary.learn(text, spans)
    return [
        widen(
            text,
            resolve(
                [
                    *spans,
                    *_beside(text, statistical.find(text, spans), spans),
                    *vocabulary.find(text),
                ]
            ),
        )
        for text, spans in zip(texts, rules, strict=True)
    ]


def _beside(text: str, guesses: list[Phi], rules: list[Phi]) -> list[Phi]:
    """The CRF's spans where no rule span is: where a rule fired, its span and type stand
    (the CRF once typed "93-year" an e-mail beside the rule's age); and only guesses that
    can be of their type."""
    return [
        g
        for g in guesses
        if not any(r.start < g.end and g.start < r.end for r in rules)
        and _possible(g, g.text(text))
    ]


def _possible(guess: Phi, value: str) -> bool:
    """Whether a CRF guess can be PHI of its type, whatever the model learnt: a name is no
    common or clinical word ("min", "line" in nursing notes) nor a dictionary word that is no
    first name ("large", "clear"); a number of up to four digits
    alone or numbers joined are no identifier ("BP 100/60", "1900-0700"), a phone number has
    seven digits, a date in figures has a month and a day ("20" of "PEEP 20" and "120/60" are
    not); an e-mail address has an "@"."""
    if guess.type == NAME:
        # A word of the dictionary ("large", "walker", "pearl" for PERRL) is a name here only
        # when it is also a listed first name: the default model, trained on generated
        # notes, reads any word it has not seen in nursing prose as a name.
        return not lexicon.is_not_a_name(value) and (
            not lexicon.is_dictionary_word(value) or lexicon.is_first_name(value)
        )
    groups = [int(g) for g in re.findall(r"\d+", value)]
    letters = any(c.isalpha() for c in value)
    if guess.type == ID:
        # A long number, or one word of letters and digits with a run of four ("ZAC4471",
        # "DEMO-0001"); never values joined ("120/60", "1900-0700"), nor a vital sign and its
        # range ("HR 44-60", "SpO2 89-100", "ABP 83-131/37-57", "HR99-99").
        runs = re.findall(r"\d+", value)
        return any(len(g) >= 5 for g in runs) or (
            letters and not re.search(r"\s", value) and any(len(g) >= 4 for g in runs)
        )
    if guess.type == PHONE:
        # Seven digits in groups of three or more ("555-0142"); "fio2 sao2 97-98" has none.
        return sum(len(g) for g in re.findall(r"\d+", value) if len(g) >= 3) >= 7
    if guess.type == DATE:
        if re.match(r"(?:may|mar|jun|dec|sun)(?![a-z])", value) and not re.search(
            r"(?:1[89]|20)\d\d", value
        ):
            return False  # "may 3 times", "mar 2 tabs": words, as the date rule reads them
        return letters or _date_like(value, groups)
    if guess.type == EMAIL:
        return "@" in value
    return True


def _date_like(value: str, groups: list[int]) -> bool:
    """Numbers that can be a date: 8 digits (20210314), or a month and a day in either
    order, then perhaps a year."""
    if len(groups) == 1:
        return len(value) in (6, 8) and value.isdigit()
    if len(groups) not in (2, 3):
        return False
    a, b = groups[0], groups[1]
    day_month = (1 <= a <= 12 and 1 <= b <= 31) or (1 <= a <= 31 and 1 <= b <= 12)
    year = len(groups) == 2 or groups[2] <= 99 or 1900 <= groups[2] <= 2100
    return day_month and year
