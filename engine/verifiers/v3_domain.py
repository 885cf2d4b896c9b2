"""V3 domain traps: rule lists are data (rules/v3_domain.json, versioned), and an optional LLM
contextual check whose use the pipeline decides (pipeline.verify)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from engine import discriminator
from engine.document import HIDDEN_KINDS, UNCOUNTED_HIDDEN_KINDS, DocumentContext, HiddenText
from engine.grounding import contains_term
from engine.protocols import LLMClient
from engine.schemas import (
    REPORT_TYPES,
    ClassificationOutput,
    DocType,
    Issue,
    Presence,
    Severity,
    make_issue,
)
from engine.verifiers.structure import (
    Shape,
    StructureRules,
    load_structure_rules,
    read_shape,
    rules_from,
    shape_of,
)

AGENT = "V3"
# Codes that mark a document's text as untrusted, recorded as issues on its runs: a document
# carrying one is never shown to a language model as a corrected example (the reviewer may fix
# its type, but its text stays a suspect's). INSTRUCTION_IN_TEXT: text addressed to a model;
# HIDDEN_TEXT: a page carrying text a reader does not see (issue 25, finding 2), found at
# ingestion and left out of the page's text, raised here so that a clinician sees it.
INSTRUCTION_IN_TEXT = "instruction_in_text"
# The segment reads as paperwork about reports, not a report about one patient (issue 32): the
# learned discriminator's verdict, with the signals that weighed most as its evidence.
NOT_A_REPORT = "not_a_report"
HIDDEN_TEXT = "hidden_text"
UNTRUSTED_TEXT_CODES = frozenset({INSTRUCTION_IN_TEXT, HIDDEN_TEXT})
RULES_PATH = Path(__file__).resolve().parent.parent / "rules" / "v3_domain.json"
LLM_PHASE = "V3 contextual check (LLM)"
# Hidden text on a page escalates from this many words (of two letters or digits or more: a
# lone glyph is not counted): a stray word or two (one clipped out of a form field) is not a
# message. On the dev PDFs no page carries one; stuffing is lines of five words and more.
MIN_HIDDEN_WORDS = 3
LLM_CONTEXT_CHARS = 4000


@dataclass(frozen=True)
class DomainRules:
    version: str
    routine_lab_vendors: tuple[str, ...]
    genomic_vendors: tuple[str, ...]
    administrative_keywords: tuple[str, ...]
    header_footer: tuple[re.Pattern[str], ...]
    instructions: tuple[re.Pattern[str], ...] = ()
    structure: StructureRules | None = None


@lru_cache(maxsize=1)
def load_rules(path: Path = RULES_PATH) -> DomainRules:
    data = json.loads(path.read_text())
    return DomainRules(
        version=data["version"],
        routine_lab_vendors=tuple(data["routine_lab_vendors"]["names"]),
        genomic_vendors=tuple(data["genomic_vendors"]["names"]),
        administrative_keywords=tuple(data["administrative_keywords"]["phrases"]),
        header_footer=tuple(
            re.compile(r, re.IGNORECASE) for r in data["header_footer_patterns"]["regexes"]
        ),
        instructions=tuple(
            re.compile(r, re.IGNORECASE)
            for r in data.get("instruction_patterns", {}).get("regexes", [])
        ),
        structure=load_structure_rules() if path == RULES_PATH else rules_from(data),
    )


_issue = partial(make_issue, AGENT)
STRUCTURE_OF = {
    DocType.PATHOLOGY: "a diagnosis or a sign-out with a specimen",
    DocType.RADIOLOGY: "findings and an impression, or an examination with either",
    DocType.GENOMIC: "a variant table with an assay or its own sections",
}
NAMED = {
    DocType.PATHOLOGY: "a pathology report",
    DocType.RADIOLOGY: "a radiology report",
    DocType.GENOMIC: "a sequencing report",
    DocType.CLINICAL_NOTE: "a clinical note",
}


def _another_type(i: int, doc_type: DocType, shape: Shape) -> Issue:
    others = sorted(t.value for t in shape.reads_as if t != doc_type)
    what = STRUCTURE_OF.get(doc_type)
    return _issue(
        Severity.MAJOR,
        "structure_of_another_type",
        f"Segment {i + 1} is {doc_type.value} PRIMARY but has the whole structure of "
        f"{' and of '.join(NAMED[DocType(t)] for t in others)}"
        + (f", and not that of a {doc_type.value} report ({what})." if what else "."),
        f"segments[{i}].types.{doc_type.value}",
        "Check the type against the document's sections.",
        llm=True,
    )


def structure_traps(
    i: int,
    primary: list[DocType],
    shape: Shape,
    routine_vendors: list[str],
    *,
    min_lab_rows: int,
) -> list[Issue]:
    """The traps that read the segment's structure (see engine/verifiers/structure.py) for a
    segment whose PRIMARY types are ``primary``. A report type must read as a report: not as
    paperwork, a message quoting a report, or a lab panel; it must show part of its own
    structure, and no other type's whole structure may stand where its own is missing. A
    clinical note must not be a form or a bare lab panel, nor 'other' a whole report or note.
    A vendor's name alone neither sets nor lifts a trap."""
    issues: list[Issue] = []
    reports = [t for t in primary if t in REPORT_TYPES]
    note = DocType.CLINICAL_NOTE in primary
    named = ", ".join(t.value for t in primary if t != DocType.OTHER)
    location = f"segments[{i}].dominant_type"

    def findings_of(doc_type: DocType) -> bool:
        if doc_type == DocType.GENOMIC:
            return shape.genomic_findings
        return shape.has_findings

    without_findings = [t for t in reports if not findings_of(t)]
    if reports and shape.is_message_note:
        issues.append(
            _issue(
                Severity.BLOCKER,
                "note_quoting_report",
                f"Segment {i + 1} is {named} PRIMARY but reads as a telephone or portal message "
                f"({'; '.join(f'“{c[:40]}”' for c in shape.message_note)}): a note that quotes "
                "a report is a clinical note.",
                location,
                "A message or phone note is 'clinical_note' even when it quotes a report.",
                llm=True,
            )
        )
    strong_paperwork = bool(shape.titled) or len(shape.paperwork) >= 2
    if (reports and (strong_paperwork or (shape.paperwork and without_findings))) or (
        note and strong_paperwork and not shape.note_sections
    ):
        reason = shape.describe()
        if not strong_paperwork:
            reason += "; and no findings section with content"
        issues.append(
            _issue(
                Severity.BLOCKER,
                "administrative_with_report",
                f"Segment {i + 1} is {named} PRIMARY but reads like paperwork ({reason}).",
                location,
                "Forms, orders, consents, leaflets, letters and cover sheets are 'other'; check "
                "the type.",
                llm=True,
            )
        )
    # A table of lab results is a lab panel unless the claimed report type's whole structure
    # stands beside it (a marrow report with a blood count): an "Interpretation" line under
    # a panel is the panel's, not a report's findings.
    incomplete = [t for t in reports if t not in shape.reads_as]
    if shape.lab_rows >= min_lab_rows and (incomplete or (note and not shape.note_sections)):
        issues.append(
            _issue(
                Severity.BLOCKER,
                "routine_lab_panel",
                f"Segment {i + 1} is {named} PRIMARY but reads as a table of lab results "
                f"({shape.lab_rows} rows with units and reference ranges) without the sections "
                "of that type.",
                location,
                "A routine lab panel is 'other': check the type.",
                llm=True,
            )
        )
    for doc_type in reports:
        if not shape.shows_structure_of(doc_type):
            issues.append(
                _issue(
                    Severity.MAJOR,
                    "report_without_structure",
                    f"Segment {i + 1} is {doc_type.value} PRIMARY but shows none of the structure "
                    f"of such a report ({STRUCTURE_OF[doc_type]}): its words alone do not make "
                    "one.",
                    f"segments[{i}].types.{doc_type.value}",
                    f"A {doc_type.value} report needs {STRUCTURE_OF[doc_type]}; check the type.",
                    llm=True,
                )
            )
            continue
        if doc_type not in shape.reads_as and (shape.reads_as - {doc_type}):
            issues.append(_another_type(i, doc_type, shape))
    if DocType.OTHER in primary and shape.reads_as:
        issues.append(_another_type(i, DocType.OTHER, shape))
    if note and DocType.CLINICAL_NOTE not in shape.reads_as and shape.reads_as & REPORT_TYPES:
        issues.append(_another_type(i, DocType.CLINICAL_NOTE, shape))
    if DocType.GENOMIC in reports and routine_vendors and not shape.genomic_findings:
        issues.append(
            _issue(
                Severity.BLOCKER,
                "routine_lab_genomic",
                f"Segment {i + 1} is genomic PRIMARY on the paper of a routine lab "
                f"({', '.join(routine_vendors)}), and its text has neither the sections nor the "
                "variants of a sequencing report (a vendor's name does not make one).",
                f"segments[{i}].types.genomic",
                "Routine lab panels are not genomic reports: check the type.",
                llm=True,
            )
        )
    return issues


