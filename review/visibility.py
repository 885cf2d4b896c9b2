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

from django.conf import settings
from django.db.models import CharField, Exists, IntegerField, OuterRef, Q, QuerySet, Value

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


def _checks(user: Any, document: Any) -> tuple[QuerySet[AuditSample], QuerySet[SecondReview]]:
    """The open checks of ``document`` (a value or an ``OuterRef``) that hide its labels from
    ``user``: a pending blind audit, and open second reviews they take no part in (neither
    the first decider nor, once assigned, the second reviewer)."""
    audit = AuditSample.objects.filter(document=document, status=AuditSample.Status.PENDING)
    second = (
        SecondReview.objects.filter(document=document, status__in=SecondReview.OPEN_STATUSES)
        .exclude(first_by_id=user.pk)
        .exclude(second_reviewer_id=user.pk)
    )
    return audit, second


_BLIND_AUDIT = "blind-audit"  # a pending audit's row in label_view's read (no check's kind)
_NO_ONE = Value(None, IntegerField())  # an audit's row has no participants


def label_view(user: Any, document: Any) -> LabelView:
    """What ``user`` may see of ``document``'s labels now (the rule of ``blind_documents``,
    for one document). One read, however many checks are open: the pending audit, if any,
    and the open second reviews with their participants, as one UNION of two index ranges
    (cheaper to build than EXISTS subqueries, and one round trip instead of two)."""
    if sees_all(user):
        return ALL
    document_id = getattr(document, "pk", document)
    audit = (
        AuditSample.objects.filter(document_id=document_id, status=AuditSample.Status.PENDING)
        .order_by()
        .values_list(Value(_BLIND_AUDIT, CharField()), _NO_ONE, _NO_ONE)
    )
    seconds = (
        SecondReview.objects.filter(document_id=document_id, status__in=SecondReview.OPEN_STATUSES)
        .order_by()
        .values_list("kind", "first_by_id", "second_reviewer_id")
    )
    human = machine = True
    for kind, first_by, second_by in seconds.union(audit, all=True):
        if kind == _BLIND_AUDIT:
            return LabelView(human=False, machine=False, why=AUDIT_OPEN)
        if user.pk is not None and user.pk in (first_by, second_by):
            continue  # a participant: the first decider, or the second reviewer once assigned
        human = False
        if kind == SecondReview.Kind.AUDIT:
            machine = False
    if human and machine:
        return ALL
    return LabelView(human=human, machine=machine, why=SECOND_OPEN)


def blind_documents(user: Any) -> Q:
    """A filter on ``Document`` matching the documents whose labels ``user`` may not see at
    all (anything under an open check they take no part in). Empty for Admins."""
    if sees_all(user):
        return Q(pk__in=[])
    audit, second = _checks(user, OuterRef("pk"))
    return Q(Exists(audit)) | Q(Exists(second))


def blind_truth(user: Any) -> Q:
    """The same filter on ``GroundTruth`` (through its document)."""
    if sees_all(user):
        return Q(pk__in=[])
    audit, second = _checks(user, OuterRef("document"))
    return Q(Exists(audit)) | Q(Exists(second))


def visible_truth(user: Any, records: QuerySet[Any]) -> QuerySet[Any]:
    """Ground-truth records without those ``user`` may not see."""
    return records.exclude(blind_truth(user))


# -- the answers of a check ----------------------------------------------------------------------

MACHINE = "machine"  # an audit's accepted (machine) answer
FIRST = "first"  # the answer under check: a clinician's decision, or an auditor's answer
SECOND = "second"  # the second reviewer's answer
FINAL = "final"  # the adjudicated answer
EVERY_ANSWER = frozenset({MACHINE, FIRST, SECOND, FINAL})
NO_ANSWER: frozenset[str] = frozenset()
CHECK_HIDDEN = (
    "An independent check of this document is open: its answers are hidden until it ends."
)
OWN_ONLY = "An independent check of your answer is open: the other answer is hidden until it ends."


