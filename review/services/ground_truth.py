"""Ground truth's one state machine: every write of a ``GroundTruth`` row goes through this
module, which knows the label's state and every transition; anything else is a refusal with a
code (``LifecycleRefused``), never a silent write.

A document's label is in one of these states (``label_state``; docs/review.md has the table):

- ``none``: no version yet;
- ``machine_accepted``: the standing version is an auto-accepted answer, final by policy (no
  check was asked);
- ``decided``: a clinician's decision, final (no check was asked);
- ``under_audit`` / ``under_second_review`` / ``under_adjudication``: a check is open on the
  standing version, which is provisional until it ends;
- ``confirmed``: a check ended on the standing version (an audit agreed, a second review
  agreed, an adjudication settled it): final, and checked;
- ``withdrawn``: a decision was taken back and nothing stands until it is decided again;
- ``retained``: the document was deleted under the retention policy; its versions are kept
  de-identified and nothing changes them again.

Versions are appended, never overwritten; the state of a version changes only between
provisional and final (``provisional`` iff a check is open on it), and its content only once,
when retention de-identifies it. A run of a document whose label a clinician decided or a check
holds records a comparison (``RunComparison``, decisions.run_outcome_record) and writes nothing
here. Webhook events follow the state: a provisional version's event carries no label."""

from __future__ import annotations

from typing import Any

from django.db import models

from core import events
from documents.models import Document
from engine.schemas import ClassificationOutput
from reliability.models import Run
from review.corrections import (
    Segmentation,
    corrected_output,
    correction_build,
    correction_fields,
)
from review.models import AuditSample, GroundTruth, SecondReview
from review.retained import classification_retained, fields_retained
from review.selectors import ground_truth_fields
from review.services import ReviewRefused


class LabelState(models.TextChoices):
    NONE = "none", "No label yet"
    MACHINE_ACCEPTED = "machine_accepted", "Accepted from the machine (final by policy)"
    DECIDED = "decided", "Decided by a clinician (final)"
    UNDER_AUDIT = "under_audit", "Provisional: a blind audit is open"
    UNDER_SECOND_REVIEW = "under_second_review", "Provisional: a second review is open"
    UNDER_ADJUDICATION = "under_adjudication", "Provisional: an adjudication is open"
    CONFIRMED = "confirmed", "Final: a check confirmed or settled it"
    WITHDRAWN = "withdrawn", "Withdrawn: a decision was taken back"
    RETAINED = "retained", "Retained de-identified (document deleted)"


class Transition(models.TextChoices):
    RUN_ACCEPTED = "run_accepted", "A run's answer accepted"
    RUN_ESCALATED = "run_escalated", "A run escalated to a packet"
    RUN_COMPARED = "run_compared", "A run compared with the standing label (nothing changes)"
    DECISION = "decision", "A clinician's decision"
    UNDO = "undo", "A reviewer took back their decision"
    ADMIN_REOPEN = "admin_reopen", "An admin reopened a decided packet"
    AUDIT_DRAWN = "audit_drawn", "A blind audit drawn on an accepted answer"
    AUDIT_AGREED = "audit_agreed", "The auditor agreed"
    AUDIT_DISAGREED = "audit_disagreed", "The auditor disagreed (a second review opens)"
    SECOND_REVIEW_AGREED = "second_review_agreed", "The second reviewer agreed"
    SECOND_REVIEW_DISAGREED = "second_review_disagreed", "The second reviewer disagreed"
    ADJUDICATED = "adjudicated", "An adjudicator settled a disagreement"
    LABEL_ISSUE_RECHECK = "label_issue_recheck", "The learning loop asked for a blind re-check"
    RETENTION = "retention", "The document was deleted; its versions kept de-identified"


S, T = LabelState, Transition
OPEN_CHECK_STATES = (S.UNDER_AUDIT, S.UNDER_SECOND_REVIEW, S.UNDER_ADJUDICATION)
_SETTLED = (S.NONE, S.MACHINE_ACCEPTED, S.DECIDED, S.CONFIRMED, S.WITHDRAWN)