def not_a_report(i: int, primary: list[DocType], text: str) -> list[Issue]:
    """A MAJOR issue when the segment is called a report (or a note) PRIMARY and the
    discriminator (engine.discriminator) reads it, confidently, as paperwork about reports:
    a leaflet's example, a referral, a letter, a directory, a consent, an audit. Its evidence
    is the signals that weighed most and the signs of a report about one patient it lacks."""
    claimed = [t for t in primary if t != DocType.OTHER]
    if not claimed:
        return []
    reading = discriminator.read(text)
    for doc_type in claimed:
        why = reading.not_a_report(doc_type)
        if why is not None:
            return [
                _issue(
                    Severity.MAJOR,
                    NOT_A_REPORT,
                    f"Segment {i + 1} is {doc_type.value} PRIMARY but {why}.",
                    f"segments[{i}].dominant_type",
                    "Leaflets, referrals, letters, directories, consents, audits and policies "
                    "about reports are 'other'; check the type.",
                    llm=True,
                )
            ]
    return []


def addressed_to_model(text: str, rules: DomainRules | None = None) -> str | None:
    """The first stretch of ``text`` addressed to a language model (a prompt injection), or
    None."""
    rules = rules or load_rules()
    found = next((m for p in rules.instructions if (m := p.search(text))), None)
    return found.group() if found is not None else None


