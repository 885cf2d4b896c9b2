"""Read what kind of document a stretch of text is from its structure, not from one word.

V3's traps ask whether pages labelled as a report read like one. Paperwork has fields waiting to
be filled (labelled blanks, empty checkboxes), instructions to whoever fills it in, signature
lines, a title that names it (requisition, order, consent, leaflet, notice), and language of
orders, consents, leaflets, insurers or letters. A telephone or portal message quotes a report
inside a note. A lab panel is a table of values with units and reference ranges. A report has a
findings section with content (a diagnosis, findings, an impression, results), or, for a
sequencing report, its own sections and variants in HGVS notation. The patterns are data
(rules/v3_domain.json, ``document_structure``).

Each type has a structure of its own (``report_structure``): a pathology report a diagnosis or a
sign-out with a specimen, a radiology report findings and an impression (or an examination with
either), a sequencing report a variant table with an assay, a clinical note its sections. These
are read from section headers with content at the start of a line and from the layout of the
text, not from its vocabulary: lines of keywords, however many, make none of them. ``Shape``
records, per type, which of its parts were found (``parts``) and the types whose structure is
complete (``reads_as``). V3 asks that a report type show at least a part of its structure, and
that no other type's complete structure stand in for the one it lacks; the gate asks the
structure to confirm a type when the independent classifier abstains.

Pure module: no Django.
"""

from __future__ import annotations

import json
import re
import re._constants as _constants  # the parser's own view of a pattern: see Pattern
import re._parser as _parser
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine.classifiers.vocabulary import load_vocabulary, without_keyword_lines
from engine.schemas import REPORT_TYPES, DocType

RULES_PATH = Path(__file__).resolve().parent.parent / "rules" / "v3_domain.json"
_FLAGS = re.IGNORECASE | re.MULTILINE
MIN_NEEDLE = 3
MAX_TITLE_WORDS = 12
_LETTER = re.compile(r"[^\W\d_]")
_BLANKS_ONLY = re.compile(r"^[\s_./\-\[\]()☐□:]*$")


@dataclass(frozen=True)
class Family:
    name: str
    min: int
    patterns: tuple[Pattern, ...]


@dataclass(frozen=True)
class Part:
    """One part of a type's structure: section headers with content, or patterns anywhere in
    the text, or patterns on the first lines of a page; present when at least ``min``
    distinct matches are found."""

    name: str
    headers: re.Pattern[str] | None
    patterns: tuple[Pattern, ...]
    head_patterns: tuple[Pattern, ...]
    min: int = 1
    content: re.Pattern[str] | None = None  # what a header's content must mention
    min_content: int | None = None  # letters of content a header needs (default: the rules')
    supporting: bool = False  # completes a structure, shows none alone (named anywhere)


@dataclass(frozen=True)
class TypeStructure:
    doc_type: DocType
    parts: tuple[Part, ...]
    complete: tuple[frozenset[str], ...]  # any of these sets of parts is the whole structure


@dataclass(frozen=True)
class StructureRules:
    title_lines: int
    titles: tuple[Pattern, ...]
    labelled_blank: re.Pattern[str]
    min_blank_lines: int
    empty_checkbox: re.Pattern[str]
    min_checkboxes: int
    families: tuple[Family, ...]
    message_titles: tuple[Pattern, ...]
    message_body: tuple[Pattern, ...]
    min_message_body: int
    findings_header: re.Pattern[str]
    min_findings_content: int
    pending_findings: re.Pattern[str]
    lab_row: re.Pattern[str]
    lab_units: re.Pattern[str]
    min_lab_rows: int
    note_sections: re.Pattern[str]
    administrative: tuple[str, ...] = ()
    types: tuple[TypeStructure, ...] = ()
    min_content: int = 12
    audience: re.Pattern[str] | None = None
    min_audience: int = 0
    choices: re.Pattern[str] | None = None
    min_choices: int = 0


class Pattern:
    """A compiled pattern and the lower-case strings every match contains (read off the
    pattern: each entry of ``needles`` is a set of alternatives one of which is in any match):
    a text lacking one is not searched. Most patterns name a word, and a look for a word costs
    far less than a regular-expression scan of a long document."""

    def __init__(self, pattern: str, flags: int = _FLAGS) -> None:
        self.regex = re.compile(pattern, flags)
        self.pattern = pattern
        self.needles = _needles(list(_parser.parse(pattern, flags)))

    def possible(self, lowered: str) -> bool:
        return all(any(n in lowered for n in alternatives) for alternatives in self.needles)

    def search(self, text: str, lowered: str | None = None) -> re.Match[str] | None:
        if lowered is not None and not self.possible(lowered):
            return None
        return self.regex.search(text)

    def finditer(self, text: str, lowered: str | None = None) -> Iterator[re.Match[str]]:
        if lowered is not None and not self.possible(lowered):
            return iter(())
        return self.regex.finditer(text)


