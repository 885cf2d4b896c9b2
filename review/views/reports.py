"""For admins: ground-truth exports and the metrics page."""

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
from review import selectors
from review.exports import (
    ExportFilter,
    ExportUnavailable,
    export_response,
)
from review.forms import (
    ExportForm,
)


@login_required
def export(request: HtmxHttpRequest) -> HttpResponseBase:
    require_permission(request, "review.export_ground_truth")
    form = ExportForm(request.GET or None)
    if not request.GET or not form.is_valid():
        return render(
            request,
            "review/export.html",
            {"form": form, "count": selectors.ground_truth_current_count()},
            status=400 if request.GET else 200,
        )
    data = form.cleaned_data
    fmt = data["format"]
    export_filter = ExportFilter(
        start=data["start"],
        end=data["end"],
        source=data["source"],
        doc_type=data["type"],
        all_versions=data["all_versions"],
    )
    try:
        return export_response(
            user=request.user,
            records=export_filter.selection(),
            fmt=fmt,
            export_filter=export_filter,
            audit_filters=data,
            with_text=data["with_text"],
        )
    except ExportUnavailable as refused:
        context = {
            "form": form,
            "count": selectors.ground_truth_current_count(),
            "error": refused.message,
        }
        return render(request, "review/export.html", context, status=refused.status)


@login_required
def metrics(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "review.view_metrics")

    def compute() -> dict[str, Any]:
        return {
            **selectors.review_metrics(),
            **selectors.audit_metrics(),
            **selectors.second_review_metrics(),
            "loop": loop_monitoring(),
            "as_of": timezone.now(),
        }

    # Aggregates over every run and review: computed at most once a minute for all admins.
    context = cached("review:metrics", compute, timeout=settings.METRICS_MAX_AGE_SECONDS)
    return render(request, "review/metrics.html", context)
