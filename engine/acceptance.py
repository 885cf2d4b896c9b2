"""The learning loop's check on a classification (reliability.learning computes what it reads):
a document unlike anything the model was trained on, and a confidence under the
risk-controlled threshold of its type, each a MAJOR issue that no fix or re-ask can remove,
so the arbiter escalates with the reason (V5 rule R4). Both are optional: a context without
them adds nothing.

Pure: no Django.
"""

from __future__ import annotations

from engine.document import DocumentContext
from engine.exemplars import combined_score
from engine.risk import acceptance_score
from engine.schemas import ClassificationOutput, Issue, Severity, make_issue

AGENT = "LRN"
NOVEL = "novel_document"
NO_CERTIFICATE = "no_risk_certificate"
BELOW_THRESHOLD = "below_risk_threshold"
CODES = (NOVEL, NO_CERTIFICATE, BELOW_THRESHOLD)


def verify(output: ClassificationOutput, context: DocumentContext) -> list[Issue]:
    issues = []
    novelty = context.novelty
    doc_type = output.dominant_type_overall.value
    vote = context.exemplar
    # Look-alikes a clinician labelled with this very type since the reference was built: the
    # kind has been seen, so novelty no longer stands in for a clinician. The source's own vote
    # (no look-alikes) does not: it says what the source sends, not that this document is like
    # any a clinician saw.
    seen_since = (
        vote is not None
        and vote.trusted
        and vote.scope == "neighbours"
        and vote.score(doc_type) >= 0.999
    )
    if novelty is not None and novelty.novel and not seen_since:
        issues.append(
            make_issue(
                AGENT,
                Severity.MAJOR,
                NOVEL,
                novelty.reason[:1].upper() + novelty.reason[1:] + ".",
                "document",
                "A clinician decides: the model has not seen documents like this one, and "
                "their answer teaches it.",
            )
        )
    table = context.acceptance
    if table is not None:
        entry = table.lookup(doc_type, context.source)
        score = combined_score(acceptance_score(output), vote, doc_type)
        if entry is None or entry.threshold is None:
            why = entry.reason if entry is not None else "no labelled documents yet"
            issues.append(
                make_issue(
                    AGENT,
                    Severity.MAJOR,
                    NO_CERTIFICATE,
                    f"No confidence can be shown safe to accept {doc_type} yet ({why}).",
                    "dominant_type_overall",
                    "A clinician confirms the type; their labels let a threshold be certified.",
                )
            )
        elif score < entry.threshold:
            scope = "every type" if entry.doc_type == "*" else doc_type
            issues.append(
                make_issue(
                    AGENT,
                    Severity.MAJOR,
                    BELOW_THRESHOLD,
                    f"Confidence {score:.3f} for {doc_type} is under its risk-controlled "
                    f"threshold {entry.threshold:g} (accepted-error rate at most "
                    f"{entry.alpha:g} for {scope}, bound {entry.bound:.4f}).",
                    "dominant_type_overall",
                    "A clinician confirms the type.",
                )
            )
    return issues
