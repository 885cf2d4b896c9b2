"""A run's page (attempts, issues, decision traces, timings, LLM calls) and its review packet
as JSON. They live with review because what a run page may show of a document's labels is
review's to decide (blind checks)."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render

from core.http import HtmxHttpRequest, require_permission
from reliability import llm_runtime
from reliability.models import Attempt, Issue, Run
from review.models import ReviewPacket, RunComparison
from review.serializers import packet_as_dict
from review.visibility import label_view


@login_required
def run_detail(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    require_permission(request, "documents.view_document")
    run = get_object_or_404(
        Run.objects.select_related("document", "created_by").prefetch_related(
            Prefetch(
                "attempts",
                queryset=Attempt.objects.prefetch_related(
                    Prefetch("issues", queryset=Issue.objects.order_by("severity_rank", "issue_id"))
                ),
            )
        ),
        pk=run_id,
    )
    packet = ReviewPacket.objects.filter(run=run).first()
    circuit = llm_runtime.circuit_state() if run.status == Run.Status.WAITING else None
    return render(
        request,
        "reliability/run.html",
        {
            "run": run,
            "packet": packet,
            "circuit": circuit,
            "labels": label_view(request.user, run.document),
            "comparison": RunComparison.objects.filter(run=run).first(),
        },
    )


@login_required
def packet_download(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    require_permission(request, "documents.view_document")
    packet = ReviewPacket.objects.select_related("run", "document").filter(run_id=run_id).first()
    if packet is None:
        raise Http404("This run was not escalated: it has no review packet.")
    if not label_view(request.user, packet.document).everything:
        raise PermissionDenied("An independent check of this document is open.")
    response = HttpResponse(
        json.dumps(packet_as_dict(packet), indent=2), content_type="application/json"
    )
    response["Content-Disposition"] = f'attachment; filename="packet-{packet.pk}.json"'
    return response