# Every legal (state, transition). A transition missing from its state's set is refused, with
# the code of REFUSAL_CODES for that state (or "illegal_transition").
TRANSITIONS: dict[str, frozenset[str]] = {
    S.NONE: frozenset({T.RUN_ACCEPTED, T.RUN_ESCALATED, T.RUN_COMPARED, T.DECISION, T.RETENTION}),
    S.MACHINE_ACCEPTED: frozenset(
        {T.RUN_ACCEPTED, T.RUN_ESCALATED, T.RUN_COMPARED, T.DECISION, T.AUDIT_DRAWN, T.RETENTION}
    ),
    S.DECIDED: frozenset(
        {T.RUN_COMPARED, T.UNDO, T.ADMIN_REOPEN, T.LABEL_ISSUE_RECHECK, T.RETENTION}
    ),
    # A check is open: only its own answer (or the decision taken back, which cancels a check
    # of a decision) moves the label; a run is compared and changes nothing.
    S.UNDER_AUDIT: frozenset({T.RUN_COMPARED, T.AUDIT_AGREED, T.AUDIT_DISAGREED}),
    # Before the second answer, the decider may still take their decision back: the check is
    # cancelled with it and their next decision is checked again (rule "reopened"). Once the
    # second reviewer answered (adjudication) or the check confirmed it, it is refused.
    S.UNDER_SECOND_REVIEW: frozenset(
        {
            T.RUN_COMPARED,
            T.SECOND_REVIEW_AGREED,
            T.SECOND_REVIEW_DISAGREED,
            T.UNDO,
            T.ADMIN_REOPEN,
        }
    ),
    S.UNDER_ADJUDICATION: frozenset({T.RUN_COMPARED, T.ADJUDICATED, T.ADMIN_REOPEN}),
    # Checked: a run never replaces it, its reviewer may not take it back; an admin may reopen
    # the packet, and the next decision on it goes through a second review again.
    S.CONFIRMED: frozenset({T.RUN_COMPARED, T.ADMIN_REOPEN, T.RETENTION}),
    S.WITHDRAWN: frozenset({T.RUN_COMPARED, T.DECISION, T.RETENTION}),
    S.RETAINED: frozenset(),
}

# Refusal codes, by the state that refused.
CHECK_OPEN = "check_open"  # a check is open on the label: only its answer moves it
CHECK_CONFIRMED = "check_confirmed"  # a check confirmed the label: not taken back by its decider
DOCUMENT_RETAINED = "document_retained"  # the document was deleted: its label is frozen
ILLEGAL_TRANSITION = "illegal_transition"  # anything else not in TRANSITIONS
CHECK_ANSWERED = "check_answered"  # the second reviewer answered: the decision is not undone
REFUSAL_CODES: dict[str, str] = {
    **{state: CHECK_OPEN for state in OPEN_CHECK_STATES},
    S.CONFIRMED: CHECK_CONFIRMED,
    S.RETAINED: DOCUMENT_RETAINED,
}
REFUSAL_MESSAGES: dict[str, str] = {
    CHECK_OPEN: "A check of this document's label is open ({state}): only its answer can change "
    "the label now.",
    CHECK_ANSWERED: "The second reviewer has answered this decision: it waits for adjudication "
    "and can no longer be undone (an admin can reopen the packet).",
    CHECK_CONFIRMED: "A check has confirmed this label: it can no longer be undone (an admin "
    "can reopen the packet; the next decision on it then goes through a second review).",
    DOCUMENT_RETAINED: "This document was deleted under the retention policy: its label is kept "
    "as it was.",
    ILLEGAL_TRANSITION: "This label cannot change that way now ({transition} from {state}).",
}


class LifecycleRefused(ReviewRefused):
    """An illegal transition of a document's label. ``code`` is one of the codes above;
    ``extra`` carries the state and the transition asked."""


