"""For admins: ground-truth exports and the metrics page; for each reviewer, their own figures."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils import timezone

from core.caching import cached
from core.http import HtmxHttpRequest, require_permission
from reliability.selectors import loop_monitoring
from review import analytics, selectors
from review import queue as review_queue
from review.exports import (
    ExportFilter,
    ExportUnavailable,
    export_response,
    export_state,
)
from review.forms import (
    ExportForm,
)
from review.models import GroundTruth
from review.visibility import visible_truth


def _export_page_context(form: ExportForm, **extra: Any) -> dict[str, Any]:
    return {
        "form": form,
        "count": selectors.ground_truth_current_count(),
        "provisional": selectors.ground_truth_selection(
            state=GroundTruth.State.PROVISIONAL
        ).count(),
        **extra,
    }


@login_required
def export(request: HtmxHttpRequest) -> HttpResponseBase:
    """The export page, and the download it asks for. The records pass through
    review.visibility like every label shown: Admins (the only role with the export
    permission today) see every record; anyone else given the permission would get none of
    a document under a blind check they take no part in."""
    require_permission(request, "review.export_ground_truth")
    form = ExportForm(request.GET or None)
    if not request.GET or not form.is_valid():
        return render(
            request,
            "review/export.html",
            _export_page_context(form),
            status=400 if request.GET else 200,
        )
    data = form.cleaned_data
    fmt = data["format"]
    export_filter = ExportFilter(
        start=data["start"],
        end=data["end"],
        source=data["source"],
        doc_type=data["type"],
        state=export_state(data["state"], fmt=fmt),
        all_versions=data["all_versions"],
    )
    try:
        return export_response(
            user=request.user,
            records=visible_truth(request.user, export_filter.selection()),
            fmt=fmt,
            export_filter=export_filter,
            audit_filters={**data, "state": export_filter.as_dict()["state"]},
            with_text=data["with_text"],
            deidentify=data["deidentify"],
        )
    except ExportUnavailable as refused:
        context = _export_page_context(form, error=refused.message)
        return render(request, "review/export.html", context, status=refused.status)


@login_required
def metrics(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "review.view_metrics")

    def compute() -> dict[str, Any]:
        return {
            **selectors.review_metrics(),
            **selectors.audit_metrics(),
            **selectors.second_review_metrics(),
            "reviewers": analytics.reviewer_analytics(),
            "lock_minutes": settings.REVIEW_LOCK_MINUTES,
            "loop": loop_monitoring(),
            "learning": selectors.learning_metrics(),
            "learning_interval_hours": settings.LEARNING_INTERVAL_HOURS,
            "learning_every_labels": settings.LEARNING_EVERY_LABELS,
            "as_of": timezone.now(),
        }

    # Aggregates over every run and review: computed at most once a minute for all admins.
    context = cached("review:metrics", compute, timeout=settings.METRICS_MAX_AGE_SECONDS)
    return render(request, "review/metrics.html", context)


@login_required
def my_work(request: HtmxHttpRequest) -> HttpResponse:
    """A reviewer's own figures (review.analytics), the same as the metrics page shows Admins
    for them, and their day so far. Read from an index of their own decisions: not cached."""
    if not request.user.has_perm("review.audit_runs"):
        require_permission(request, "review.review_packets")
    counts = review_queue.queue_counts(user=request.user)
    context = {
        "reviewers": analytics.reviewer_analytics(reviewer=request.user),
        "mine": review_queue.my_progress(request.user, counts=counts),
        "lock_minutes": settings.REVIEW_LOCK_MINUTES,
    }
    return render(request, "review/me.html", context)
