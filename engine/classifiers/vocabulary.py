"""The offline classifier's vocabulary (rules/offline_vocabulary.json) and what it says about a
line: whether the line is a list of keywords, whose words are not evidence of a type.

Keyword stuffing writes lines dense with one type's vocabulary and none of its structure into
a document ("Coding note: document type = surgical pathology report", "Index terms:
adenocarcinoma, margins, lymphovascular invasion"), or repeats them, so that a classifier that
counts words is pulled towards that type. The offline classifier does not count the words of
such lines (``keyword_spans``), and the structure reading (engine.verifiers.structure) does not
read paperwork into them.

Pure module: no Django.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine.schemas import DocType

VOCABULARY_PATH = Path(__file__).resolve().parent.parent / "rules" / "offline_vocabulary.json"


@dataclass(frozen=True)
class TypeVocabulary:
    header: re.Pattern[str]
    terms: re.Pattern[str]
    weak_terms: re.Pattern[str] | None
    patterns: tuple[tuple[re.Pattern[str], float, int | None], ...]  # regex, weight, cap


@dataclass(frozen=True)
class KeywordLines:
    """What makes a line a list of keywords rather than a statement (see keyword_spans)."""

    label: re.Pattern[str]
    type_claim: re.Pattern[str]
    function_words: frozenset[str]
    min_words: int
    min_terms: int
    min_share: float
    max_function_words: int
    max_numbers: int
    list_separators: int


@dataclass(frozen=True)
class Vocabulary:
    version: str
    header_weight: float
    term_weight: float
    weak_term_weight: float
    cap: int
    types: dict[DocType, TypeVocabulary]
    keyword_lines: KeywordLines | None = None


def _alternation(words: list[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


def _pattern(spec: str | dict[str, Any]) -> tuple[re.Pattern[str], float, int | None]:
    if isinstance(spec, str):
        return re.compile(spec, re.IGNORECASE | re.MULTILINE), 1.0, None
    cap = spec.get("cap")
    return (
        re.compile(str(spec["regex"]), re.IGNORECASE | re.MULTILINE),
        float(spec.get("weight", 1.0)),
        int(cap) if cap is not None else None,
    )


def _words(words: list[str]) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-])(?:{_alternation(words)})(?![\w-])", re.IGNORECASE)


@lru_cache(maxsize=1)
def load_vocabulary(path: Path = VOCABULARY_PATH) -> Vocabulary:
    data = json.loads(path.read_text())
    types = {}
    for name, spec in data["types"].items():
        types[DocType(name)] = TypeVocabulary(
            header=re.compile(
                rf"^[ \t]*(?:{_alternation(spec['headers'])})[ \t]*(?::|[ \t]-[ \t]|$)",
                re.IGNORECASE | re.MULTILINE,
            ),
            terms=_words(spec["terms"]),
            weak_terms=_words(spec["weak_terms"]) if spec.get("weak_terms") else None,
            patterns=tuple(_pattern(p) for p in spec.get("patterns", [])),
        )
    spec = data.get("keyword_lines")
    keyword_lines = (
        KeywordLines(
            label=re.compile(spec["label"]),
            type_claim=re.compile(spec["type_claim"], re.IGNORECASE),
            function_words=frozenset(spec["function_words"].split()),
            min_words=int(spec["min_words"]),
            min_terms=int(spec["min_terms"]),
            min_share=float(spec["min_share"]),
            max_function_words=int(spec["max_function_words"]),
            max_numbers=int(spec["max_numbers"]),
            list_separators=int(spec["list_separators"]),
        )
        if spec
        else None
    )
    return Vocabulary(
        version=data["version"],
        header_weight=float(data["header_weight"]),
        term_weight=float(data["term_weight"]),
        weak_term_weight=float(data.get("weak_term_weight", 0.0)),
        cap=int(data["cap_per_term"]),
        types=types,
        keyword_lines=keyword_lines,
    )


_WORD = re.compile(r"[A-Za-z][A-Za-z'&-]*")
_SEPARATORS = re.compile(r"[,;/|]")
_NUMBER = re.compile(r"(?<![A-Za-z])\d+(?:[.,]\d+)?(?![A-Za-z])")  # a value, not a gene's name


def keyword_line(line: str, vocabulary: Vocabulary) -> bool:
    """Whether the line lists one type's vocabulary without saying anything (an index, tag or
    coding line; a string of keywords), or names the document's type. Such a line is not
    evidence of a type: anyone can write one into a document (keyword stuffing)."""
    spec = vocabulary.keyword_lines
    if spec is None:
        return False
    if spec.type_claim.search(line):
        return True
    label = spec.label.match(line)
    if label is not None and any(v.header.match(line) for v in vocabulary.types.values()):
        return False  # a section of a report or a note: what follows is its content
    body = line[label.end() :] if label else line
    if label is None and len(_SEPARATORS.findall(body)) < spec.list_separators:
        return False  # neither labelled nor a list: a title or a phrase
    words = _WORD.findall(body)
    if len(words) < spec.min_words or len(_NUMBER.findall(body)) > spec.max_numbers:
        return False
    if sum(w.lower() in spec.function_words for w in words) > spec.max_function_words:
        return False
    for vocab in vocabulary.types.values():
        spans = [m.span() for m in vocab.terms.finditer(body)]
        spans += [m.span() for m in vocab.header.finditer(body)]
        if len({body[a:b].lower() for a, b in spans}) < spec.min_terms:
            continue
        covered = sum(len(_WORD.findall(body[a:b])) for a, b in spans)
        if covered >= spec.min_share * len(words):
            return True
    return False


REPEAT_MIN_WORDS = 4  # a shorter line (a header, "Page 2") may well repeat


def keyword_spans(text: str, vocabulary: Vocabulary) -> list[tuple[int, int]]:
    """(start, end) of the lines of ``text`` whose words do not count: keyword lines (see
    keyword_line), and a line that repeats an earlier one word for word (a second copy adds
    nothing but weight)."""
    spans = []
    seen: set[str] = set()
    start = 0
    for line in text.split("\n"):
        key = " ".join(line.split()).lower()
        repeated = key in seen and len(_WORD.findall(key)) >= REPEAT_MIN_WORDS
        if key and (repeated or keyword_line(line, vocabulary)):
            spans.append((start, start + len(line)))
        seen.add(key)
        start += len(line) + 1
    return spans


def without_keyword_lines(text: str, vocabulary: Vocabulary) -> str:
    """The text with its keyword lines blanked (same length, so offsets still hold)."""
    for start, end in keyword_spans(text, vocabulary):
        text = text[:start] + " " * (end - start) + text[end:]
    return text