def verify_rules(
    output: ClassificationOutput, context: DocumentContext, rules: DomainRules | None = None
) -> list[Issue]:
    rules = rules or load_rules()
    issues: list[Issue] = hidden_text_issues(context.hidden)
    for i, segment in enumerate(output.segments):
        pages = range(max(segment.start_page, 1), min(segment.end_page, context.page_count) + 1)
        norm = [context.normalised[p - 1] for p in pages]

        def found(terms: tuple[str, ...], norm: list[Any] = norm) -> list[str]:
            return [t for t in terms if any(contains_term(t, n) for n in norm)]

        primary: list[DocType] = [
            t.type for t in segment.types if t.presence_level == Presence.PRIMARY
        ]
        if primary:
            structure = rules.structure or load_structure_rules()
            texts = [context.pages[p - 1] for p in pages]
            # The default rules' reading is remembered: the gate reads the same segments.
            shape = (
                shape_of(tuple(texts))
                if structure is load_structure_rules()
                else read_shape(texts, structure)
            )
            issues.extend(
                structure_traps(
                    i,
                    primary,
                    shape,
                    found(rules.routine_lab_vendors),
                    min_lab_rows=structure.min_lab_rows,
                )
            )
            issues.extend(not_a_report(i, primary, "\n\n".join(texts)))

        for number in pages:
            addressed = addressed_to_model(context.pages[number - 1], rules)
            if addressed is not None:
                issues.append(
                    _issue(
                        Severity.MAJOR,
                        INSTRUCTION_IN_TEXT,
                        f"Page {number} contains text addressed to a language model "
                        f"(“{addressed[:80]}”): the document may be trying to steer "
                        "its classification.",
                        f"segments[{i}]",
                        "A clinician should confirm the type, whatever the classifiers say.",
                    )
                )
                break

        for t in segment.types:
            for k, evidence in enumerate(t.top_evidence):
                if any(p.search(evidence.snippet) for p in rules.header_footer):
                    issues.append(
                        _issue(
                            Severity.MINOR,
                            "header_footer_evidence",
                            f"Evidence for {t.type.value} in segment {i + 1} is header or footer "
                            "text, which proves nothing about the type.",
                            f"segments[{i}].types.{t.type.value}.top_evidence[{k}]",
                            "Quote the body of the page instead.",
                            llm=True,
                        )
                    )
    return issues


