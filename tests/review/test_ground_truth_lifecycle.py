"""Ground truth's one state machine (review.services.ground_truth): the cases of issue 34 that
are about writes, each failing on the code before it, and the rule that no other module writes
a ground-truth row."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from core import events
from documents.models import Document
from engine.schemas import DocType
from reliability.models import Run
from reliability.services import run_start
from review.exports import ExportFilter, export_bytes
from review.models import AuditSample, GroundTruth, ReviewPacket, RunComparison, SecondReview
from review.services import ReviewRefused, audits, decisions, second_review
from review.services.ground_truth import (
    CHECK_ANSWERED,
    CHECK_CONFIRMED,
    CHECK_OPEN,
    LabelState,
    LifecycleRefused,
    ground_truth_retain,
    label_state,
)
from tests.conftest import ready_document
from tests.review.conftest import make_packet
from tests.review.test_ground_truth_states import CLEAN, correct, validate

pytestmark = pytest.mark.django_db


@pytest.fixture
def published() -> Any:
    seen: list[tuple[str, dict[str, Any]]] = []

    def listen(kind: str, data: dict[str, Any]) -> None:
        seen.append((kind, data))

    events.published.connect(listen)
    yield seen
    events.published.disconnect(listen)


@pytest.fixture
def rerun(django_capture_on_commit_callbacks) -> Any:
    def start(document: Document) -> Run:
        with django_capture_on_commit_callbacks(execute=True):
            run = run_start(document=document)
        run.refresh_from_db()
        return run

    return start


def whole(document: Document, doc_type: DocType) -> list[tuple[int, int, DocType]]:
    return [(1, document.page_count, doc_type)]


# -- a re-run under an open check ----------------------------------------------------------------


def test_a_rerun_under_an_open_audit_records_a_comparison_and_changes_nothing(
    reviewer, other_reviewer, published, settings, rerun
):
    settings.AUDIT_SAMPLE_RATE = 1.0
    document = ready_document(CLEAN, sha="e")
    first = rerun(document)
    assert first.final_decision == "AUTO_ACCEPT"
    sample = AuditSample.objects.get(run=first)
    before = list(GroundTruth.objects.values_list("pk", "version", "state"))
    assert before == [(sample.accepted_truth_id, 1, "provisional")]
    published.clear()

    again = rerun(document)  # "Run the classification again" while the audit is open

    assert again.final_decision == "AUTO_ACCEPT"
    assert list(GroundTruth.objects.values_list("pk", "version", "state")) == before
    assert RunComparison.objects.get(run=again).standing_truth_id == sample.accepted_truth_id
    assert not AuditSample.objects.filter(run=again).exists()
    # Webhooks: no new version, and the run's type stays out of run.decided.
    assert not [d for kind, d in published if kind == "ground_truth.changed"]
    decided = [d for kind, d in published if kind == "run.decided"]
    assert decided and "dominant_type" not in decided[0] and decided[0]["standing_kept"]
    # The final-only dataset export holds nothing while the audit is open.
    final = ExportFilter(state=GroundTruth.State.FINAL)
    assert not final.selection().exists()
    assert export_bytes(final.selection(), fmt="jsonl", export_filter=final, site_url="") == b""
    # The auditor's disagreement still opens the second review.
    audits.audit_submit(
        sample_id=sample.pk, auditor=reviewer, segments=whole(document, DocType.RADIOLOGY)
    )
    assert SecondReview.objects.get(document=document).status == SecondReview.Status.AWAITING
    assert label_state(document) == LabelState.UNDER_SECOND_REVIEW


def test_a_run_escalated_under_an_open_audit_opens_no_packet(settings, rerun):
    from tests.review.test_quality_checks import accept

    settings.AUDIT_SAMPLE_RATE = 1.0
    run = accept(1)  # pathology with a requisition: a re-run escalates
    settings.AUDIT_SAMPLE_RATE = 0.0
    again = rerun(run.document)
    assert again.final_decision == "ESCALATE_TO_SME"
    assert not ReviewPacket.objects.filter(document=run.document).exists()
    assert RunComparison.objects.get(run=again).decision == "ESCALATE_TO_SME"
    assert GroundTruth.objects.filter(document=run.document).count() == 1


def test_a_rerun_never_replaces_a_label_an_audit_confirmed(reviewer, settings, rerun):
    settings.AUDIT_SAMPLE_RATE = 1.0
    document = ready_document(CLEAN, sha="e")
    sample = AuditSample.objects.get(run=rerun(document))
    audits.audit_submit(
        sample_id=sample.pk, auditor=reviewer, segments=whole(document, DocType.PATHOLOGY)
    )
    assert label_state(document) == LabelState.CONFIRMED
    settings.AUDIT_SAMPLE_RATE = 0.0
    again = rerun(document)
    assert GroundTruth.objects.filter(document=document).count() == 1
    assert RunComparison.objects.get(run=again).agrees is True


# -- undo of a checked decision ------------------------------------------------------------------


def test_undo_after_a_second_review_agreed_is_refused(reviewer, other_reviewer, published):
    packet = make_packet(sha="a")
    review = correct(packet, reviewer)
    second = SecondReview.objects.get()
    second_review.second_review_submit(
        second_id=second.pk, reviewer=other_reviewer, segments=[(1, 2, DocType.RADIOLOGY)]
    )
    versions = list(GroundTruth.objects.values_list("pk", "state"))
    with pytest.raises(LifecycleRefused) as refused:
        decisions.review_undo(reviewer=reviewer)  # within the undo window
    assert refused.value.code == CHECK_CONFIRMED and refused.value.status == 409
    assert list(GroundTruth.objects.values_list("pk", "state")) == versions
    review.refresh_from_db()
    assert review.withdrawn_at is None
    packet.refresh_from_db()
    assert packet.status == ReviewPacket.Status.COMPLETED
    # So the first reviewer cannot validate over the checked label either.
    with pytest.raises(ReviewRefused):
        validate(packet, reviewer)


def test_undo_once_the_second_reviewer_answered_is_refused(reviewer, other_reviewer):
    correct(make_packet(sha="a"), reviewer)
    second = SecondReview.objects.get()
    second_review.second_review_submit(
        second_id=second.pk, reviewer=other_reviewer, segments=[(1, 2, DocType.PATHOLOGY)]
    )
    with pytest.raises(LifecycleRefused) as refused:
        decisions.review_undo(reviewer=reviewer)
    assert refused.value.code == CHECK_ANSWERED
    assert SecondReview.objects.get().status == SecondReview.Status.ADJUDICATION


def test_undo_before_the_second_answer_cancels_the_check_and_the_next_decision_is_checked(
    reviewer, settings
):
    settings.SECOND_REVIEW_ON_CORRECTION = True
    packet = make_packet(sha="a")
    correct(packet, reviewer)
    decisions.review_undo(reviewer=reviewer)
    assert SecondReview.objects.get().status == SecondReview.Status.CANCELLED
    review = decisions.review_submit(
        packet_id=packet.pk, reviewer=reviewer, correction=None, notes=""
    )
    # A validation needs no second review by the rules, but this packet's decision was under
    # one: it goes through review again rather than straight to final.
    assert review.ground_truth.state == GroundTruth.State.PROVISIONAL
    assert SecondReview.objects.get(first_review=review).rule == SecondReview.Rule.REOPENED


def test_an_admin_reopening_a_confirmed_decision_sends_the_next_one_to_a_second_review(
    reviewer, other_reviewer, admin_user
):
    packet = make_packet(sha="a")
    correct(packet, reviewer)
    second = SecondReview.objects.get()
    second_review.second_review_submit(
        second_id=second.pk, reviewer=other_reviewer, segments=[(1, 2, DocType.RADIOLOGY)]
    )
    decisions.packet_reopen(packet=packet, user=admin_user)
    assert label_state(packet.document) == LabelState.WITHDRAWN
    review = validate(packet, reviewer)
    assert review.ground_truth.state == GroundTruth.State.PROVISIONAL
    assert SecondReview.objects.get(first_review=review).rule == SecondReview.Rule.REOPENED


# -- other transitions ---------------------------------------------------------------------------


def test_retention_of_a_label_under_a_check_is_refused(settings):
    from tests.review.test_quality_checks import accept

    settings.AUDIT_SAMPLE_RATE = 1.0
    run = accept(1)
    with pytest.raises(LifecycleRefused) as refused:
        ground_truth_retain(document=run.document)
    assert refused.value.code == CHECK_OPEN
    assert refused.value.extra == {"state": "under_audit", "transition": "retention"}


def test_a_label_issue_recheck_skips_a_label_a_check_confirmed(reviewer, other_reviewer):
    packet = make_packet(sha="a")
    correct(packet, reviewer)
    second = SecondReview.objects.get()
    second_review.second_review_submit(
        second_id=second.pk, reviewer=other_reviewer, segments=[(1, 2, DocType.RADIOLOGY)]
    )
    opened = second_review.label_issue_recheck([(str(packet.document_id), "r", "p", 0.9)])
    assert opened == 0
    assert GroundTruth.objects.get(document=packet.document).state == GroundTruth.State.FINAL


# -- one writer ----------------------------------------------------------------------------------

# Writes of a GroundTruth row: creating one, changing its state or content in bulk.
WRITES = re.compile(
    r"GroundTruth\.objects\.(create|bulk_create|bulk_update|update_or_create|get_or_create)\b"
    r"|GroundTruth\.objects\.filter\([^)]*\)\.update\("
    r"|\.update\(state="
)
OWNER = Path("review/services/ground_truth.py")


def test_no_module_but_the_state_machine_writes_ground_truth():
    root = Path(django_settings.BASE_DIR)
    offenders = []
    for path in root.rglob("*.py"):
        relative = path.relative_to(root)
        # benchmarks seed synthetic rows in bulk (nothing in production imports them)
        top = {".venv", "tests", "node_modules", "benchmarks", "var", ".git"}
        if relative.parts[0] in top or "migrations" in path.parts:
            continue
        if relative == OWNER:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        offenders += [f"{relative}: {m.group(0)}" for m in WRITES.finditer(text)]
    assert offenders == []
