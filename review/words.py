"""A clinician's words for what the machine says: the one place that turns engine codes
(issue codes, locations, statuses, stop reasons, classifier names, type values) into
sentences. Templates and views ask here; the codes themselves stay in the data and in the
technical detail that Admins can open.

Pure: no Django. The issue codes are the engine's (engine/verifiers, engine/schemas); a code
this module does not know is still shown in plain words (its engine message with type values
replaced by their display names), never as a bare code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from engine.pipeline import FALLBACK_STOP
from engine.schemas import DISPLAY_NAMES, ClassificationOutput

# -- types, fields, statuses ------------------------------------------------------------------

_TYPE_VALUE = re.compile(r"\b(" + "|".join(map(re.escape, DISPLAY_NAMES)) + r")\b")


def _a(name: str) -> str:
    """A type's name with the article its first sound takes: "a Pathology Report", "an
    Other" (never "a Other"); "its type" takes none."""
    if name.startswith("its "):
        return name
    return f"an {name}" if name[:1].upper() in "AEIOU" else f"a {name}"


def type_name(value: Any) -> str:
    """ "clinical_note" -> "Clinical Note"; an unknown value is humanised, never shown raw."""
    if value is None or value == "":
        return ""
    text = str(getattr(value, "value", value))
    return DISPLAY_NAMES.get(text) or text.replace("_", " ").capitalize()


def with_type_names(text: str) -> str:
    """Engine prose with every type value (``clinical_note``) replaced by its display name."""
    return _TYPE_VALUE.sub(lambda m: DISPLAY_NAMES[m.group(1)], text or "")


FIELD_STATUS = {
    "found": "found",
    "not_present": "not in the document",
    "missing": "named in the document, value not read",
    "ambiguous": "unclear: more than one value",
}

_ACRONYMS = {"er": "ER", "pr": "PR", "her2": "HER2", "msi": "MSI", "tmb": "TMB", "ki67": "Ki-67"}


def field_status(status: Any) -> str:
    if not status:
        return ""
    return FIELD_STATUS.get(str(status), str(status).replace("_", " "))


def field_label(name: Any) -> str:
    """ "er_status" -> "ER status", "report_date" -> "Report date"."""
    words = [_ACRONYMS.get(w, w) for w in str(name or "").split("_") if w]
    if not words:
        return ""
    first = words[0]
    words[0] = first if first in _ACRONYMS.values() else first.capitalize()
    return " ".join(words)


PRESENCE = {
    "PRIMARY": "the main type",
    "EMBEDDED_RAW": "embedded (a copied report)",
    "MENTION_ONLY": "mentioned only",
    "NO_EVIDENCE": "no sign of it",
}


def _in_words(table: dict[str, str], code: Any) -> str:
    """An engine code (or enum) in words from ``table``; an unknown one humanised."""
    text = str(getattr(code, "value", code) or "")
    return table.get(text, text.replace("_", " ").lower())


def presence(level: Any) -> str:
    return _in_words(PRESENCE, level)


DECISIONS = {
    "AUTO_ACCEPT": "accepted",
    "AUTO_RETRY": "repaired and tried again",
    "ESCALATE_TO_SME": "sent to a clinician",
}


def decision_words(decision: Any) -> str:
    return _in_words(DECISIONS, decision)


CLASSIFIERS = {
    "offline": "the built-in rules classifier",
    "gemini": "the Gemini language model",
    "openai": "the language model (an OpenAI-compatible server)",
    "trained": "the classifier trained on your decisions",
}


def classifier_name(name: Any) -> str:
    """Who classified, in words: "offline" -> "the built-in rules classifier"."""
    text = str(name or "")
    return CLASSIFIERS.get(text, f"the {text} classifier" if text else "the classifier")


SEVERITY = {"BLOCKER": "Blocker", "MAJOR": "Major", "MINOR": "Minor"}
SEVERITY_MEANS = {
    "BLOCKER": "the answer cannot be accepted as it stands",
    "MAJOR": "a clinician should confirm",
    "MINOR": "worth a glance; it does not stop acceptance on its own",
}


# -- issues -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class IssueWords:
    title: str  # a short heading: "Evidence not in the document"
    sentence: str  # what it means, about this document: "The quote given for ... is not ..."
    reason: str  # the same as a clause for "why escalated": "the quote ... is not in ..."


