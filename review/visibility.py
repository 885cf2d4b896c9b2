"""What a user may see of a document's labels: the one place that decides it.

Blind checks are blind as a property of the data, not of one template. While a document has
an open check, its labels are hidden on every page, endpoint, export and webhook from everyone
but the people the check allows:

- a blind audit of an accepted run (``AuditSample`` pending): the machine's answer (the run's
  classification, the auto-accepted ground truth) is hidden from everyone;
- a second review of a clinician's decision (``SecondReview`` of kind decision, awaiting the
  second answer or adjudication): the decision (its type, source, reviewer, reason and note)
  is hidden from everyone but the first decider and, once they have answered, the second
  reviewer;
- a second review of an audit that disagreed (kind audit): the auditor's answer and the
  machine's are hidden from everyone but the auditor and, once answered, the second reviewer.

Admins (``review.see_all_labels``) see everything: they adjudicate, export and answer for the
process. Every view and endpoint that shows a label asks ``label_view`` (one document) or
``blind_documents`` (a list, an export)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet

from review.models import AuditSample, SecondReview

SEE_ALL = "review.see_all_labels"


@dataclass(frozen=True)
class LabelView:
    human: bool = True  # clinicians' decisions: type, source, reviewer, reason, note
    machine: bool = True  # the machine's answer: the run's classification, accepted labels
    why: str = ""  # for the page, when something is hidden

    @property
    def everything(self) -> bool:
        return self.human and self.machine


ALL = LabelView()
AUDIT_OPEN = "A blind audit of this document is open: its labels are hidden until it ends."
SECOND_OPEN = (
    "An independent second review of this document is open: its decision is hidden until it ends."
)


def sees_all(user: Any) -> bool:
    return bool(user.has_perm(SEE_ALL))


def _participants(second: SecondReview) -> set[int]:
    people = {second.first_by_id}
    if second.second_reviewer_id is not None:
        people.add(second.second_reviewer_id)
    return {p for p in people if p is not None}


def label_view(user: Any, document: Any) -> LabelView:
    """What ``user`` may see of ``document``'s labels now."""
    if sees_all(user):
        return ALL
    document_id = getattr(document, "pk", document)
    if AuditSample.objects.filter(
        document_id=document_id, status=AuditSample.Status.PENDING
    ).exists():
        return LabelView(human=False, machine=False, why=AUDIT_OPEN)
    human = machine = True
    for second in SecondReview.objects.filter(
        document_id=document_id, status__in=SecondReview.OPEN_STATUSES
    ):
        if user.pk in _participants(second):
            continue
        human = False
        if second.kind == SecondReview.Kind.AUDIT:
            machine = False
    if human and machine:
        return ALL
    return LabelView(human=human, machine=machine, why=SECOND_OPEN)


def blind_documents(user: Any) -> Q:
    """A filter on ``Document`` matching the documents whose labels ``user`` may not see at
    all (anything under an open check they take no part in). Empty for Admins."""
    if sees_all(user):
        return Q(pk__in=[])
    audit = AuditSample.objects.filter(document=OuterRef("pk"), status=AuditSample.Status.PENDING)
    second = (
        SecondReview.objects.filter(document=OuterRef("pk"), status__in=SecondReview.OPEN_STATUSES)
        .exclude(first_by_id=user.pk)
        .exclude(second_reviewer_id=user.pk)
    )
    return Q(Exists(audit)) | Q(Exists(second))


def blind_truth(user: Any) -> Q:
    """The same filter on ``GroundTruth`` (through its document)."""
    if sees_all(user):
        return Q(pk__in=[])
    audit = AuditSample.objects.filter(
        document=OuterRef("document"), status=AuditSample.Status.PENDING
    )
    second = (
        SecondReview.objects.filter(
            document=OuterRef("document"), status__in=SecondReview.OPEN_STATUSES
        )
        .exclude(first_by_id=user.pk)
        .exclude(second_reviewer_id=user.pk)
    )
    return Q(Exists(audit)) | Q(Exists(second))


def visible_truth(user: Any, records: QuerySet[Any]) -> QuerySet[Any]:
    """Ground-truth records without those ``user`` may not see."""
    return records.exclude(blind_truth(user))
