"""Review's part of the retention policy (documents.retention, wired by config.wiring): which
documents an open review process holds, and what of a deleted document review keeps.

Kept: every ground-truth version, de-identified (review.retained: labels, versions, states,
sources, reviewers, model and prompt version, dates, the generated reason; coded field values
only; the reviewer's own note goes, since it may name the patient), so that exports and the
metrics of labels go on; and the audit log, which never held document text, with one more
event: the deletion. Deleted: the packets (the model's answer with its evidence), the
decisions on them, the blind audits, the second reviews and adjudications (their notes) and
the comparisons of later runs: they are the document's processing, and they quote it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Model, QuerySet

from documents.models import Document
from review.models import (
    AuditEvent,
    AuditSample,
    Review,
    ReviewPacket,
    RunComparison,
    SecondReview,
)
from review.services.audit_log import audit_record
from review.services.ground_truth import ground_truth_retain

# Retention hold codes: a document is kept past the retention age while one of these is open.
REVIEW_OPEN = "review_open"  # a packet waits for a clinician's decision
AUDIT_OPEN = "audit_open"  # a blind audit of an accepted run waits for its auditor
SECOND_REVIEW_OPEN = "second_review_open"  # a second review or adjudication is open


def retention_holds(document_ids: Sequence[Any]) -> dict[Any, str]:
    """The documents of ``document_ids`` with an open packet, blind audit or second review
    (or adjudication): deleting them would end a check before it is done, and a label still
    provisional would be frozen as it stands. Kept until the check ends."""
    ids = list(document_ids)
    held: dict[Any, str] = {}
    for code, rows in (
        (SECOND_REVIEW_OPEN, SecondReview.objects.filter(status__in=SecondReview.OPEN_STATUSES)),
        (AUDIT_OPEN, AuditSample.objects.filter(status=AuditSample.Status.PENDING)),
        (REVIEW_OPEN, ReviewPacket.objects.filter(status__in=ReviewPacket.OPEN_STATUSES)),
    ):
        for pk in rows.filter(document_id__in=ids).values_list("document_id", flat=True):
            held.setdefault(pk, code)
    return held


def _delete(rows: QuerySet[Any]) -> int:
    """Delete ``rows``; how many of them (not counting what went with them)."""
    model: type[Model] = rows.model
    return rows.delete()[1].get(model._meta.label, 0)


def document_review_erase(*, document: Document) -> dict[str, int]:
    """Delete what review holds of ``document`` but its ground truth, and de-identify every
    version of that. Call inside the transaction that deletes the document, before its runs
    are deleted (packets and audits refer to them). Returns how many rows of each went."""
    # Asked first, while the checks' rows still exist: retention of a label under a check is
    # refused (retention_holds keeps such a document).
    kept = ground_truth_retain(document=document)
    packets = ReviewPacket.objects.filter(document=document)
    # In this order: a second review protects the decision it checks, a decision its packet.
    counts = {
        "second_reviews": _delete(SecondReview.objects.filter(document=document)),
        "decisions": _delete(Review.objects.filter(packet__in=packets)),
        "audits": _delete(AuditSample.objects.filter(document=document)),
        "comparisons": _delete(RunComparison.objects.filter(document=document)),
        "packets": _delete(packets),
    }
    counts["ground_truth_versions_kept"] = kept
    return counts


def document_deletion_audit(*, document: Document, detail: dict[str, Any]) -> None:
    """The deletion of ``document`` in the audit log, done by the system: ``detail`` says
    when, under which policy and what went (ids, dates and counts; never text)."""
    audit_record(user=None, action=AuditEvent.Action.DELETED, obj=document, detail=detail)
