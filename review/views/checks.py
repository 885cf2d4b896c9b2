"""Blind audits of auto-accepted runs, second reviews and adjudication. The blind pages show
the document and ask for its type; the machine's answer (or the first reviewer's) is not in
the page until the answer is recorded."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.http import HtmxHttpRequest, require_permission
from review import selectors
from review.forms import (
    BlindTypeForm,
)
from review.models import AuditSample, SecondReview
from review.services import ReviewRefused, audits, second_review
from review.views.common import (
    document_context,
    page_png,
    person_name,
    type_name,
    user_may_adjudicate,
)


@login_required
def checks(request: HtmxHttpRequest) -> HttpResponse:
    """What waits for this user: blind audits, second reviews and adjudications."""
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
        "can_audit": user.has_perm("review.audit_runs"),
        "can_adjudicate": user_may_adjudicate(user),
    }
    return render(request, "review/checks.html", context)


def _get_sample(request: HtmxHttpRequest, sample_id: int) -> AuditSample:
    require_permission(request, "review.audit_runs")
    return get_object_or_404(
        AuditSample.objects.select_related("document", "auditor", "correction"), pk=sample_id
    )


def _audit_context(sample: AuditSample, form: BlindTypeForm | None = None) -> dict[str, Any]:
    context = document_context(
        sample.document,
        lambda n: reverse("review:audit_page_image", args=[sample.pk, n]),
    )
    context.update(
        kind="audit",
        title="Audit an accepted document",
        item=sample,
        blind=sample.status == AuditSample.Status.PENDING,
        form=form or BlindTypeForm(),
        action=reverse("review:audit_submit", args=[sample.pk]),
    )
    if not context["blind"]:
        context["comparison"] = {
            "yours_label": "Audit",
            "yours": type_name(sample.audited_type),
            "theirs_label": "Machine (auto-accepted)",
            "theirs": type_name(sample.machine_type),
            "confidence": sample.confidence,
            "agrees": sample.agrees,
            "who": sample.auditor,
            "correction": sample.correction,
        }
    return context


@login_required
def audit_detail(request: HtmxHttpRequest, sample_id: int) -> HttpResponse:
    sample = _get_sample(request, sample_id)
    return render(request, "review/blind.html", _audit_context(sample))


@login_required
@require_POST
def audit_submit(request: HtmxHttpRequest, sample_id: int) -> HttpResponse:
    sample = _get_sample(request, sample_id)
    form = BlindTypeForm(request.POST)
    if not form.is_valid():
        return render(request, "review/blind.html", _audit_context(sample, form), status=400)
    try:
        sample = audits.audit_submit(
            sample_id=sample.pk,
            auditor=request.user,
            doc_type=form.chosen(),
            note=form.cleaned_data["note"],
        )
    except ReviewRefused as refused:
        messages.error(request, refused.message)
        return redirect("review:audit", sample_id=sample.pk)
    if sample.agrees:
        messages.success(request, "Audit recorded: you agree with the accepted type.")
    else:
        messages.warning(
            request,
            "Audit recorded: you disagree with the accepted type"
            + (", and the ground truth is corrected." if sample.correction_id else "."),
        )
    return redirect("review:audit", sample_id=sample.pk)


@login_required
def audit_page_image(request: HtmxHttpRequest, sample_id: int, number: int) -> FileResponse:
    sample = _get_sample(request, sample_id)
    return page_png(request, sample.document, number)


def _get_second(request: HtmxHttpRequest, second_id: int) -> SecondReview:
    require_permission(request, "review.review_packets")
    return get_object_or_404(
        SecondReview.objects.select_related(
            "packet__document", "first_review__reviewer", "second_reviewer", "adjudicator"
        ),
        pk=second_id,
    )


def _second_context(
    request: HtmxHttpRequest, second: SecondReview, form: BlindTypeForm | None = None
) -> dict[str, Any]:
    user = request.user
    first_reviewer = second.first_review.reviewer
    packet = second.packet
    context = document_context(
        packet.document, lambda n: reverse("review:page_image", args=[packet.pk, n])
    )
    is_first = first_reviewer.pk == user.pk
    awaiting = second.status == SecondReview.Status.AWAITING
    adjudicating = second.status == SecondReview.Status.ADJUDICATION
    may_adjudicate = (
        adjudicating
        and user_may_adjudicate(user)
        and user.pk not in (first_reviewer.pk, second.second_reviewer_id)
    )
    context.update(
        kind="adjudication" if may_adjudicate else "second",
        title="Adjudicate a disagreement" if may_adjudicate else "Second review",
        item=second,
        # Blind while the second answer is missing; the first reviewer knows their own answer.
        blind=awaiting and not is_first,
        is_first=is_first,
        form=form or BlindTypeForm(),
        action=reverse("review:adjudicate", args=[second.pk])
        if may_adjudicate
        else reverse("review:second_submit", args=[second.pk]),
        may_adjudicate=may_adjudicate,
    )
    if not context["blind"]:
        context["comparison"] = {
            "yours_label": f"Second review ({person_name(second.second_reviewer)})",
            "yours": type_name(second.second_type) or "—",
            "theirs_label": f"First decision ({person_name(first_reviewer)})",
            "theirs": type_name(second.first_type),
            "agrees": second.first_type == second.second_type if second.second_type else None,
            "final": type_name(second.final_type),
            "adjudicator": person_name(second.adjudicator),
            "status": second.get_status_display(),
        }
    return context


@login_required
def second_detail(request: HtmxHttpRequest, second_id: int) -> HttpResponse:
    second = _get_second(request, second_id)
    return render(request, "review/blind.html", _second_context(request, second))


@login_required
@require_POST
def second_submit(request: HtmxHttpRequest, second_id: int) -> HttpResponse:
    second = _get_second(request, second_id)
    form = BlindTypeForm(request.POST)
    if not form.is_valid():
        context = _second_context(request, second, form)
        return render(request, "review/blind.html", context, status=400)
    try:
        second = second_review.second_review_submit(
            second_id=second.pk,
            reviewer=request.user,
            doc_type=form.chosen(),
            note=form.cleaned_data["note"],
        )
    except ReviewRefused as refused:
        messages.error(request, refused.message)
        return redirect("review:second", second_id=second.pk)
    if second.status == SecondReview.Status.AGREED:
        messages.success(request, "Second review recorded: both reviewers agree.")
    else:
        messages.warning(
            request, "Second review recorded: the reviewers disagree; it goes to adjudication."
        )
    return redirect("review:second", second_id=second.pk)


@login_required
@require_POST
def adjudicate(request: HtmxHttpRequest, second_id: int) -> HttpResponse:
    second = _get_second(request, second_id)
    if not user_may_adjudicate(request.user):
        raise PermissionDenied("Your role does not allow adjudication.")
    form = BlindTypeForm(request.POST)
    if not form.is_valid():
        context = _second_context(request, second, form)
        return render(request, "review/blind.html", context, status=400)
    try:
        second = second_review.adjudicate(
            second_id=second.pk,
            user=request.user,
            doc_type=form.chosen(),
            note=form.cleaned_data["note"],
        )
    except ReviewRefused as refused:
        messages.error(request, refused.message)
        return redirect("review:second", second_id=second.pk)
    messages.success(
        request, f"Adjudicated: {type_name(second.final_type)}. The ground truth is final."
    )
    return redirect("review:second", second_id=second.pk)