def open_checks(document_id: Any, *, excluding: SecondReview | None = None) -> str:
    """The open check on ``document_id``'s label, as a state (or "" when none): a pending
    blind audit, a second review awaiting its answer, or one awaiting adjudication.
    ``excluding``: the check whose answer is being recorded."""
    if AuditSample.objects.filter(
        document_id=document_id, status=AuditSample.Status.PENDING
    ).exists():
        return S.UNDER_AUDIT
    seconds = SecondReview.objects.filter(
        document_id=document_id, status__in=SecondReview.OPEN_STATUSES
    )
    if excluding is not None:
        seconds = seconds.exclude(pk=excluding.pk)
    statuses = set(seconds.values_list("status", flat=True))
    if SecondReview.Status.ADJUDICATION in statuses:
        return S.UNDER_ADJUDICATION
    if statuses:
        return S.UNDER_SECOND_REVIEW
    return ""


def _confirmed(truth: GroundTruth) -> bool:
    """A check ended on ``truth`` in its favour (or settled on it)."""
    if AuditSample.objects.filter(
        accepted_truth=truth, status=AuditSample.Status.COMPLETED, agrees=True
    ).exists():
        return True
    return SecondReview.objects.filter(
        final_truth=truth,
        status__in=(SecondReview.Status.AGREED, SecondReview.Status.ADJUDICATED),
    ).exists()


def label_state(
    document: Any,
    *,
    standing: GroundTruth | None = None,
    excluding: SecondReview | None = None,
) -> str:
    """The state of ``document``'s label now (a LabelState). ``standing``: its newest
    version when the caller holds it already (locked)."""
    document_id = getattr(document, "pk", document)
    if isinstance(document, Document):
        deleted = document.is_deleted
    else:
        deleted = Document.objects.filter(pk=document_id, status=Document.Status.DELETED).exists()
    if deleted:
        return S.RETAINED
    check = open_checks(document_id, excluding=excluding)
    if check:
        return check
    if standing is None:
        standing = GroundTruth.objects.filter(document_id=document_id).order_by("-version").first()
    if standing is None:
        return S.NONE
    if standing.source == GroundTruth.Source.WITHDRAWN:
        return S.WITHDRAWN
    if _confirmed(standing):
        return S.CONFIRMED
    if standing.source == GroundTruth.Source.AUTO_ACCEPTED:
        return S.MACHINE_ACCEPTED
    return S.DECIDED


def transition_check(
    *,
    document: Any,
    transition: str,
    standing: GroundTruth | None = None,
    excluding: SecondReview | None = None,
) -> str:
    """Refuse ``transition`` unless it is legal from ``document``'s state (LifecycleRefused
    with the state's code); returns the state it leaves."""
    state = label_state(document, standing=standing, excluding=excluding)
    if transition not in TRANSITIONS[state]:
        code = REFUSAL_CODES.get(state, ILLEGAL_TRANSITION)
        if state == S.UNDER_ADJUDICATION and transition == T.UNDO:
            code = CHECK_ANSWERED
        raise LifecycleRefused(
            REFUSAL_MESSAGES[code].format(
                state=S(state).label.lower(), transition=T(transition).label.lower()
            ),
            code=code,
            extra={"state": str(state), "transition": str(transition)},
        )
    return state


def _state_now(document: Any, *, excluding: SecondReview | None = None) -> str:
    """A version's state: provisional iff a check is open on the document's label."""
    return (
        GroundTruth.State.PROVISIONAL
        if open_checks(getattr(document, "pk", document), excluding=excluding)
        else GroundTruth.State.FINAL
    )


# -- writes: every GroundTruth row is written here ------------------------------------------------