def _needles(items: list[Any]) -> list[tuple[str, ...]]:
    """Sets of alternatives, one of each set in every match of the parsed pattern."""
    required: list[tuple[str, ...]] = []
    run: list[str] = []

    def close() -> None:
        if len(run) >= MIN_NEEDLE:
            required.append(("".join(run).lower(),))
        run.clear()

    for op, value in items:
        if op is _constants.LITERAL:
            run.append(chr(value))
            continue
        if op in (_constants.MAX_REPEAT, _constants.MIN_REPEAT) and value[0] >= 1:
            inner = list(value[2])
            if len(inner) == 1 and inner[0][0] is _constants.LITERAL:
                run.extend(chr(inner[0][1]) * value[0])  # "_{3,}" holds "___"
                close()
                continue
        close()
        if op is _constants.BRANCH:
            branches = [_needles(list(branch)) for branch in value[1]]
            if all(branches):
                # One alternative of each branch's most telling set.
                required.append(
                    tuple(n for b in branches for n in max(b, key=lambda c: min(map(len, c))))
                )
        elif op is _constants.SUBPATTERN:
            required.extend(_needles(list(value[-1])))
        elif op in (_constants.MAX_REPEAT, _constants.MIN_REPEAT) and value[0] >= 1:
            required.extend(_needles(list(value[2])))
    close()
    return required


def _compile(patterns: list[str]) -> tuple[Pattern, ...]:
    return tuple(Pattern(p) for p in patterns)


def _header_pattern(names: list[str]) -> re.Pattern[str]:
    """Section headers at the start of a line, then ':' or ' -' or the end of the line, with
    what follows on the line captured as ``rest``."""
    alternation = "|".join(names)
    return re.compile(rf"^[ \t]*(?:{alternation})[ \t]*(?::|-(?=\s)|$)(?P<rest>[^\n]*)", _FLAGS)


def _type_structure(name: str, spec: dict[str, Any]) -> TypeStructure:
    parts = tuple(
        Part(
            name=part,
            headers=_header_pattern(p["headers"]) if p.get("headers") else None,
            patterns=_compile(p.get("regexes", [])),
            head_patterns=_compile(p.get("head_regexes", [])),
            min=int(p.get("min", 1)),
            content=re.compile(p["content"], _FLAGS) if p.get("content") else None,
            min_content=int(p["min_content"]) if "min_content" in p else None,
            supporting=bool(p.get("supporting", False)),
        )
        for part, p in spec["parts"].items()
    )
    return TypeStructure(
        doc_type=DocType(name),
        parts=parts,
        complete=tuple(frozenset(c) for c in spec["complete"]),
    )


def rules_from(data: dict[str, Any]) -> StructureRules:
    spec = data["document_structure"]
    message = spec["message_note"]
    report = spec["report_structure"]
    audience = spec["audience"]
    return StructureRules(
        title_lines=int(spec["title_lines"]),
        titles=_compile(spec["title_patterns"]),
        labelled_blank=re.compile(spec["labelled_blank"], _FLAGS),
        min_blank_lines=int(spec["min_blank_lines"]),
        empty_checkbox=re.compile(spec["empty_checkbox"], _FLAGS),
        min_checkboxes=int(spec["min_checkboxes"]),
        families=tuple(
            Family(name=name, min=int(f["min"]), patterns=_compile(f["regexes"]))
            for name, f in spec["families"].items()
        ),
        message_titles=_compile(message["title_patterns"]),
        message_body=_compile(message["body_patterns"]),
        min_message_body=int(message["min_body"]),
        findings_header=re.compile(spec["findings_header"], _FLAGS),
        min_findings_content=int(spec["min_findings_content"]),
        pending_findings=re.compile(spec["pending_findings"], _FLAGS),
        lab_row=re.compile(spec["lab_row"], _FLAGS),
        lab_units=re.compile(spec["lab_units"]),
        min_lab_rows=int(spec["min_lab_rows"]),
        note_sections=re.compile(spec["note_sections"]["regex"], _FLAGS),
        administrative=tuple(data["administrative_keywords"]["phrases"]),
        types=tuple(_type_structure(n, t) for n, t in report["types"].items()),
        min_content=int(report["min_content"]),
        audience=re.compile(audience["regex"], _FLAGS),
        min_audience=int(audience["min"]),
        choices=re.compile(spec["choices"]["regex"], re.MULTILINE),
        min_choices=int(spec["choices"]["min"]),
    )


