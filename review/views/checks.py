"""Blind audits of auto-accepted runs, second reviews and adjudication: the same workspace as
the packet page (the document with thumbnails and zoom, a decision panel that records where
each document starts and its type, the same keys). The blind pages show the document and ask
for the answer; the machine's answer (or the first reviewer's) is not in the page until the
answer is recorded. After a decision the next item of the same kind opens."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.http import HtmxHttpRequest, require_permission
from review import selectors, visibility
from review.corrections import (
    Segmentation,
    segmentation_from_json,
    segmentation_json,
    segmentation_words,
)
from review.forms import TYPE_CHOICES, TYPE_KEYS, SegmentationForm
from review.models import AuditSample, SecondReview
from review.services import ReviewRefused
from review.services import audits as audit_services
from review.services import second_review as second_services
from review.views.common import page_png, person_name, user_may_adjudicate
from review.visibility import sees_all
from review.words import classifier_name


@login_required
def checks(request: HtmxHttpRequest) -> HttpResponse:
    """What waits for this user: blind audits, second reviews and adjudications (and, for
    Admins, the audits whose disagreement is being checked)."""
    if not (
        request.user.has_perm("review.audit_runs") or request.user.has_perm("review.review_packets")
    ):
        require_permission(request, "review.audit_runs")
    user = request.user
    context = {
        "audits": selectors.audit_queue() if user.has_perm("review.audit_runs") else [],
        "seconds": selectors.second_reviews_for(user)
        if user.has_perm("review.review_packets")
        else [],
        "adjudications": selectors.adjudications_for(user) if user_may_adjudicate(user) else [],
        "disputes": selectors.audit_disputes() if sees_all(user) else [],
        "can_audit": user.has_perm("review.audit_runs"),
        "can_adjudicate": user_may_adjudicate(user),
        "show_why": sees_all(user),
    }
    return render(request, "review/checks.html", context)


def _rows_json(segments: Segmentation) -> str:
    return json.dumps([[a, t.value] for a, _, t in segments])


def _workspace(
    *,
    document: Any,
    image: tuple[str, int],
    form: SegmentationForm,
    initial: list[tuple[int, str]] | None = None,
) -> dict[str, Any]:
    workspace = selectors.document_workspace(document)
    for page in workspace["pages"]:
        page["image"] = reverse(image[0], args=[image[1], page["number"]])
    return {
        "document": document,
        **workspace,
        "form": form,
        "segment_rows": form.rows(initial),
        "type_keys": TYPE_KEYS,
        "type_choices": TYPE_CHOICES,
    }


def _position(items: list[Any], item: Any) -> dict[str, int]:
    ids = [i.pk for i in items]
    return {"at": ids.index(item.pk) + 1 if item.pk in ids else 0, "of": len(ids)}


# -- one check-view body for audits, second reviews and adjudications ---------------------------


@dataclass
class _Check:
    """What the page of one check needs, whatever its kind. ``seen`` is what the visibility
    rule lets this user see of its answers (review.visibility)."""

    kind: str  # "audit", "second" or "adjudication" (the page, the keys, the next item)
    item: AuditSample | SecondReview
    title: str
    image: str  # the route of its page images
    blind: bool  # answering without the answer under check
    answering: bool
    action: str
    queue: list[Any]
    seen: frozenset[str]
    url: str  # its page
    is_first: bool = False


def _audit_check(request: HtmxHttpRequest, sample: AuditSample) -> _Check:
    blind = sample.status == AuditSample.Status.PENDING
    return _Check(
        kind="audit",
        item=sample,
        title="Blind audit",
        image="review:audit_page_image",
        blind=blind,
        answering=blind,
        action=reverse("review:audit_submit", args=[sample.pk]),
        queue=selectors.audit_queue(),
        seen=visibility.audit_answers(request.user, sample),
        url=reverse("review:audit", args=[sample.pk]),
    )


def _second_check(request: HtmxHttpRequest, second: SecondReview) -> _Check:
    user = request.user
    is_first = second.first_by_id == user.pk
    awaiting = second.status == SecondReview.Status.AWAITING
    adjudicating = (
        second.status == SecondReview.Status.ADJUDICATION
        and visibility.may_adjudicate(user)
        and user.pk not in (second.first_by_id, second.second_reviewer_id)
    )
    return _Check(
        kind="adjudication" if adjudicating else "second",
        item=second,
        title="Adjudicate a disagreement" if adjudicating else "Second review",
        image="review:second_page_image",
        # Blind while the second answer is missing; the first decider knows their own answer.
        blind=awaiting and not is_first,
        answering=(awaiting and not is_first) or adjudicating,
        action=reverse(
            "review:adjudicate" if adjudicating else "review:second_submit", args=[second.pk]
        ),
        queue=selectors.adjudications_for(user)
        if adjudicating
        else selectors.second_reviews_for(user),
        seen=visibility.second_answers(user, second),
        url=reverse("review:second", args=[second.pk]),
        is_first=is_first,
    )


def _answer(key: str, label: str, segments: Segmentation) -> dict[str, Any]:
    return {
        "key": key,
        "label": label,
        "words": segmentation_words(segments),
        "segments": segmentation_json(segments),
        "rows": _rows_json(segments),
    }


def _comparison(check: _Check) -> dict[str, Any] | None:
    """The answers side by side, only those the visibility rule shows this user (the blind
    page and the pages of people a check leaves out show none)."""
    seen = check.seen
    if check.blind or not seen:
        return None
    item = check.item
    if isinstance(item, AuditSample):
        machine = audit_services.machine_segmentation(item)
        return {
            "theirs_label": f"The machine ({classifier_name(item.run.classifier)})",
            "theirs": segmentation_words(machine),
            "yours_label": f"Audit ({person_name(item.auditor)})",
            "yours": segmentation_words(segmentation_from_json(item.audited_segments)),
            "agrees": item.agrees,
            "status": item.get_verdict_display(),
        }
    first = segmentation_from_json(item.first_segments)
    if visibility.SECOND not in seen:
        # Their own answer only: neither the other answer, nor whether it differs.
        return {
            "theirs_label": f"First answer ({person_name(item.first_by)})",
            "theirs": segmentation_words(first),
            "note": visibility.OWN_ONLY,
        }
    answer = segmentation_from_json(item.second_segments)
    final = segmentation_from_json(item.final_segments)
    return {
        "theirs_label": f"First answer ({person_name(item.first_by)})",
        "theirs": segmentation_words(first),
        "yours_label": f"Second answer ({person_name(item.second_reviewer)})",
        "yours": segmentation_words(answer) if answer else "—",
        "agrees": item.status == SecondReview.Status.AGREED if answer else None,
        "final": segmentation_words(final) if item.adjudicator_id else "",
        "adjudicator": person_name(item.adjudicator),
        "status": item.get_status_display(),
    }


def _check_context(
    request: HtmxHttpRequest, check: _Check, form: SegmentationForm | None = None
) -> dict[str, Any]:
    item = check.item
    document = item.document
    form = form or SegmentationForm(page_count=document.page_count)
    context = _workspace(document=document, image=(check.image, item.pk), form=form)
    context.update(
        kind=check.kind,
        title=check.title,
        item=item,
        blind=check.blind,
        answering=check.answering,
        is_first=check.is_first,
        action=check.action,
        may_adjudicate=check.kind == "adjudication",
        position=_position(check.queue, item),
        next_url=_next_url(check.kind, request.user, exclude=item.pk),
        comparison=_comparison(check),
        hidden_note="" if check.blind or check.answering or check.seen else visibility.CHECK_HIDDEN,
    )
    if check.kind == "adjudication" and isinstance(item, SecondReview):
        context["answers"] = [
            _answer(
                "1",
                f"First answer ({person_name(item.first_by)})",
                segmentation_from_json(item.first_segments),
            ),
            _answer(
                "2",
                f"Second answer ({person_name(item.second_reviewer)})",
                segmentation_from_json(item.second_segments),
            ),
        ]
    return context


def _check_submit(
    request: HtmxHttpRequest,
    check: _Check,
    record: Callable[[Segmentation, str], tuple[int, str]],
) -> HttpResponse:
    """The one body of every check's answer: parse the panel, record it through the check's
    service (which says what it did), then the next item of the same kind."""
    item = check.item
    form = SegmentationForm(request.POST, page_count=item.document.page_count)
    if not form.is_valid():
        return render(
            request, "review/check.html", _check_context(request, check, form), status=400
        )
    try:
        level, said = record(form.segments(), form.cleaned_data["note"])
    except ReviewRefused as refused:
        messages.error(request, refused.message)
        return redirect(check.url)
    messages.add_message(request, level, said)
    return redirect(_next_url(check.kind, request.user, exclude=item.pk))


# -- audits -------------------------------------------------------------------------------------


def _get_sample(request: HtmxHttpRequest, sample_id: int) -> AuditSample:
    require_permission(request, "review.audit_runs")
    return get_object_or_404(
        AuditSample.objects.select_related(
            "document", "auditor", "correction", "accepted_truth", "run"
        ),
        pk=sample_id,
    )


@login_required
def audit_detail(request: HtmxHttpRequest, sample_id: int) -> HttpResponse:
    check = _audit_check(request, _get_sample(request, sample_id))
    return render(request, "review/check.html", _check_context(request, check))


@login_required
@require_POST
def audit_submit(request: HtmxHttpRequest, sample_id: int) -> HttpResponse:
    check = _audit_check(request, _get_sample(request, sample_id))

    def record(segments: Segmentation, note: str) -> tuple[int, str]:
        sample = audit_services.audit_submit(
            sample_id=check.item.pk, auditor=request.user, segments=segments, note=note
        )
        recorded = segmentation_words(segments)
        if sample.agrees:
            return messages.SUCCESS, (
                f"Audit recorded: {recorded}. It agrees with the accepted answer, which is "
                "final now."
            )
        return messages.WARNING, (
            f"Audit recorded: {recorded}. It disagrees with the accepted answer: an "
            "independent second review checks it before anything changes; until then the "
            "accepted label stands, provisional."
        )

    return _check_submit(request, check, record)


@login_required
def audit_page_image(request: HtmxHttpRequest, sample_id: int, number: int) -> HttpResponseBase:
    sample = _get_sample(request, sample_id)
    return page_png(request, sample.document, number)


# -- second reviews and adjudication -------------------------------------------------------------


def _get_second(request: HtmxHttpRequest, second_id: int) -> SecondReview:
    require_permission(request, "review.review_packets")
    return get_object_or_404(
        SecondReview.objects.select_related(
            "document", "first_by", "second_reviewer", "adjudicator", "audit"
        ),
        pk=second_id,
    )


@login_required
def second_detail(request: HtmxHttpRequest, second_id: int) -> HttpResponse:
    check = _second_check(request, _get_second(request, second_id))
    return render(request, "review/check.html", _check_context(request, check))


@login_required
def second_page_image(request: HtmxHttpRequest, second_id: int, number: int) -> HttpResponseBase:
    second = _get_second(request, second_id)
    return page_png(request, second.document, number)


@login_required
@require_POST
def second_submit(request: HtmxHttpRequest, second_id: int) -> HttpResponse:
    check = _second_check(request, _get_second(request, second_id))

    def record(segments: Segmentation, note: str) -> tuple[int, str]:
        second = second_services.second_review_submit(
            second_id=check.item.pk, reviewer=request.user, segments=segments, note=note
        )
        recorded = segmentation_words(segments)
        if second.status == SecondReview.Status.AGREED:
            return messages.SUCCESS, (
                f"Second review recorded: {recorded}. It agrees with the first answer: the "
                "label is final."
            )
        return messages.WARNING, (
            f"Second review recorded: {recorded}. It disagrees with the first answer: an "
            "adjudicator decides, seeing both."
        )

    return _check_submit(request, check, record)


@login_required
@require_POST
def adjudicate(request: HtmxHttpRequest, second_id: int) -> HttpResponse:
    second = _get_second(request, second_id)
    if not visibility.may_adjudicate(request.user):
        require_permission(request, "review.adjudicate_reviews")
    check = _second_check(request, second)
    check.kind = "adjudication"

    def record(segments: Segmentation, note: str) -> tuple[int, str]:
        done = second_services.adjudicate(
            second_id=second.pk, user=request.user, segments=segments, note=note
        )
        truth = done.final_truth
        return messages.SUCCESS, (
            f"Adjudicated: {segmentation_words(segments)}. Ground truth version "
            f"{truth.version if truth else '?'} is final."
        )

    return _check_submit(request, check, record)


def _next_url(kind: str, user: Any, *, exclude: int) -> str:
    """The next item of the same kind for this user, else the list of checks."""
    if kind == "audit":
        audits = [a for a in selectors.audit_queue() if a.pk != exclude]
        if audits:
            return reverse("review:audit", args=[audits[0].pk])
    else:
        items = (
            selectors.adjudications_for(user)
            if kind == "adjudication"
            else selectors.second_reviews_for(user)
        )
        items = [i for i in items if i.pk != exclude]
        if items:
            return reverse("review:second", args=[items[0].pk])
    return reverse("review:checks")