def ground_truth_record(
    *,
    document: Document,
    run: Run | None,
    output: ClassificationOutput,
    source: str,
    state: str = GroundTruth.State.FINAL,
    reviewer: Any | None = None,
    field_corrections: dict[str, Any] | None = None,
    fields: list[dict[str, Any]] | None = None,
    reason: str = "",
    note: str = "",
    transition: str = "",
) -> GroundTruth:
    """Append a new version by ``transition`` (by default: a run's accepted answer for an
    auto-accepted source, else a clinician's decision); an earlier version is superseded,
    never overwritten. ``state`` is provisional when the transition opens a check on it.
    ``fields`` (a correction's re-extracted fields) replace the run's fields when given.
    Refused (LifecycleRefused) when the label's state does not allow the transition. Call
    inside a transaction."""
    transition = transition or (
        T.RUN_ACCEPTED if source == GroundTruth.Source.AUTO_ACCEPTED else T.DECISION
    )
    latest = GroundTruth.objects.latest_locked(document)
    transition_check(document=document, transition=transition, standing=latest)
    truth = GroundTruth.objects.create(
        document=document,
        source=source,
        state=state,
        dominant_type=output.dominant_type_overall.value,
        classification=output.model_dump(mode="json"),
        fields=fields
        if fields is not None
        else ground_truth_fields(run, field_corrections)
        if run
        else [],
        reason=reason,
        note=note,
        reviewer=reviewer,
        run=run,
        model=run.model if run else "",
        prompt_version=run.prompt_version if run else "",
        version=(latest.version + 1) if latest else 1,
        supersedes=latest,
    )
    ground_truth_changed(truth, supersedes=latest)
    return truth


def ground_truth_hold(truth: GroundTruth, *, transition: str = T.AUDIT_DRAWN) -> None:
    """A check is opened on ``truth`` after it was written (an accepted run drawn for a blind
    audit; a blind re-check of a decision the learning loop doubts): it is provisional until
    the check ends. Call before the check's row is written, inside its transaction."""
    transition_check(document=truth.document_id, transition=transition)
    if truth.state == GroundTruth.State.PROVISIONAL:
        return
    GroundTruth.objects.filter(pk=truth.pk).update(state=GroundTruth.State.PROVISIONAL)
    truth.state = GroundTruth.State.PROVISIONAL
    # Events follow the state: a receiver told this version was final hears it is not now.
    ground_truth_changed(truth, supersedes=truth.supersedes)


def ground_truth_settle(truth: GroundTruth, *, transition: str) -> None:
    """The check on ``truth`` ended in its favour (``transition``: an audit, a second review
    or an adjudication that agrees): it is final (announced with its labels). Call while the
    check is still open, inside the transaction that closes it."""
    transition_check(document=truth.document_id, transition=transition)
    if truth.state == GroundTruth.State.FINAL:
        return
    GroundTruth.objects.filter(pk=truth.pk).update(state=GroundTruth.State.FINAL)
    truth.state = GroundTruth.State.FINAL
    ground_truth_changed(truth, supersedes=truth.supersedes)


DECISION_SUPERSEDED = "decision_superseded"  # a newer version stands: the decision is history