@lru_cache(maxsize=1)
def load_structure_rules(path: Path = RULES_PATH) -> StructureRules:
    return rules_from(json.loads(path.read_text()))


@dataclass
class Shape:
    """What the text's structure says. ``paperwork`` names the kinds of paperwork structure
    found (each with what showed it); ``titled`` the page heads that name a form."""

    paperwork: dict[str, str] = field(default_factory=dict)
    titled: list[str] = field(default_factory=list)
    message_note: list[str] = field(default_factory=list)
    has_findings: bool = False
    genomic_findings: bool = False
    lab_rows: int = 0
    note_sections: bool = False
    # Per type, the parts of its structure found; and the types whose structure is complete.
    parts: dict[DocType, frozenset[str]] = field(default_factory=dict)
    shows: frozenset[DocType] = frozenset()  # types with a part that is not only supporting
    reads_as: frozenset[DocType] = frozenset()
    lab_panel: bool = False  # enough lab rows, and not inside a note's sections

    @property
    def is_message_note(self) -> bool:
        return bool(self.message_note)

    def shows_structure_of(self, doc_type: DocType) -> bool:
        """At least one part of the type's structure, other than a supporting one (a report
        type with none of it is its vocabulary alone)."""
        return doc_type in self.shows

    def confirms(self, doc_type: DocType, *, strict: bool) -> bool:
        """Whether the structure, on its own, says ``doc_type``.

        Strictly (to overrule an independent classifier that said another type without
        confidence): the type's structure is complete and no report type's other than its
        own is; for 'other', nothing's structure is complete and the text is paperwork, a
        lab panel or material for patients. Loosely (to stand in for an agreement without
        confidence): the text shows part of the type's structure and no other type's complete
        structure (for a note: no report type's); for 'other', nothing's structure is complete
        and the text is such material or shows no part of any type's structure at all."""
        reports = self.reads_as & REPORT_TYPES
        if doc_type in REPORT_TYPES:
            if strict:
                return reports == {doc_type}
            return self.shows_structure_of(doc_type) and self.reads_as <= {doc_type}
        if doc_type == DocType.CLINICAL_NOTE:
            if reports:
                return False
            if strict:
                return DocType.CLINICAL_NOTE in self.reads_as
            return self.shows_structure_of(DocType.CLINICAL_NOTE)
        if self.reads_as:
            return False
        material = bool(self.paperwork or self.titled or self.lab_panel)
        return material or (not strict and not self.shows)

    def describe(self) -> str:
        parts = [f"page head “{t}”" for t in self.titled[:2]]
        parts += [f"{name} ({why})" for name, why in self.paperwork.items()]
        return "; ".join(parts)


def _head(text: str, lines: int) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()][:lines]


def _title(line: str) -> str | None:
    """The part of a page-head line that could name the page: short, not a sentence, and after
    the colon of a "Label: value" line ("Clinical history per requisition: colon mass." names
    nothing; "RE: Letter of medical necessity" does)."""
    if len(line.split()) > MAX_TITLE_WORDS or line.endswith((".", ",", ";")):
        return None
    if ":" in line:
        return line.split(":", 1)[1].strip() or line.split(":", 1)[0]
    return line


def _letters(text: str) -> int:
    return len(_LETTER.findall(text))


def _with_content(
    header: re.Pattern[str],
    text: str,
    rules: StructureRules,
    minimum: int,
    content: re.Pattern[str] | None = None,
) -> list[str]:
    """The headers (as matched) of sections with content: the rest of the header line, or the
    lines under it, hold words rather than blanks to fill in, do not say the result is still
    to come, and mention ``content`` when it is given."""
    found = []
    for match in header.finditer(text):
        rest = match.group("rest").strip(" \t:-,")
        if _letters(rest) < max(minimum, 1):
            following = text[match.end() :].lstrip("\n").split("\n", 3)[:3]
            rest = " ".join(line.strip() for line in following) if minimum else rest
        if minimum and (_BLANKS_ONLY.match(rest) or rules.pending_findings.match(rest)):
            continue
        if _letters(rest) < minimum or rest.count("_") >= 3:
            continue
        if content is not None and not content.search(rest):
            continue
        found.append(re.split(r"[:\-]", match.group().strip(), maxsplit=1)[0].strip().lower())
    return found