def _segment(location: str) -> int | None:
    found = re.match(r"segments\[(\d+)\]", location or "")
    return int(found.group(1)) if found else None


def _type_in(location: str) -> str:
    found = re.search(r"(?:types|document_mixture)\.([a-z_]+)", location or "")
    return found.group(1) if found else ""


def _pages(a: int, b: int) -> str:
    return f"page {a}" if a == b else f"pages {a}\u2013{b}"


def _where(location: str, output: ClassificationOutput | None) -> str:
    """The part of the document an issue is about: "the document" or "pages 2-4"."""
    index = _segment(location)
    if index is None or output is None or index >= len(output.segments):
        return "the document"
    if len(output.segments) == 1:
        return "the document"
    segment = output.segments[index]
    return _pages(segment.start_page, segment.end_page)


def _label_of(location: str, output: ClassificationOutput | None) -> str:
    index = _segment(location)
    if index is not None and output is not None and index < len(output.segments):
        return type_name(output.segments[index].dominant_type)
    if output is not None:
        return type_name(output.dominant_type_overall)
    return "its type"


def _number(pattern: str, message: str) -> float | None:
    found = re.search(pattern, message or "")
    try:
        return float(found.group(1)) if found else None
    except ValueError:
        return None


def _percent(value: float | None) -> str:
    return f"{round(100 * value)}%" if value is not None else "low"


def _after_colon(message: str) -> str:
    """The model's own reason after "...: ", for the checks that carry one."""
    _, _, rest = (message or "").partition(": ")
    rest = with_type_names(rest.strip())
    return rest if rest and rest != "no reason given" else ""


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _disagreement(message: str, location: str) -> tuple[str, str]:
    """(title, clause) for the independent gate's disagreement."""
    read = re.search(r"reads this document as (.+?); the primary classifier said (.+?)\.", message)
    if read:
        theirs, mine = read.group(1), read.group(2)
        return (
            "The classifier and the independent check disagree",
            f"the classifier and the independent check disagree: {mine} vs {theirs}",
        )
    doc_type = type_name(_type_in(location)) or "a type"
    if "independent" in message.split("calls", 1)[0]:
        return (
            f"The independent check finds a {doc_type}",
            f"the independent check finds a {doc_type} the classifier does not see",
        )
    return (
        f"Only the classifier finds a {doc_type}",
        f"the classifier finds a {doc_type} that the independent check sees no sign of",
    )


