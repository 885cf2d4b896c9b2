"""The composition root's wiring: one app's outcome handed to the next. Nothing else in Vetted
knows the whole chain; each app declares what it hands on (its ``hooks`` module, and the
events of ``core.events``) and this module connects them, once, when Django starts
(config.apps).

    documents ──document ready──▶ reliability (classify)
    reliability ──run decided──▶ review (ground truth or a review packet)
    review ──ground truth──▶ reliability (training data, few-shot examples, the learning loop)
    reliability ──label issues──▶ review (blind re-checks of likely-wrong labels)
    every app ──events──▶ integrations (webhooks)
    documents ──retention──▶ reliability, review (what holds a document; what goes with it)
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from core import events
from documents import hooks as document_hooks
from documents.models import Document
from integrations.services import event_emit
from reliability import hooks as reliability_hooks
from reliability import learning as reliability_learning
from reliability import services as reliability_services
from reliability.services import run_start
from review import selectors as review_selectors
from review.services import retention as review_retention
from review.services.decisions import run_outcome_record
from review.services.second_review import label_issue_recheck


def classify_when_ready(document: Document) -> None:
    if settings.AUTO_CLASSIFY:
        run_start(document=document)


def record_run_outcome(decided: reliability_hooks.RunDecided) -> dict[str, Any]:
    return run_outcome_record(
        run=decided.run,
        outcome=decided.outcome,
        accepted=decided.accepted,
        comparison=decided.comparison,
        extra_issues=decided.extra_issues,
    )


def send_webhooks(kind: str, data: dict[str, Any]) -> None:
    event_emit(kind=kind, data=data)


def erase_document_records(document: Document, record: dict[str, Any]) -> None:
    """A document deleted under the retention policy: review's records first (its packets
    and audits refer to the runs), then reliability's runs; then the deletion, with what went,
    in the audit log."""
    erased = review_retention.document_review_erase(document=document)
    runs = reliability_services.document_runs_erase(document=document)
    review_retention.document_deletion_audit(
        document=document,
        detail={
            **record,
            **erased,
            "runs": runs.get("run", 0),
            "extractions": runs.get("extraction", 0),
        },
    )


def connect() -> None:
    document_hooks.document_ready.connect(classify_when_ready)
    document_hooks.retention_holds.connect(reliability_services.retention_holds)
    document_hooks.retention_holds.connect(review_retention.retention_holds)
    document_hooks.document_erasing.connect(erase_document_records)
    reliability_hooks.run_decided.connect(record_run_outcome)
    reliability_hooks.training_ground_truth.connect(review_selectors.training_ground_truth)
    reliability_hooks.corrected_examples.connect(review_selectors.corrected_examples)
    reliability_hooks.learning_ground_truth.connect(review_selectors.learning_ground_truth)
    reliability_hooks.clinician_label_count.connect(review_selectors.clinician_label_count)
    reliability_hooks.clinician_run_labels.connect(review_selectors.clinician_run_labels)
    reliability_hooks.label_issues_found.connect(label_issue_recheck)
    events.published.connect(send_webhooks)
    events.published.connect(reliability_learning.memory_note_change)