def may_adjudicate(user: Any) -> bool:
    """Admins adjudicate; with ADJUDICATION_BY_REVIEWERS, so may any reviewer (the services
    refuse both reviewers of the decision either way)."""
    return bool(
        user.has_perm("review.adjudicate_reviews")
        or (settings.ADJUDICATION_BY_REVIEWERS and user.has_perm("review.review_packets"))
    )


def second_answers(user: Any, second: SecondReview) -> frozenset[str]:
    """Which answers of a second review ``user`` may see, each with who gave it.

    While it is open: its first decider their own answer only (not whether, nor how, the
    second differs); the second reviewer, once they answered, both; an adjudicator who gave
    neither, both (to decide); anyone else none, not even its status. Once it ended: as the
    document's labels (another check may have opened since)."""
    if sees_all(user):
        return EVERY_ANSWER
    if second.status in SecondReview.OPEN_STATUSES:
        if second.second_reviewer_id is not None and user.pk == second.second_reviewer_id:
            return frozenset({FIRST, SECOND})
        if user.pk == second.first_by_id:
            return frozenset({FIRST})
        if second.status == SecondReview.Status.ADJUDICATION and may_adjudicate(user):
            return frozenset({FIRST, SECOND})
        return NO_ANSWER
    return EVERY_ANSWER if label_view(user, second.document_id).everything else NO_ANSWER


def audit_answers(user: Any, sample: AuditSample) -> frozenset[str]:
    """Which answers of an audit ``user`` may see: none while it is pending (the audit is
    blind, Admins' included); the auditor both theirs and the machine's; while a
    disagreement is checked, the people its second review allows; afterwards, as the
    document's labels."""
    if sample.status == AuditSample.Status.PENDING:
        return NO_ANSWER
    if sees_all(user) or user.pk == sample.auditor_id:
        return frozenset({MACHINE, FIRST})
    second = SecondReview.objects.filter(audit=sample).first()
    if second is not None and second.status in SecondReview.OPEN_STATUSES:
        seen = second_answers(user, second)
        return seen | {MACHINE} if seen else NO_ANSWER
    if label_view(user, sample.document_id).everything:
        return frozenset({MACHINE, FIRST})
    return NO_ANSWER


# -- every route has a decision --------------------------------------------------------------------

ASKS = "asks"  # shows labels, deciders or reasons only as this module allows
NO_LABELS = "no-labels"  # carries no label, decision, decider or reason of a document
ADMIN_SITE = "admin-site"  # Django admin: staff with the model's permission; Admins see all

