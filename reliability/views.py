from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core.http import HtmxHttpRequest, require_permission
from documents.models import Document
from reliability import llm_runtime
from reliability.models import Attempt, Issue, Run
from reliability.services import RunRefused, run_resume, run_start
from review.models import ReviewPacket
from review.serializers import packet_as_dict


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
        {"run": run, "packet": packet, "circuit": circuit},
    )


@login_required
def packet_download(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    require_permission(request, "documents.view_document")
    packet = ReviewPacket.objects.select_related("run", "document").filter(run_id=run_id).first()
    if packet is None:
        raise Http404("This run was not escalated: it has no review packet.")
    response = HttpResponse(
        json.dumps(packet_as_dict(packet), indent=2), content_type="application/json"
    )
    response["Content-Disposition"] = f'attachment; filename="packet-{packet.pk}.json"'
    return response


@login_required
@require_POST
def run_new(request: HtmxHttpRequest, document_id: str) -> HttpResponse:
    require_permission(request, "documents.view_document")
    document = get_object_or_404(Document, pk=document_id)
    try:
        run = run_start(document=document, user=request.user)
    except RunRefused as refused:
        messages.error(request, str(refused))
        return redirect("documents:detail", document_id=document.pk)
    return redirect("reliability:run", run_id=run.pk)


@login_required
@require_POST
def run_resume_now(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    """Try a waiting run now instead of at its scheduled time."""
    require_permission(request, "documents.view_document")
    run = get_object_or_404(Run, pk=run_id)
    if run_resume(run=run):
        messages.success(request, "The run was queued to try again now.")
    else:
        messages.error(request, "This run is not waiting any more.")
    return redirect("reliability:run", run_id=run.pk)
