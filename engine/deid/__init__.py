"""De-identification: find PHI in clinical text and put consistent surrogates in its place,
offline, from what pip installs (no model, nothing downloaded at run time).

- ``recognisers``: Vetted's own recognisers (regular expressions over clinical paperwork's
  shapes, and the US Census first names that the ``names`` package ships);
- ``detect``: a whole document's PHI (a name written once beside a label is a name wherever
  it appears again);
- ``surrogates``: a stand-in of the same shape for each value, drawn from a keyed hash;
- ``DocumentScrub``: one document's texts de-identified consistently, and for a model's
  answer the way back (``restore``: surrogates to the original words, so evidence quoted
  from a de-identified page is found on the original page);
- ``metrics``: token-level recall and precision (manage.py bench_deid).

Why not Presidio: its pattern recognisers, measured on the same data, added no recall on
names, dates, identifiers or addresses and cost precision (docs/deidentification.md); its
default NER needs a spaCy model that the package index does not carry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata

from engine.deid import lexicon, statistical
from engine.deid.detect import Vocabulary, detect
from engine.deid.spans import NAME, TYPES, Phi, resolve
from engine.deid.surrogates import Surrogates

# Bump when the recognisers or the surrogates change what an export or a prompt holds:
# exports record it, and a new version means new prompts (and response-cache misses).
VERSION = "5"  # as docs/deidentification.md numbers the versions
METHOD = "vetted-deid"

__all__ = [
    "METHOD",
    "TYPES",
    "VERSION",
    "DocumentScrub",
    "Phi",
    "Pseudonyms",
    "Surrogates",
    "Vocabulary",
    "describe",
    "detect",
]


@cache
def describe() -> str:
    """The method and its version, as exports record it."""
    try:
        names = metadata.version("names")
    except metadata.PackageNotFoundError:  # pragma: no cover - a dependency
        names = "?"
    return (
        f"{METHOD} {VERSION}: Vetted's rule-based recognisers, US Census 1990 names "
        f"(names {names}) and a CRF ({statistical.describe()}); consistent keyed surrogates"
    )


class Pseudonyms:
    """The surrogates of one scope. The same value (its type and text, names without regard
    to case) always gets the same surrogate. With ``injective`` (a prompt whose answer must be
    mapped back) no two values share a surrogate, and no surrogate is a word already present
    in ``avoid``, so every surrogate in the answer is known to stand for one original."""

    def __init__(self, surrogates: Surrogates, *, injective: bool = False, avoid: str = "") -> None:
        self.surrogates = surrogates
        self.injective = injective
        self.avoid = avoid.casefold()
        self._avoid_words = set(re.findall(r"[^\W_]+", self.avoid))
        self.given: dict[tuple[str, str], str] = {}  # (type, key) -> surrogate
        self.back: dict[str, str] = {}  # surrogate as written -> original as written
        self._taken: dict[str, tuple[str, str]] = {}  # casefolded surrogate -> (type, key)

    @staticmethod
    def _key(kind: str, value: str) -> str:
        return value.casefold() if kind == NAME else value

    def surrogate(self, kind: str, value: str) -> str:
        key = (kind, self._key(kind, value))
        chosen = self.given.get(key)
        if chosen is None:
            chosen = self._choose(kind, value, key)
            self.given[key] = chosen
        if kind == NAME:  # the same word in the original's case: QUILLEN, Quillen
            chosen = _case_like(chosen, value)
        if self.injective:
            self.back[chosen] = value
        return chosen

    def _choose(self, kind: str, value: str, key: tuple[str, str]) -> str:
        for salt in range(256):
            candidate = self.surrogates.of(kind, value, salt)
            if not self.injective:
                return candidate
            folded = candidate.casefold()
            owner = self._taken.get(folded)
            if (owner is None or owner == key) and not self._present(folded):
                self._taken[folded] = key
                return candidate
        raise RuntimeError(f"no free surrogate for a {kind} value")  # pragma: no cover

    def _present(self, folded: str) -> bool:
        if re.fullmatch(r"[^\W_]+", folded):
            return folded in self._avoid_words
        return folded in self.avoid

    def restore(self, text: str) -> str:
        """Every surrogate this scope gave, in ``text``, back to its original."""
        if not self.back or not text:
            return text
        pattern = re.compile(
            r"(?<![^\W_])(?:"
            + "|".join(re.escape(s) for s in sorted(self.back, key=len, reverse=True))
            + r")(?![^\W_])"
        )
        return pattern.sub(lambda m: self.back[m.group()], text)


def _case_like(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    if like.islower():
        return word.lower()
    if like[:1].isupper():
        return word[:1].upper() + word[1:].lower()
    return word


@dataclass
class DocumentScrub:
    """One document's texts de-identified together: its pages teach the document's PHI
    values (``vocabulary``), and every text about the document (a page, a quoted snippet,
    a field value, a reviewer's note, a prompt) is scrubbed with them."""

    pseudonyms: Pseudonyms
    vocabulary: Vocabulary = field(default_factory=Vocabulary)

    @classmethod
    def of(cls, pages: Sequence[str], pseudonyms: Pseudonyms) -> DocumentScrub:
        scrub = cls(pseudonyms)
        detect(list(pages), vocabulary=scrub.vocabulary)
        return scrub

    def spans(self, text: str, *, keep: Iterable[tuple[int, int]] = ()) -> list[Phi]:
        """The PHI spans of ``text``, less those that touch a ``keep`` range."""
        vocabulary = Vocabulary(dict(self.vocabulary.terms))  # the text teaches this call only
        found = detect([text], vocabulary=vocabulary)[0]
        kept = list(keep)
        return [s for s in found if not any(s.start < b and a < s.end for a, b in kept)]

    def scrub(self, text: str, *, keep: Iterable[tuple[int, int]] = ()) -> str:
        if not text:
            return text
        out, at = [], 0
        for span in resolve(self.spans(text, keep=keep)):
            out.append(text[at : span.start])
            out.append(self.pseudonyms.surrogate(span.type, span.text(text)))
            at = span.end
        out.append(text[at:])
        return "".join(out)

    def restore(self, text: str) -> str:
        return self.pseudonyms.restore(text)

    def filename(self, name: str) -> str:
        """A file name de-identified: what ``scrub`` finds, and any word of its stem that is a
        Census first name or surname ("quillen_marisol_path.pdf"); the extension stays."""
        if not name:
            return name
        dot = name.rfind(".")
        stem_end = dot if dot > 0 and len(name) - dot <= 6 else len(name)
        found = self.spans(name, keep=[(stem_end, len(name))])
        covered = {i for s in found for i in range(s.start, s.end)}
        for match in re.finditer(r"[^\W\d_]+", name[:stem_end]):
            word = match.group()
            if (
                match.start() not in covered
                and len(word) >= 3
                and not lexicon.is_not_a_name(word)
                and (lexicon.is_first_name(word) or lexicon.is_surname(word))
            ):
                found.append(Phi(match.start(), match.end(), NAME, "filename"))
        out, at = [], 0
        for span in resolve(found):
            out.append(name[at : span.start])
            out.append(self.pseudonyms.surrogate(span.type, span.text(name)))
            at = span.end
        out.append(name[at:])
        return "".join(out)
