"""Read what kind of document a stretch of text is from its structure, not from one word.

V3's traps ask whether pages labelled as a report read like one. Paperwork has fields waiting to
be filled (labelled blanks, empty checkboxes), instructions to whoever fills it in, signature
lines, a title that names it (requisition, order, consent, leaflet, notice), and language of
orders, consents, leaflets, insurers or letters. A telephone or portal message quotes a report
inside a note. A lab panel is a table of values with units and reference ranges. A report has a
findings section with content (a diagnosis, findings, an impression, results), or, for a
sequencing report, its own sections and variants in HGVS notation. The patterns are data
(rules/v3_domain.json, ``document_structure``).

Pure module: no Django.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

RULES_PATH = Path(__file__).resolve().parent.parent / "rules" / "v3_domain.json"
_FLAGS = re.IGNORECASE | re.MULTILINE
MAX_TITLE_WORDS = 12
_BLANKS_ONLY = re.compile(r"^[\s_./\-\[\]()☐□:]*$")


@dataclass(frozen=True)
class Family:
    name: str
    min: int
    patterns: tuple[re.Pattern[str], ...]


@dataclass(frozen=True)
class StructureRules:
    title_lines: int
    titles: tuple[re.Pattern[str], ...]
    labelled_blank: re.Pattern[str]
    min_blank_lines: int
    empty_checkbox: re.Pattern[str]
    min_checkboxes: int
    families: tuple[Family, ...]
    message_titles: tuple[re.Pattern[str], ...]
    message_body: tuple[re.Pattern[str], ...]
    min_message_body: int
    findings_header: re.Pattern[str]
    min_findings_content: int
    pending_findings: re.Pattern[str]
    lab_row: re.Pattern[str]
    lab_units: re.Pattern[str]
    min_lab_rows: int
    genomic_headers: re.Pattern[str]
    variant: re.Pattern[str]
    min_variants: int
    note_sections: re.Pattern[str]
    administrative: tuple[str, ...] = ()


def _compile(patterns: list[str]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, _FLAGS) for p in patterns)


def rules_from(data: dict[str, Any]) -> StructureRules:
    spec = data["document_structure"]
    message = spec["message_note"]
    genomic = spec["genomic_findings"]
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
        genomic_headers=re.compile(genomic["headers"], _FLAGS),
        variant=re.compile(genomic["variant"]),
        min_variants=int(genomic["min_variants"]),
        note_sections=re.compile(spec["note_sections"]["regex"], _FLAGS),
        administrative=tuple(data["administrative_keywords"]["phrases"]),
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

    @property
    def is_message_note(self) -> bool:
        return bool(self.message_note)

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


def _findings(text: str, rules: StructureRules) -> bool:
    """A findings section with content: the rest of its header line, or the lines under it,
    hold words rather than blanks to fill in, and do not say the result is still to come."""
    for match in rules.findings_header.finditer(text):
        rest = match.group("rest").strip()
        if not rest:
            following = text[match.end() :].lstrip("\n").split("\n", 3)[:3]
            rest = " ".join(line.strip() for line in following)
        if _BLANKS_ONLY.match(rest) or rules.pending_findings.match(rest):
            continue
        letters = sum(c.isalpha() for c in rest)
        if letters >= rules.min_findings_content and rest.count("_") < 3:
            return True
    return False


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
    blanks = len(rules.labelled_blank.findall(text))
    if blanks >= rules.min_blank_lines:
        shape.paperwork["blank fields"] = f"{blanks} blanks to fill in"
    boxes = len(rules.empty_checkbox.findall(text))
    if boxes >= rules.min_checkboxes:
        shape.paperwork["checkboxes"] = f"{boxes} empty boxes"
    lowered = text.lower()
    admin = [k for k in rules.administrative if k.lower() in lowered]
    if admin:
        shape.paperwork["administrative wording"] = ", ".join(admin[:3])
    for family in rules.families:
        hits = [m.group().strip() for p in family.patterns if (m := p.search(text))]
        if len(hits) >= family.min:
            shape.paperwork[f"{family.name} language"] = ", ".join(f"“{h[:40]}”" for h in hits[:3])
    titles = [
        line
        for page in pages
        for line in _head(page, rules.title_lines)
        if any(p.search(line) for p in rules.message_titles)
    ]
    body = [m.group().strip() for p in rules.message_body if (m := p.search(text))]
    if titles or len(body) >= rules.min_message_body:
        shape.message_note = (titles[:1] + body)[:4]
    shape.has_findings = _findings(text, rules)
    variants = len(set(rules.variant.findall(text)))
    shape.genomic_findings = (
        bool(rules.genomic_headers.search(text)) or variants >= rules.min_variants
    )
    shape.lab_rows = sum(
        1 for m in rules.lab_row.finditer(text) if rules.lab_units.search(m.group())
    )
    shape.note_sections = bool(rules.note_sections.search(text))
    return shape