def _findings(text: str, rules: StructureRules) -> bool:
    return bool(_with_content(rules.findings_header, text, rules, rules.min_findings_content))


def _parts(
    structure: TypeStructure, text: str, lowered: str, heads: list[str], rules: StructureRules
) -> frozenset[str]:
    found = set()
    for part in structure.parts:
        matches: set[str] = set()
        if part.headers is not None:
            minimum = rules.min_content if part.min_content is None else part.min_content
            matches.update(_with_content(part.headers, text, rules, minimum, part.content))
        for pattern in part.patterns:
            matches.update(m.group().strip().lower() for m in pattern.finditer(text, lowered))
        for pattern in part.head_patterns:
            matches.update(h.lower() for h in heads if pattern.search(h))
        if len(matches) >= part.min:
            found.add(part.name)
    return frozenset(found)


def read_shape(pages: list[str], rules: StructureRules | None = None) -> Shape:
    rules = rules or load_structure_rules()
    text = "\n\n".join(pages)
    shape = Shape()
    for page in pages:
        for line in _head(page, rules.title_lines):
            title = _title(line)
            if title is not None and any(p.search(title) for p in rules.titles):
                shape.titled.append(line[:80])
                break
    # A blank is a run of underscores or dots: a text without one has none (and the scan for
    # the label before a blank is the costliest of all on a long report).
    blanks = len(rules.labelled_blank.findall(text)) if ("__" in text or "...." in text) else 0
    if blanks >= rules.min_blank_lines:
        shape.paperwork["blank fields"] = f"{blanks} blanks to fill in"
    boxes = len(rules.empty_checkbox.findall(text))
    if boxes >= rules.min_checkboxes:
        shape.paperwork["checkboxes"] = f"{boxes} empty boxes"
    choices = len(rules.choices.findall(text)) if rules.choices is not None and " / " in text else 0
    if choices >= rules.min_choices:
        shape.paperwork["options to pick"] = f"{choices} lines offering options"
    # What the words say is read without keyword lines (an index or tag line, a line naming
    # the document's type, a repeated line): anyone can write those into a document.
    text = without_keyword_lines(text, load_vocabulary())
    lowered = text.lower()  # for the patterns' needles (Pattern)
    admin = [k for k in rules.administrative if k.lower() in lowered]
    if admin:
        shape.paperwork["administrative wording"] = ", ".join(admin[:3])
    for family in rules.families:
        hits = [m.group().strip() for p in family.patterns if (m := p.search(text, lowered))]
        if len(hits) >= family.min:
            shape.paperwork[f"{family.name} language"] = ", ".join(f"“{h[:40]}”" for h in hits[:3])
    titles = [
        line
        for page in pages
        for line in _head(page, rules.title_lines)
        if any(p.search(line) for p in rules.message_titles)
    ]
    body = [m.group().strip() for p in rules.message_body if (m := p.search(text, lowered))]
    if titles or len(body) >= rules.min_message_body:
        shape.message_note = (titles[:1] + body)[:4]
    if rules.audience is not None:
        addressed = len(rules.audience.findall(text))
        if addressed >= rules.min_audience:
            shape.paperwork["addressed to the patient"] = f"“you” or “your” {addressed} times"
    shape.has_findings = _findings(text, rules)
    shape.lab_rows = sum(
        1 for m in rules.lab_row.finditer(text) if rules.lab_units.search(m.group())
    )
    shape.note_sections = bool(rules.note_sections.search(text))
    shape.lab_panel = shape.lab_rows >= rules.min_lab_rows and not shape.note_sections
    heads = [line for page in pages for line in _head(page, rules.title_lines)]
    shape.parts = {t.doc_type: _parts(t, text, lowered, heads, rules) for t in rules.types}
    shape.shows = frozenset(
        t.doc_type
        for t in rules.types
        if any(p.name in shape.parts[t.doc_type] and not p.supporting for p in t.parts)
    )
    shape.reads_as = frozenset(
        t.doc_type for t in rules.types if any(c <= shape.parts[t.doc_type] for c in t.complete)
    )
    # A sequencing report: variants with its own sections or with a sequencing assay. Variants
    # beside a routine panel's rows without either are the panel's targeted single-gene tests
    # (a PCR genotype is not a sequencing report).
    shape.genomic_findings = DocType.GENOMIC in shape.reads_as
    return shape


@lru_cache(maxsize=512)
def shape_of(pages: tuple[str, ...]) -> Shape:
    """``read_shape`` with the default rules, remembered: V3 and the gate read the same
    segments' pages. Callers must not change the Shape returned."""
    return read_shape(list(pages))
