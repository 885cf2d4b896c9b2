"""The composition root's wiring: one app's outcome handed to the next. Nothing else in Vetted
knows the whole chain; each app declares what it hands on (its ``hooks`` module, and the
events of ``core.events``) and this module connects them, once, when Django starts
(config.apps).

    documents ──document ready──▶ reliability (classify)
    reliability ──run decided──▶ review (ground truth or a review packet)
    review ──ground truth──▶ reliability (training data, few-shot examples, the learning loop)
    reliability ──label issues──▶ review (blind re-checks of likely-wrong labels)
    every app ──events──▶ integrations (webhooks)
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from core import events
from documents import hooks as document_hooks
from documents.models import Document
from integrations.services import event_emit
from reliability import hooks as reliability_hooks
from reliability.services import run_start
from review import selectors as review_selectors
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


def connect() -> None:
    document_hooks.document_ready.connect(classify_when_ready)
    reliability_hooks.run_decided.connect(record_run_outcome)
    reliability_hooks.training_ground_truth.connect(review_selectors.training_ground_truth)
    reliability_hooks.corrected_examples.connect(review_selectors.corrected_examples)
    reliability_hooks.learning_ground_truth.connect(review_selectors.learning_ground_truth)
    reliability_hooks.clinician_label_count.connect(review_selectors.clinician_label_count)
    reliability_hooks.label_issues_found.connect(label_issue_recheck)
    events.published.connect(send_webhooks)
