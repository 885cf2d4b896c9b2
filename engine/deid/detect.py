"""PHI in a whole document: each text's recogniser spans, then what only the whole document
tells. A name written once in a labelled field ("Patient: QUILLEN, Marisol") is a name
wherever else it appears ("Hello Marisol"), and an identifier found once beside its label
is an identifier wherever it is quoted again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from engine.deid import lexicon, recognisers
from engine.deid.spans import ADDRESS, ID, NAME, Phi, resolve

# Words shorter than this, or common words, are matched again only with a capital (the
# name "Per" is not the word "per"); longer uncommon words in any case ("QUILLEN", "Quillen").
CASELESS_MIN = 4
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


def detect(texts: Sequence[str], *, vocabulary: Vocabulary | None = None) -> list[list[Phi]]:
    """Resolved PHI spans of each text of one document (its pages, or any texts about one
    patient). ``vocabulary`` collects the document's PHI values (pass one to reuse them for
    other texts about the same document, e.g. a model's answer or an export's fields)."""
    vocabulary = vocabulary if vocabulary is not None else Vocabulary()
    found = [recognisers.find(text) for text in texts]
    for text, spans in zip(texts, found, strict=True):
        vocabulary.learn(text, resolve(spans))
    return [
        resolve([*spans, *vocabulary.find(text)]) for text, spans in zip(texts, found, strict=True)
    ]