def issue_words(issue: dict[str, Any], output: ClassificationOutput | None = None) -> IssueWords:
    """A clinician's words for one issue (a packet's stored issue dict: code, message,
    location), about this document."""
    code = issue.get("code", "")
    message = issue.get("message", "")
    location = issue.get("location", "")
    where = _where(location, output)
    label = _label_of(location, output)
    named = type_name(_type_in(location)) or label
    page = _number(r"[Pp]age (\d+)", message)

    def said(title: str, reason: str) -> IssueWords:
        return IssueWords(title=title, sentence=_cap(reason) + ".", reason=reason)

    if code == "fabricated_evidence":
        return said(
            "Evidence not in the document",
            f"the quote given as evidence of {_a(named)} is not in the document",
        )
    if code == "evidence_wrong_page":
        cited = _number(r"claims page (\d+)", message)
        actual = _number(r"is on page (\d+)", message)
        if cited and actual:
            return said(
                "Evidence on another page",
                f"the evidence of {_a(named)} is cited as page {cited:.0f} but is on page "
                f"{actual:.0f}",
            )
        return said("Evidence on another page", f"the evidence of {_a(named)} is on another page")
    if code == "generic_evidence":
        return said(
            "Evidence too general",
            f"the quote given for {_a(named)} is too general to show the type",
        )
    if code == "anchor_not_on_page":
        return said(
            "Key words not on the page",
            f"key words the classifier gave for {_a(named)} are not on the page it cites",
        )
    if code == "header_footer_evidence":
        return said(
            "Evidence from a header or footer",
            f"the evidence of {_a(named)} in {where} is header or footer text, which says "
            "nothing about the type",
        )
    if code == "missing_evidence":
        return said(
            "No evidence quoted",
            f"the classifier says {where} contains {_a(named)} but quotes nothing to show it",
        )
    if code == "low_confidence":
        confidence = _number(r"confidence (\d+(?:\.\d+)?)", message)
        needed = _number(r"below (\d+(?:\.\d+)?)", message)
        needs = f"; {_percent(needed)} is needed to accept it" if needed is not None else ""
        return said(
            "The classifier is unsure",
            f"the classifier is unsure that {where} is {_a(label)} "
            f"({_percent(confidence)} sure{needs})",
        )
    if code == "dominant_without_evidence":
        return said(
            "Type without evidence",
            f"{where} is labelled {label}, but the classifier found no evidence of {_a(label)}",
        )
    if code == "dominant_not_largest":
        other = re.search(r"but ([a-z_]+) has the larger share", message)
        bigger = type_name(other.group(1)) if other else "another type"
        return said(
            "Most of it reads as another type",
            f"{where} is labelled {label}, but most of it reads as {bigger}",
        )
    if code in ("segment_shares", "mixture_shares"):
        return said(
            "Proportions do not add up",
            f"the classifier's proportions of each type in {where} do not add up to the whole",
        )
    if code == "label_text_mismatch":
        why = _after_colon(message)
        return said(
            "Does not read as its type",
            f"a second reading finds that {where} does not read as {_a(label)}"
            + (f" ({why.rstrip('.')})" if why else ""),
        )
    if code == "contextual_trap":
        why = _after_colon(message)
        return said(
            "Looks like paperwork or a routine panel",
            "a second reading finds that the document looks like paperwork or a routine lab "
            "panel" + (f" ({why.rstrip('.')})" if why else ""),
        )
    if code == "note_quoting_report":
        return said(
            "A message quoting a report",
            f"{where} is labelled {label}, but it reads as a telephone or portal message that "
            "quotes a report: such a message is a Clinical Note",
        )
    if code == "administrative_with_report":
        return said(
            "Reads like paperwork",
            f"{where} is labelled {label}, but reads like paperwork (a form, order, "
            "requisition, consent, letter or cover sheet), which is Other",
        )
    if code == "routine_lab_panel":
        return said(
            "A routine lab panel",
            f"{where} is labelled {label}, but reads as a table of routine lab results, "
            "which is Other",
        )
    if code == "routine_lab_genomic":
        return said(
            "A routine lab, not a sequencing report",
            f"{where} is labelled Genomic Report, but it is on a routine laboratory's paper "
            "without the sections or variants of a sequencing report",
        )
    if code == "instruction_in_text":
        on = f"page {page:.0f}" if page else "a page"
        return said(
            "Text addressed to an AI",
            f"{on} contains text addressed to an AI model: the document may be trying to "
            "steer its classification",
        )
    if code == "model_no_answer":
        return said(
            "The AI model gave no answer",
            "the language model did not give a usable answer (it blocked the request, its "
            "answer was empty or cut off, or did not fit the required form, even when asked "
            "again); the type shown is the independent classifier's suggestion",
        )
    if code == "hidden_text":
        on = f"page {page:.0f}" if page else "a page"
        how = re.search(r"\(([^)]*)\)", message)
        return said(
            "Text a reader cannot see",
            f"{on} carries text a reader cannot see"
            + (f" ({how.group(1)})" if how else "")
            + ": it was left out of the classification, and is outlined on the page; the "
            "document may be trying to steer its classification",
        )
    if code == "llm_check_failed":
        return said(
            "A check could not run",
            "an automatic check could not run, so a clinician must confirm the type",
        )
    if code == "keyword_evidence":
        return said(
            "Evidence is a list of keywords",
            f"the classifier's evidence for {named} in {where} is a list of keywords or a line "
            "naming the document's type, not a finding: such lines can be planted to steer it",
        )
    if code == "report_without_structure":
        return said(
            "No report structure",
            f"{where} is labelled {label}, but shows none of {_a(label)}'s structure (its "
            "sections, such as a diagnosis with its specimen, or findings and an impression): "
            "its words alone do not make one",
        )
    if code == "structure_of_another_type":
        return said(
            "Built like another type",
            f"{where} is labelled {label}, but is built like another kind of document (its "
            "sections are those of another type)",
        )
    if code == "missed_boundary":
        return said(
            "A document may start inside it",
            f"page {page:.0f} reads as the start of a new document (a new title, patient, "
            "date or page count), but the classifier did not start one there"
            if page
            else "a page reads as the start of a new document, but the classifier did not "
            "start one there",
        )
    if code == "gate_abstained":
        return said(
            "The independent check is not sure",
            "the independent check agrees with the classifier but is not sure enough to "
            "confirm it, and nothing else independent of the model confirms the type",
        )
    if code == "independent_disagreement":
        title, reason = _disagreement(message, location)
        return IssueWords(title=title, sentence=_cap(reason) + ".", reason=reason)
    if code in ("overlap", "gap"):
        verb = "two documents at once" if code == "overlap" else "no document"
        return said(
            "Pages given to two documents" if code == "overlap" else "Pages left out",
            f"some pages belong to {verb}",
        )
    if code == "page_range":
        return said("Pages outside the document", f"{where} lies outside the document's pages")
    if code in ("no_segments", "segment_count", "page_count", "missing_type", "confidence_range"):
        return said(
            "An incomplete answer",
            "the classifier's answer is incomplete or inconsistent (a bookkeeping error, "
            "not a reading of the document)",
        )
    # A code added to the engine later: its own message, without raw type values.
    text = with_type_names(message).rstrip(".") or "a check raised a problem"
    return IssueWords(
        title=_cap(code.replace("_", " ")) if code else "A problem",
        sentence=_cap(text) + ".",
        reason=text[:1].lower() + text[1:],
    )