def ground_truth_withdraw(*, decided: GroundTruth, user: Any, how: str) -> GroundTruth:
    """Take back the decision whose version is ``decided`` (``how``: "undone" by its
    reviewer, or "reopened" by an admin): a new version restores the one before it, or, with
    none, records that nothing stands (WITHDRAWN). An undo is refused once the second
    reviewer answered or a check confirmed the decision; before the answer, an undo (and an
    admin's reopening, always) cancels the open check (the caller cancels its row) and the
    packet's next decision is checked again. Inside the caller's transaction."""
    transition = T.UNDO if how == "undone" else T.ADMIN_REOPEN
    document = decided.document
    latest = GroundTruth.objects.latest_locked(document)
    if latest is None or latest.pk != decided.pk:
        raise LifecycleRefused(
            "Ground truth for this document has changed since this decision (version "
            f"{latest.version if latest else '?'} is newer); it can no longer be taken back.",
            code=DECISION_SUPERSEDED,
        )
    transition_check(document=document, transition=transition, standing=latest)
    previous = decided.supersedes
    who = user.get_full_name() or user.username
    verb = "undone" if how == "undone" else "reopened"
    if previous is not None and previous.source != GroundTruth.Source.WITHDRAWN:
        truth = GroundTruth.objects.create(
            document=document,
            source=previous.source,
            # Restored as final: the decision's own check ends with it, and no other check
            # can be open on a document while a decision of it stands.
            state=GroundTruth.State.FINAL,
            dominant_type=previous.dominant_type,
            classification=previous.classification,
            fields=previous.fields,
            reason=f"Version {decided.version} {verb} by {who}; version "
            f"{previous.version} stands again.",
            note=previous.note,
            reviewer=previous.reviewer,
            run=previous.run,
            model=previous.model,
            prompt_version=previous.prompt_version,
            version=decided.version + 1,
            supersedes=decided,
        )
    else:
        truth = GroundTruth.objects.create(
            document=document,
            source=GroundTruth.Source.WITHDRAWN,
            dominant_type="",
            classification={},
            fields=[],
            reason=f"Version {decided.version} {verb} by {who}; the packet is open again.",
            reviewer=user,
            run=decided.run,
            version=decided.version + 1,
            supersedes=decided,
        )
    ground_truth_changed(truth, supersedes=decided)
    return truth


def ground_truth_retain(*, document: Document) -> int:
    """Retention deletes ``document``: every version is kept, de-identified (review.retained),
    its state and labels as they were. Refused while a check is open (retention holds such a
    document). Call inside the deletion's transaction, before the checks' rows go. Returns
    how many versions were kept."""
    transition_check(document=document, transition=T.RETENTION)
    versions = list(GroundTruth.objects.filter(document=document).order_by("version"))
    for truth in versions:
        truth.classification = classification_retained(truth.classification)
        truth.fields = fields_retained(truth.fields)
        truth.note = ""
    GroundTruth.objects.bulk_update(versions, ["classification", "fields", "note"])
    return len(versions)


def ground_truth_changed(truth: GroundTruth, *, supersedes: GroundTruth | None) -> None:
    """The webhook event of a new version, or of a version that became final. A provisional
    version is under a blind check: its type and source stay out of the payload until the
    check ends (an event with the state final carries them)."""
    data: dict[str, Any] = {
        "ground_truth_id": truth.pk,
        "document_id": str(truth.document_id),
        "version": truth.version,
        "state": truth.state,
        "supersedes_id": supersedes.pk if supersedes else None,
    }
    if truth.state == GroundTruth.State.FINAL:
        data.update(source=truth.source, dominant_type=truth.dominant_type)
    events.publish(events.Event.GROUND_TRUTH_CHANGED, data)


def segmentation_correction(segments: Segmentation) -> Any:
    """The correction that records ``segments`` (each document's pages and type), with shares
    that follow the page counts."""
    return correction_build(segments=list(segments))


def segmentation_truth(
    *,
    run: Run | None,
    document: Document,
    segments: Segmentation,
    fields: list[Any],
    reviewer: Any,
    reason: str,
    note: str,
    transition: str,
    state: str = GroundTruth.State.FINAL,
) -> GroundTruth:
    """Record a corrected version holding ``segments``, through the correction path, by
    ``transition`` (a second review or an adjudication). Call inside a transaction, with the
    fields extracted before it (segmentation_fields)."""
    return ground_truth_record(
        document=document,
        run=run,
        output=corrected_output(segmentation_correction(segments)),
        source=GroundTruth.Source.SME_CORRECTED,
        state=state,
        reviewer=reviewer,
        fields=fields,
        reason=reason,
        note=note,
        transition=transition,
    )


def segmentation_fields(
    *, run: Run | None, document: Document, segments: Segmentation
) -> list[Any]:
    """The fields of the document read with ``segments``. Slow with an LLM extractor: call
    outside transactions."""
    if run is None:
        return []
    return correction_fields(
        document=document,
        run_id=run.pk,
        preset=run.preset,
        corrections={},
        correction=segmentation_correction(segments),
    )
