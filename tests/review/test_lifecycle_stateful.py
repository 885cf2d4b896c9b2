"""A model-based test of ground truth's one state machine (issue 34): Hypothesis drives random
interleavings of runs (accepted, drawn for an audit, escalated), re-runs, decisions (validate,
correct), undo, an admin's reopening, audit answers, second-review answers, adjudications and
the learning loop's label-issue re-checks, by three reviewers and an admin, and after every
step checks the state machine's invariants, what each role may see (review.visibility), what
the webhooks received (core.events) and what the exports hold (JSON Lines, Parquet)."""

from __future__ import annotations

import io
import itertools
import json
from collections import Counter
from typing import Any

import pytest
from django.db import transaction
from django.test.utils import override_settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from benchmarks.faults import clean_output
from core import events
from engine import pipeline
from engine.document import DocumentContext
from engine.schemas import DocType
from reliability.models import Run
from review.corrections import correction_build, segmentation_from_json
from review.exports import ExportFilter, export_bytes
from review.models import AuditSample, GroundTruth, Review, ReviewPacket, SecondReview
from review.roles import ADMINS, REVIEWERS
from review.services import ReviewRefused, audits, decisions, second_review
from review.services.audits import machine_segmentation
from review.services.ground_truth import (
    CHECK_ANSWERED,
    CHECK_CONFIRMED,
    OPEN_CHECK_STATES,
    LabelState,
    LifecycleRefused,
    label_state,
    open_checks,
)
from review.visibility import label_view, sees_all, visible_truth
from tests.conftest import make_user, ready_document
from tests.review.conftest import PAGES

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

LABELS = (DocType.PATHOLOGY, DocType.RADIOLOGY)
# One document: every operation acts on the same label, so each step is a transition of it.
DOCUMENTS = 1
_OUTCOMES: dict[str, pipeline.Outcome] = {}


def outcome_of(label: DocType) -> pipeline.Outcome:
    """The real verification chain's outcome for PAGES read as ``label`` (computed once)."""
    if label.value not in _OUTCOMES:
        output = clean_output(PAGES, label.value)
        assert output is not None
        _OUTCOMES[label.value] = pipeline.orchestrate(
            classify=lambda feedback: (output, 0),
            context=DocumentContext(pages=PAGES, min_dominant_confidence=0.6),
            preset=pipeline.PRESETS["clinical"],
            can_reask=False,
        )
    return _OUTCOMES[label.value]


def other_than(doc_type: str) -> DocType:
    return DocType.GENOMIC if doc_type != DocType.GENOMIC.value else DocType.CLINICAL_NOTE