# Every route of the URL configuration, by its pattern, with its decision. A route missing
# here fails tests/review/test_visibility_walk.py: a new page, partial or endpoint cannot be
# added without saying how it keeps blind checks blind. Django admin's routes are one
# decision ("admin/" below): its lists are reachable only with the model's permission, which
# the roles give to Admins alone (review.roles), who see every label.
ROUTES: dict[str, str] = {
    "": NO_LABELS,  # redirect to the document list
    "accounts/login/": NO_LABELS,
    "accounts/logout/": NO_LABELS,
    "accounts/password_change/": NO_LABELS,
    "accounts/password_change/done/": NO_LABELS,
    "accounts/password_reset/": NO_LABELS,
    "accounts/password_reset/done/": NO_LABELS,
    "accounts/reset/<uidb64>/<token>/": NO_LABELS,
    "accounts/reset/done/": NO_LABELS,
    "admin/": ADMIN_SITE,
    "admin/login/": NO_LABELS,
    "healthz": NO_LABELS,
    # single sign-on and provisioning: identities, never documents
    "oidc/authenticate/": NO_LABELS,
    "oidc/callback/": NO_LABELS,
    "scim/v2/^$": NO_LABELS,
    "scim/v2/^\\.search$": NO_LABELS,
    "scim/v2/^Users/\\.search$": NO_LABELS,
    "scim/v2/^Users(?:/(?P<uuid>[^/]+))?$": NO_LABELS,
    "scim/v2/^Groups/\\.search$": NO_LABELS,
    "scim/v2/^Groups(?:/(?P<uuid>[^/]+))?$": NO_LABELS,
    "scim/v2/^Me$": NO_LABELS,
    "scim/v2/^ServiceProviderConfig$": NO_LABELS,
    "scim/v2/^ResourceTypes(?:/(?P<uuid>[^/]+))?$": NO_LABELS,
    "scim/v2/^Schemas(?:/(?P<uuid>[^/]+))?$": NO_LABELS,
    "scim/v2/^Bulk$": NO_LABELS,
    "favicon.ico": NO_LABELS,
    # documents
    "documents/upload/": NO_LABELS,
    "documents/<uuid:document_id>/retry/": NO_LABELS,
    "documents/<uuid:document_id>/file/": NO_LABELS,  # the document itself, no label
    "documents/": ASKS,  # "Being checked" for a blind document, never its type
    "documents/<uuid:document_id>/": ASKS,
    "documents/<uuid:document_id>/pages/<int:number>.png": NO_LABELS,
    # runs
    "runs/new/<uuid:document_id>/": NO_LABELS,  # starts a run; answers with a redirect
    "runs/<int:run_id>/resume/": NO_LABELS,
    "runs/<int:run_id>/": ASKS,
    "runs/<int:run_id>/packet.json": ASKS,
    # review
    "review/": ASKS,
    "review/next/": NO_LABELS,
    "review/undo/": ASKS,
    "review/packets/<int:packet_id>/": ASKS,
    "review/packets/<int:packet_id>/validate/": ASKS,
    "review/packets/<int:packet_id>/correct/": ASKS,
    "review/packets/<int:packet_id>/release/": NO_LABELS,
    "review/packets/<int:packet_id>/preview/": ASKS,
    "review/packets/<int:packet_id>/skip/": NO_LABELS,
    "review/packets/<int:packet_id>/reopen/": ASKS,
    "review/packets/<int:packet_id>/fields/": ASKS,
    "review/packets/<int:packet_id>/pages/<int:number>.png": NO_LABELS,
    "review/export/": ASKS,
    "review/metrics/": ASKS,  # Admins' aggregate figures
    "review/me/": ASKS,
    "review/checks/": ASKS,  # no "why" a check exists but for Admins
    "review/audits/<int:sample_id>/": ASKS,
    "review/audits/<int:sample_id>/submit/": ASKS,
    "review/audits/<int:sample_id>/pages/<int:number>.png": NO_LABELS,
    "review/second/<int:second_id>/": ASKS,
    "review/second/<int:second_id>/submit/": ASKS,
    "review/second/<int:second_id>/adjudicate/": ASKS,
    "review/second/<int:second_id>/pages/<int:number>.png": NO_LABELS,
    # the JSON API (tokens: the documents their user submitted)
    "api/v1/": NO_LABELS,
    "api/v1/openapi.json": NO_LABELS,
    # POST submits (answers with the new document's id); GET lists documents with their
    # labels, each asked (api/listing.py), label filters leaving blind documents out.
    "api/v1/documents/": ASKS,
    "api/v1/documents/<uuidstr:document_id>/": ASKS,
    "api/v1/documents/<uuidstr:document_id>/result/": ASKS,  # 409 "checking" while blind
    "api/v1/documents/<uuidstr:document_id>/fhir/": ASKS,
    "api/v1/ground-truth/": ASKS,  # leaves out records under a check
    "api/v1/evaluate/": NO_LABELS,  # classifies the posted text; reads no stored label
}


def route_decision(pattern: str) -> str | None:
    """The decision registered for a route (its full pattern), or None."""
    if pattern in ROUTES:
        return ROUTES[pattern]
    if pattern.startswith("admin/") and pattern != "admin/login/":
        return ROUTES["admin/"]
    return None
