"""Blind audits of auto-accepted runs, second reviews and adjudication: the same workspace as
the packet page (the document with thumbnails and zoom, a decision panel that records where
each document starts and its type, the same keys). The blind pages show the document and ask
for the answer; the machine's answer (or the first reviewer's) is not in the page until the
answer is recorded. After a decision the next item of the same kind opens."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.http import HtmxHttpRequest, require_permission
from review import selectors
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


# -- audits -------------------------------------------------------------------------------------


def _get_sample(request: HtmxHttpRequest, sample_id: int) -> AuditSample:
    require_permission(request, "review.audit_runs")
    return get_object_or_404(
        AuditSample.objects.select_related("document", "auditor", "correction", "accepted_truth"),
        pk=sample_id,
    )


def _audit_context(
    request: HtmxHttpRequest, sample: AuditSample, form: SegmentationForm | None = None
) -> dict[str, Any]:
    document = sample.document
    form = form or SegmentationForm(page_count=document.page_count)
    blind = sample.status == AuditSample.Status.PENDING
    context = _workspace(document=document, image=("review:audit_page_image", sample.pk), form=form)
    context.update(
        kind="audit",
        title="Blind audit",
        item=sample,
        blind=blind,
        answering=blind,
        action=reverse("review:audit_submit", args=[sample.pk]),
        position=_position(selectors.audit_queue(), sample),
        next_url=_next_url("audit", request.user, exclude=sample.pk),
    )
    if not blind:
        machine = audit_services.machine_segmentation(sample)
        second = getattr(sample, "second_review", None)
        context["comparison"] = {
            "theirs_label": f"The machine ({classifier_name(sample.run.classifier)})",
            "theirs": segmentation_words(machine),
            "yours_label": f"Audit ({person_name(sample.auditor)})",
            "yours": segmentation_words(segmentation_from_json(sample.audited_segments)),
            "agrees": sample.agrees,
            "status": sample.get_verdict_display(),
            "second": second,
        }
    return context


@login_required
def audit_detail(request: HtmxHttpRequest, sample_id: int) -> HttpResponse:
    sample = _get_sample(request, sample_id)
    return render(request, "review/check.html", _audit_context(request, sample))


@login_required
@require_POST
def audit_submit(request: HtmxHttpRequest, sample_id: int) -> HttpResponse:
    sample = _get_sample(request, sample_id)
    form = SegmentationForm(request.POST, page_count=sample.document.page_count)
    if not form.is_valid():
        context = _audit_context(request, sample, form)
        return render(request, "review/check.html", context, status=400)
    try:
        sample = audit_services.audit_submit(
            sample_id=sample.pk,
            auditor=request.user,
            segments=form.segments(),
            note=form.cleaned_data["note"],
        )
    except ReviewRefused as refused:
        messages.error(request, refused.message)
        return redirect("review:audit", sample_id=sample.pk)
    recorded = segmentation_words(form.segments())
    if sample.agrees:
        messages.success(
            request,
            f"Audit recorded: {recorded}. It agrees with the accepted answer, which is final now.",
        )
    else:
        messages.warning(
            request,
            f"Audit recorded: {recorded}. It disagrees with the accepted answer: an "
            "independent second review checks it before anything changes; until then the "
            "accepted label stands, provisional.",
        )
    return redirect(_next_url("audit", request.user, exclude=sample.pk))


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


def _second_context(
    request: HtmxHttpRequest, second: SecondReview, form: SegmentationForm | None = None
) -> dict[str, Any]:
    user = request.user
    document = second.document
    is_first = second.first_by_id == user.pk
    awaiting = second.status == SecondReview.Status.AWAITING
    may_adjudicate = (
        second.status == SecondReview.Status.ADJUDICATION
        and user_may_adjudicate(user)
        and user.pk not in (second.first_by_id, second.second_reviewer_id)
    )
    form = form or SegmentationForm(page_count=document.page_count)
    context = _workspace(
        document=document, image=("review:second_page_image", second.pk), form=form
    )
    first = segmentation_from_json(second.first_segments)
    answer = segmentation_from_json(second.second_segments)
    kind = "adjudication" if may_adjudicate else "second"
    items = (
        selectors.adjudications_for(user) if may_adjudicate else selectors.second_reviews_for(user)
    )
    context.update(
        kind=kind,
        title="Adjudicate a disagreement" if may_adjudicate else "Second review",
        item=second,
        # Blind while the second answer is missing; the first decider knows their own answer.
        blind=awaiting and not is_first,
        answering=(awaiting and not is_first) or may_adjudicate,
        is_first=is_first,
        action=reverse("review:adjudicate", args=[second.pk])
        if may_adjudicate
        else reverse("review:second_submit", args=[second.pk]),
        may_adjudicate=may_adjudicate,
        position=_position(items, second),
        next_url=_next_url(kind, user, exclude=second.pk),
    )
    if may_adjudicate:
        context["answers"] = [
            {
                "key": "1",
                "label": f"First answer ({person_name(second.first_by)})",
                "words": segmentation_words(first),
                "segments": segmentation_json(first),
                "rows": _rows_json(first),
            },
            {
                "key": "2",
                "label": f"Second answer ({person_name(second.second_reviewer)})",
                "words": segmentation_words(answer),
                "segments": segmentation_json(answer),
                "rows": _rows_json(answer),
            },
        ]
    elif not context["blind"]:
        final = segmentation_from_json(second.final_segments)
        context["comparison"] = {
            "theirs_label": f"First answer ({person_name(second.first_by)})",
            "theirs": segmentation_words(first),
            "yours_label": f"Second answer ({person_name(second.second_reviewer)})",
            "yours": segmentation_words(answer) if answer else "—",
            "agrees": second.status == SecondReview.Status.AGREED if answer else None,
            "final": segmentation_words(final) if second.adjudicator_id else "",
            "adjudicator": person_name(second.adjudicator),
            "status": second.get_status_display(),
        }
    return context


@login_required
def second_detail(request: HtmxHttpRequest, second_id: int) -> HttpResponse:
    second = _get_second(request, second_id)
    return render(request, "review/check.html", _second_context(request, second))


@login_required
def second_page_image(request: HtmxHttpRequest, second_id: int, number: int) -> HttpResponseBase:
    second = _get_second(request, second_id)
    return page_png(request, second.document, number)


@login_required
@require_POST
def second_submit(request: HtmxHttpRequest, second_id: int) -> HttpResponse:
    second = _get_second(request, second_id)
    form = SegmentationForm(request.POST, page_count=second.document.page_count)
    if not form.is_valid():
        context = _second_context(request, second, form)
        return render(request, "review/check.html", context, status=400)
    try:
        second = second_services.second_review_submit(
            second_id=second.pk,
            reviewer=request.user,
            segments=form.segments(),
            note=form.cleaned_data["note"],
        )
    except ReviewRefused as refused:
        messages.error(request, refused.message)
        return redirect("review:second", second_id=second.pk)
    recorded = segmentation_words(form.segments())
    if second.status == SecondReview.Status.AGREED:
        messages.success(
            request,
            f"Second review recorded: {recorded}. It agrees with the first answer: the label "
            "is final.",
        )
    else:
        messages.warning(
            request,
            f"Second review recorded: {recorded}. It disagrees with the first answer: an "
            "adjudicator decides, seeing both.",
        )
    return redirect(_next_url("second", request.user, exclude=second.pk))


@login_required
@require_POST
def adjudicate(request: HtmxHttpRequest, second_id: int) -> HttpResponse:
    second = _get_second(request, second_id)
    if not user_may_adjudicate(request.user):
        require_permission(request, "review.adjudicate_reviews")
    form = SegmentationForm(request.POST, page_count=second.document.page_count)
    if not form.is_valid():
        context = _second_context(request, second, form)
        return render(request, "review/check.html", context, status=400)
    try:
        second = second_services.adjudicate(
            second_id=second.pk,
            user=request.user,
            segments=form.segments(),
            note=form.cleaned_data["note"],
        )
    except ReviewRefused as refused:
        messages.error(request, refused.message)
        return redirect("review:second", second_id=second.pk)
    truth = second.final_truth
    messages.success(
        request,
        f"Adjudicated: {segmentation_words(form.segments())}. Ground truth version "
        f"{truth.version if truth else '?'} is final.",
    )
    return redirect(_next_url("adjudication", request.user, exclude=second.pk))


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