class Lifecycle(RuleBasedStateMachine):
    users: dict[str, Any] = {}  # set by the test: three reviewers and an admin
    reached: Counter[str] = Counter()  # the transitions the examples took, over the whole test

    def __init__(self) -> None:
        super().__init__()
        # Each example runs in a savepoint rolled back at its end.
        self.atomic = transaction.atomic()
        self.atomic.__enter__()
        self.documents = [ready_document(*PAGES, sha="abcdef"[n]) for n in range(DOCUMENTS)]
        self.reviewers = [self.users[name] for name in ("rita", "omar", "uma")]
        self.admin = self.users["ada"]
        self.seen: dict[int, tuple[Any, ...]] = {}  # every version as first seen
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.step_events: list[tuple[str, dict[str, Any]]] = []
        events.published.connect(self._listen)

    def _listen(self, kind: str, data: dict[str, Any]) -> None:
        self.events.append((kind, data))
        self.step_events.append((kind, data))

    def teardown(self) -> None:
        events.published.disconnect(self._listen)
        transaction.set_rollback(True)
        self.atomic.__exit__(None, None, None)

    # -- operations ------------------------------------------------------------------------

    @initialize(accepted=st.booleans(), audited=st.booleans(), label=st.sampled_from(LABELS))
    def first_run(self, accepted: bool, audited: bool, label: DocType) -> None:
        self.run(0, accepted, audited, label)

    def _has(self, model: Any, **filters: Any) -> bool:
        return bool(model.objects.filter(document=self.documents[0], **filters).exists())

    @rule(
        n=st.integers(0, DOCUMENTS - 1),
        accepted=st.booleans(),
        audited=st.booleans(),
        label=st.sampled_from(LABELS),
    )
    def run(self, n: int, accepted: bool, audited: bool, label: DocType) -> None:
        """A run (a first one or a re-run) hands its outcome to review."""
        self.step_events = []
        document = self.documents[n]
        before = label_state(document)
        versions = GroundTruth.objects.filter(document=document).count()
        packets = ReviewPacket.objects.filter(document=document).count()
        open_packet = ReviewPacket.objects.filter(
            document=document, status__in=ReviewPacket.OPEN_STATUSES
        ).exists()
        run = Run.objects.create(
            document=document,
            preset="clinical",
            classifier="offline",
            model="test",
            prompt_version="test",
            status=Run.Status.COMPLETED,
            final_decision="AUTO_ACCEPT" if accepted else "ESCALATE_TO_SME",
            attempts_count=1,
        )
        with override_settings(AUDIT_SAMPLE_RATE=1.0 if audited else 0.0), transaction.atomic():
            result = decisions.run_outcome_record(
                run=run,
                outcome=outcome_of(label),
                accepted=accepted,
                comparison={"available": False},
            )
        kept = (
            before in (*OPEN_CHECK_STATES, LabelState.CONFIRMED, LabelState.DECIDED)
            or open_packet
            or (before == LabelState.WITHDRAWN)
        )
        now = GroundTruth.objects.filter(document=document).count()
        if kept:
            # A run never moves a label a clinician decided or a check holds or confirmed.
            assert result.get("standing_kept") is True
            assert now == versions
            assert ReviewPacket.objects.filter(document=document).count() == packets
            if before in OPEN_CHECK_STATES:
                assert result.get("state") == GroundTruth.State.PROVISIONAL
                self.reached["run_compared_under_check"] += 1
        elif accepted:
            assert now == versions + 1
            assert result["state"] == (
                GroundTruth.State.PROVISIONAL if audited else GroundTruth.State.FINAL
            )
        else:
            assert ReviewPacket.objects.filter(document=document).count() == packets + 1

    @precondition(lambda self: self._has(ReviewPacket, status__in=ReviewPacket.OPEN_STATUSES))
    @rule(
        n=st.integers(0, DOCUMENTS - 1),
        who=st.integers(0, 2),
        correct=st.booleans(),
        to=st.sampled_from((DocType.RADIOLOGY, DocType.GENOMIC)),
    )
    def decide(self, n: int, who: int, correct: bool, to: DocType) -> None:
        self.step_events = []
        packet = ReviewPacket.objects.filter(
            document=self.documents[n], status__in=ReviewPacket.OPEN_STATUSES
        ).first()
        if packet is None:
            return
        user = self.reviewers[who]
        before = label_state(packet.document)
        decisions.packet_open(packet=packet, user=user)
        correction = correction_build(segments=[(1, 2, to)]) if correct else None
        try:
            review = decisions.review_submit(
                packet_id=packet.pk, reviewer=user, correction=correction, notes=""
            )
        except ReviewRefused:
            decisions.packet_release(packet=packet, user=user)
            return
        assert before not in OPEN_CHECK_STATES  # no decision lands on a label under a check
        self.reached["decision"] += 1
        checked = SecondReview.objects.filter(first_review=review).exists()
        assert review.ground_truth.state == (
            GroundTruth.State.PROVISIONAL if checked else GroundTruth.State.FINAL
        )

    @precondition(
        lambda self: Review.objects.filter(
            packet__document=self.documents[0], withdrawn_at__isnull=True
        ).exists()
    )
    @rule(who=st.integers(0, 2))
    def undo(self, who: int) -> None:
        self.step_events = []
        deciders = list(
            Review.objects.filter(
                packet__document=self.documents[0], withdrawn_at__isnull=True
            ).values_list("reviewer_id", flat=True)
        )
        # Mostly the decider (the interesting case), sometimes someone else.
        user = next((u for u in self.reviewers if u.pk in deciders), self.reviewers[who])
        if who == 2:
            user = self.reviewers[(self.reviewers.index(user) + 1) % 3]
        last = (
            Review.objects.filter(reviewer=user, withdrawn_at__isnull=True)
            .select_related("ground_truth", "packet")
            .order_by("-finished_at")
            .first()
        )
        before = label_state(last.packet.document_id) if last else None
        standing = last is not None and not hasattr(last.ground_truth, "superseded_by")
        try:
            decisions.review_undo(reviewer=user)
        except LifecycleRefused as refused:
            self.reached[f"undo_refused_{refused.code}"] += 1
            if before == LabelState.CONFIRMED:
                assert refused.code in (CHECK_CONFIRMED, "decision_superseded")
            if before == LabelState.UNDER_ADJUDICATION:
                assert refused.code in (CHECK_ANSWERED, "decision_superseded")
            return
        except ReviewRefused:
            return
        assert last is not None and standing
        self.reached[f"undo_from_{before}"] += 1
        # Never taken back once a check confirmed it or the second reviewer answered.
        assert before in (LabelState.DECIDED, LabelState.UNDER_SECOND_REVIEW), before

    @precondition(lambda self: self._has(ReviewPacket, status=ReviewPacket.Status.COMPLETED))
    @rule(n=st.integers(0, DOCUMENTS - 1))
    def admin_reopen(self, n: int) -> None:
        self.step_events = []
        packet = (
            ReviewPacket.objects.filter(
                document=self.documents[n], status=ReviewPacket.Status.COMPLETED
            )
            .order_by("-pk")
            .first()
        )
        if packet is None:
            return
        try:
            decisions.packet_reopen(packet=packet, user=self.admin)
        except ReviewRefused:
            return
        self.reached["admin_reopen"] += 1

    @precondition(lambda self: self._has(AuditSample, status=AuditSample.Status.PENDING))
    @rule(n=st.integers(0, DOCUMENTS - 1), who=st.integers(0, 2), agree=st.booleans())
    def audit_answer(self, n: int, who: int, agree: bool) -> None:
        self.step_events = []
        sample = AuditSample.objects.filter(
            document=self.documents[n], status=AuditSample.Status.PENDING
        ).first()
        if sample is None:
            return
        machine = machine_segmentation(sample)
        segments = machine if agree else [(1, 2, other_than(machine[0][2].value))]
        audits.audit_submit(sample_id=sample.pk, auditor=self.reviewers[who], segments=segments)
        state = label_state(self.documents[n])
        assert state == (LabelState.CONFIRMED if agree else LabelState.UNDER_SECOND_REVIEW)
        self.reached[f"audit_agrees_{agree}"] += 1

    @precondition(lambda self: self._has(SecondReview, status=SecondReview.Status.AWAITING))
    @rule(n=st.integers(0, DOCUMENTS - 1), who=st.integers(0, 2), agree=st.booleans())
    def second_answer(self, n: int, who: int, agree: bool) -> None:
        self.step_events = []
        second = SecondReview.objects.filter(
            document=self.documents[n], status=SecondReview.Status.AWAITING
        ).first()
        if second is None:
            return
        first = segmentation_from_json(second.first_segments)
        segments = first if agree else [(1, 2, other_than(second.first_type))]
        try:
            second_review.second_review_submit(
                second_id=second.pk, reviewer=self.reviewers[who], segments=segments
            )
        except ReviewRefused:
            assert self.reviewers[who].pk == second.first_by_id
            return
        state = label_state(self.documents[n])
        assert state == (LabelState.CONFIRMED if agree else LabelState.UNDER_ADJUDICATION)
        self.reached[f"second_agrees_{agree}"] += 1

    @precondition(lambda self: self._has(SecondReview, status=SecondReview.Status.ADJUDICATION))
    @rule(n=st.integers(0, DOCUMENTS - 1), who=st.integers(0, 3), take_first=st.booleans())
    def adjudicate(self, n: int, who: int, take_first: bool) -> None:
        self.step_events = []
        second = SecondReview.objects.filter(
            document=self.documents[n], status=SecondReview.Status.ADJUDICATION
        ).first()
        if second is None:
            return
        user = (*self.reviewers, self.admin)[who]
        chosen = second.first_segments if take_first else second.second_segments
        try:
            second_review.adjudicate(
                second_id=second.pk, user=user, segments=segmentation_from_json(chosen)
            )
        except ReviewRefused:
            assert user.pk in (second.first_by_id, second.second_reviewer_id)
            return
        assert label_state(self.documents[n]) == LabelState.CONFIRMED
        self.reached["adjudicated"] += 1

    @precondition(lambda self: label_state(self.documents[0]) == LabelState.DECIDED)
    @rule(n=st.integers(0, DOCUMENTS - 1))
    def label_issue(self, n: int) -> None:
        """The learning loop finds the label likely wrong: a blind re-check of a decision."""
        self.step_events = []
        before = label_state(self.documents[n])
        opened = second_review.label_issue_recheck([(str(self.documents[n].pk), "", "", 0.9)])
        if opened:
            assert before == LabelState.DECIDED
            assert label_state(self.documents[n]) == LabelState.UNDER_SECOND_REVIEW
            self.reached["label_issue_recheck"] += 1

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def versions_are_appended_and_one_stands(self) -> None:
        for document in self.documents:
            versions = list(GroundTruth.objects.filter(document=document).order_by("version"))
            assert [v.version for v in versions] == list(range(1, len(versions) + 1))
            for earlier, later in itertools.pairwise(versions):
                assert later.supersedes_id == earlier.pk
            for v in versions:  # nothing but the state ever changes
                fixed = (v.version, v.source, v.dominant_type, json.dumps(v.classification))
                assert self.seen.setdefault(v.pk, fixed) == fixed
            if not versions:
                continue
            standing = versions[-1]
            # Provisional iff a check is open on it (so no final version under a check).
            check = open_checks(document.pk)
            assert (standing.state == GroundTruth.State.PROVISIONAL) == bool(check), (
                standing.state,
                check,
            )
            # At most one check at a time, and only on the standing version.
            assert (
                SecondReview.objects.filter(
                    document=document, status__in=SecondReview.OPEN_STATUSES
                ).count()
                + AuditSample.objects.filter(
                    document=document, status=AuditSample.Status.PENDING
                ).count()
                <= 1
            )
            pending = AuditSample.objects.filter(
                document=document, status=AuditSample.Status.PENDING
            ).first()
            if pending is not None:
                assert pending.accepted_truth_id == standing.pk

    @invariant()
    def webhooks_follow_the_state(self) -> None:
        for kind, data in self.step_events:
            if data.get("state") == GroundTruth.State.PROVISIONAL:
                # A label under a blind check never leaves in an event.
                assert "dominant_type" not in data and "outcome" not in data, (kind, data)
                assert "source" not in data
        for document in self.documents:
            standing = GroundTruth.objects.filter(document=document).order_by("-version").first()
            changes = [
                d
                for kind, d in self.events
                if kind == "ground_truth.changed" and d["document_id"] == str(document.pk)
            ]
            if standing is None:
                assert not changes
                continue
            last = changes[-1]  # the receivers' view is the standing version, as it is now
            assert (last["version"], last["state"]) == (standing.version, standing.state)
            if standing.state == GroundTruth.State.FINAL:
                assert last["dominant_type"] == standing.dominant_type

    @invariant()
    def each_role_sees_what_the_state_allows(self) -> None:
        for document in self.documents:
            state = label_state(document)
            records = GroundTruth.objects.filter(document=document)
            participants = {
                p
                for s in SecondReview.objects.filter(
                    document=document, status__in=SecondReview.OPEN_STATUSES
                )
                for p in (s.first_by_id, s.second_reviewer_id)
            }
            for user in (*self.reviewers, self.admin):
                view = label_view(user, document)
                if sees_all(user):
                    assert view.everything
                    assert visible_truth(user, records).count() == records.count()
                elif state in OPEN_CHECK_STATES and user.pk not in participants:
                    # Blind: nothing of the label under the check.
                    assert not view.human
                    assert not visible_truth(user, records).exists()
                elif state not in OPEN_CHECK_STATES:
                    assert view.everything
                    assert visible_truth(user, records).count() == records.count()

    @invariant()
    def exports_hold_the_standing_labels_by_state(self) -> None:
        import pyarrow.parquet as pq

        standing = {}
        for document in self.documents:
            top = GroundTruth.objects.filter(document=document).order_by("-version").first()
            if top is not None and top.source != GroundTruth.Source.WITHDRAWN:
                standing[str(document.pk)] = top
        every = ExportFilter()
        lines = export_bytes(every.selection(), fmt="jsonl", export_filter=every, site_url="")
        rows = [json.loads(line) for line in lines.decode().splitlines() if line.strip()]
        assert {r["document_id"]: (r["version"], r["state"]) for r in rows} == {
            d: (t.version, t.state) for d, t in standing.items()
        }
        final = ExportFilter(state=GroundTruth.State.FINAL)
        data = export_bytes(final.selection(), fmt="parquet", export_filter=final, site_url="")
        table = pq.read_table(io.BytesIO(data)).to_pylist()
        assert {r["document_id"]: (r["version"], r["state"]) for r in table} == {
            d: (t.version, t.state)
            for d, t in standing.items()
            if t.state == GroundTruth.State.FINAL
        }


