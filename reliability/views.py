from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from core.http import HtmxHttpRequest, require_permission
from documents.models import Document
from reliability.models import Run
from reliability.services import RunRefused, run_resume, run_start


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