def issue_title(code: str) -> str:
    """The short heading of an issue code, for filters and counts."""
    return issue_words({"code": code}).title


# -- why a run was escalated ------------------------------------------------------------------

STOPS = {
    "retry limit reached": "the automatic repairs ran out of tries",
    "cycle detected": "the automatic repairs could not change the answer",
    FALLBACK_STOP: (
        "the AI model gave no usable answer, so the suggestion is the independent classifier's"
    ),
}


def stop_words(stopped_reason: str) -> str:
    """A run's stop reason in words; "" for the plain ones (accepted, escalated by the
    arbiter: the issues say why)."""
    text = stopped_reason or ""
    if text in STOPS:
        return STOPS[text]
    if text.startswith("re-ask"):
        return "the language model could not be asked a second time"
    return ""


def escalation_reasons(
    *,
    issues: list[dict[str, Any]],
    output: ClassificationOutput | None,
    gate: dict[str, Any] | None = None,
    comparison: dict[str, Any] | None = None,
    stopped_reason: str = "",
) -> list[str]:
    """Why a clinician sees this packet, as clauses naming the actual reasons, most serious
    first: the classifier and the independent check disagreeing, every blocker, every major
    issue that no automatic repair fixes, the production comparison's disagreement, and a run
    that stopped early. Never "escalated by the arbiter"."""
    reasons: list[str] = []

    def add(text: str) -> None:
        if text and text not in reasons:
            reasons.append(text)

    gate = gate or {}
    mine = type_name(output.dominant_type_overall) if output is not None else ""
    theirs = type_name(gate.get("dominant_type", ""))
    if gate and not gate.get("agrees", True) and theirs and mine and theirs != mine:
        add(f"the classifier and the independent check disagree: {mine} vs {theirs}")
    for severity in ("BLOCKER", "MAJOR"):
        for issue in issues:
            if issue.get("severity") != severity:
                continue
            if severity == "MAJOR" and issue.get("auto_fixable"):
                continue
            add(issue_words(issue, output).reason)
    comparison = comparison or {}
    if comparison.get("available") and not comparison.get("agrees_on_type", True):
        other = type_name(comparison.get("dominant_type", ""))
        add(f"{classifier_name(comparison.get('classifier'))} reads it as {other}")
    add(stop_words(stopped_reason))
    if not reasons:
        for issue in issues:  # only minor or repairable ones remain
            add(issue_words(issue, output).reason)
    return reasons or ["the checks could not settle it on their own"]


def reasons_sentence(reasons: list[str]) -> str:
    """["a", "b", "c"] -> "A; b; and c." """
    if not reasons:
        return ""
    if len(reasons) == 1:
        return _cap(reasons[0]) + "."
    return _cap("; ".join(reasons[:-1]) + "; and " + reasons[-1]) + "."