# Transitions the "ci" profile's examples must reach (it is derandomized: the same every run),
# so that the invariants are checked on the states that matter.
REACHED = ("decision", "run_compared_under_check", "second_agrees_True", "audit_agrees_False")


def test_ground_truth_lifecycle_holds_under_random_interleavings(
    django_user_model, roles, settings
):
    settings.SECOND_REVIEW_ON_CORRECTION = True
    settings.SECOND_REVIEW_ON_BLOCKER = False
    settings.SECOND_REVIEW_RATE = 0.0
    Lifecycle.users = {
        "rita": make_user(django_user_model, roles, "rita", REVIEWERS),
        "omar": make_user(django_user_model, roles, "omar", REVIEWERS),
        "uma": make_user(django_user_model, roles, "uma", REVIEWERS),
        "ada": make_user(django_user_model, roles, "ada", ADMINS, is_staff=True),
    }
    from hypothesis import settings as hypothesis_settings

    # Examples as the profile says ("ci": 25); steps few enough for the CI's 10 minutes.
    Lifecycle.reached = Counter()
    run_state_machine_as_test(
        Lifecycle, settings=hypothesis_settings(hypothesis_settings(), stateful_step_count=14)
    )
    print(dict(Lifecycle.reached))
    # The examples reached the transitions that matter (the profile is derandomized).
    for transition in REACHED:
        assert Lifecycle.reached[transition], (transition, dict(Lifecycle.reached))