def hidden_text_issues(hidden: list[HiddenText]) -> list[Issue]:
    """One MAJOR issue per page carrying at least MIN_HIDDEN_WORDS words a reader cannot
    see: the text was left out of classification, but a document that hides text is a
    suspect, and its page is marked for the clinician (location ``pages[n]``)."""
    by_page: dict[int, dict[str, int]] = {}
    for item in hidden:
        if item.kind in UNCOUNTED_HIDDEN_KINDS:
            continue
        kinds = by_page.setdefault(item.page, {})
        kinds[item.kind] = kinds.get(item.kind, 0) + item.words
    issues = []
    for page, kinds in sorted(by_page.items()):
        words = sum(kinds.values())
        if words < MIN_HIDDEN_WORDS:
            continue
        how = "; ".join(
            f"{HIDDEN_KINDS.get(kind, kind.replace('_', ' '))}: {count}"
            for kind, count in sorted(kinds.items(), key=lambda kv: -kv[1])
        )
        issues.append(
            _issue(
                Severity.MAJOR,
                HIDDEN_TEXT,
                f"Page {page} carries {words} word{'s' if words != 1 else ''} a reader cannot "
                f"see ({how}): left out of classification, but the document may be trying to "
                "steer it.",
                f"pages[{page}]",
                "A clinician should confirm the type from what the page shows.",
            )
        )
    return issues


def verify_llm(
    output: ClassificationOutput, context: DocumentContext, llm: LLMClient
) -> list[Issue]:
    head = "\n\n".join(context.pages)[:LLM_CONTEXT_CHARS]
    result = llm.filter(
        question=(
            f"The document below was classified as {output.dominant_type_overall.value}. Is it "
            "a routine lab panel, a form, a requisition, a cover sheet or other paperwork "
            "rather than a clinical report or note of that type?"
        ),
        text=head,
    )
    if result.error:
        return [
            _issue(
                Severity.MAJOR,
                "llm_check_failed",
                f"The contextual check could not run: {result.error}",
                "dominant_type_overall",
                "A clinician should confirm the type.",
            )
        ]
    if result.value is True and result.confidence >= 0.7:
        return [
            _issue(
                Severity.MAJOR,
                "contextual_trap",
                f"The document looks like paperwork or a routine panel: "
                f"{result.reasoning or 'no reason given'}",
                "dominant_type_overall",
                "Re-read the document and correct its type.",
                llm=True,
            )
        ]
    return []


def verify(output: ClassificationOutput, context: DocumentContext) -> list[Issue]:
    issues = verify_rules(output, context)
    if context.llm is None:
        context.skipped.append(f"{LLM_PHASE}: no LLM configured")
    else:
        issues.extend(verify_llm(output, context, context.llm))
    return issues
