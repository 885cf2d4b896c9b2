"""Clinician review pages. Views parse the request, call a selector or a service, and render."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from config.http import HtmxHttpRequest, require_permission
from documents.models import Document
from documents.services import page_image_path
from engine.schemas import DISPLAY_NAMES, ClassificationOutput, Severity
from reliability.selectors import loop_monitoring
from review import selectors, services
from review.exports import (
    CONTENT_TYPES,
    FILENAMES,
    ExportFilter,
    ExportUnavailable,
    export_bytes,
)
from review.forms import TYPE_CHOICES, CorrectionForm, ExportForm, ValidateForm
from review.models import AuditEvent, GroundTruth, ReviewPacket

SEVERITY_CHOICES = [(s.value, s.value.title()) for s in Severity]


def _get_packet_for_reviewer(request: HtmxHttpRequest, packet_id: int) -> ReviewPacket:
    require_permission(request, "review.review_packets")
    return get_object_or_404(
        ReviewPacket.objects.select_related("document", "run", "locked_by"), pk=packet_id
    )


# -- queue --------------------------------------------------------------------------------------


@login_required
def queue(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "review.review_packets")
    status = request.GET.get("status", "open")
    doc_type = request.GET.get("type", "")
    severity = request.GET.get("severity", "")
    packets = selectors.queue_packets(status=status, doc_type=doc_type, severity=severity)
    page = Paginator(packets, settings.REVIEW_PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "status": status,
        "type": doc_type,
        "severity": severity,
        "type_choices": TYPE_CHOICES,
        "severity_choices": SEVERITY_CHOICES,
        "counts": selectors.queue_counts(),
        "now": timezone.now(),
        "query": request.GET.urlencode(),
    }
    template = "review/queue.html"
    if request.htmx:
        template += "#queue-counts" if request.htmx.target == "queue-counts" else "#queue-table"
    return render(request, template, context)


@login_required
def next_packet(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "review.review_packets")
    packet = selectors.next_packet_for(request.user)
    if packet is None:
        messages.info(request, "The queue is empty: every packet is decided or being reviewed.")
        return redirect("review:queue")
    return redirect("review:packet", packet_id=packet.pk)


# -- packet -------------------------------------------------------------------------------------


def _packet_context(
    packet: ReviewPacket,
    *,
    holds_lock: bool,
    correction_form: CorrectionForm | None = None,
    error: str = "",
) -> dict[str, Any]:
    output = ClassificationOutput.model_validate(packet.classification)
    evidence = selectors.evidence_contexts(packet)
    return {
        "packet": packet,
        "document": packet.document,
        "run": packet.run,
        "output": output,
        "display": DISPLAY_NAMES,
        "issues": selectors.packet_issues(packet, output, evidence),
        "evidence": evidence,
        "comparison": packet.comparison,
        "attempts": selectors.packet_attempts(packet),
        "holds_lock": holds_lock,
        "validate_form": ValidateForm(),
        "correction_form": correction_form
        or CorrectionForm(
            initial=CorrectionForm.initial_for(output), page_count=packet.document.page_count
        ),
        "error": error,
        "lock_minutes": settings.REVIEW_LOCK_MINUTES,
        "extractions": selectors.packet_extractions(packet),
    }


@login_required
def packet_detail(request: HtmxHttpRequest, packet_id: int) -> HttpResponse:
    packet = _get_packet_for_reviewer(request, packet_id)
    holds = services.packet_open(packet=packet, user=request.user)
    template = "review/packet.html"
    if request.htmx:
        template += "#packet-issues"
    return render(request, template, _packet_context(packet, holds_lock=holds))


def _refused(
    request: HtmxHttpRequest,
    packet: ReviewPacket,
    refused: services.ReviewRefused,
    form: CorrectionForm | None = None,
) -> HttpResponse:
    packet.refresh_from_db()
    context = _packet_context(packet, holds_lock=False, correction_form=form, error=refused.message)
    return render(request, "review/packet.html", context, status=refused.status)


def _after_decision(request: HtmxHttpRequest, message: str) -> HttpResponse:
    messages.success(request, message)
    following = selectors.next_packet_for(request.user)
    if following is not None:
        return redirect("review:packet", packet_id=following.pk)
    return redirect("review:queue")


@login_required
@require_POST
def packet_validate(request: HtmxHttpRequest, packet_id: int) -> HttpResponse:
    packet = _get_packet_for_reviewer(request, packet_id)
    form = ValidateForm(request.POST)
    notes = form.cleaned_data["notes"] if form.is_valid() else ""
    try:
        services.review_submit(
            packet_id=packet.pk, reviewer=request.user, correction=None, notes=notes
        )
    except services.ReviewRefused as refused:
        return _refused(request, packet, refused)
    return _after_decision(
        request, f"Validated “{packet.document.original_filename}”: ground truth recorded."
    )


@login_required
@require_POST
def packet_correct(request: HtmxHttpRequest, packet_id: int) -> HttpResponse:
    packet = _get_packet_for_reviewer(request, packet_id)
    form = CorrectionForm(request.POST, page_count=packet.document.page_count)
    if not form.is_valid():
        holds = selectors.lock_is_free(packet, request.user)
        context = _packet_context(
            packet,
            holds_lock=holds,
            correction_form=form,
            error="The correction was not saved: see the messages below.",
        )
        return render(request, "review/packet.html", context, status=400)
    try:
        services.review_submit(
            packet_id=packet.pk,
            reviewer=request.user,
            correction=form.correction(),
            notes=form.cleaned_data["notes"],
        )
    except services.ReviewRefused as refused:
        return _refused(request, packet, refused, form)
    return _after_decision(
        request, f"Corrected “{packet.document.original_filename}”: ground truth recorded."
    )


@login_required
@require_POST
def packet_fields(request: HtmxHttpRequest, packet_id: int) -> HttpResponse:
    """Save the reviewer's corrections of extracted fields; the decision carries them into
    ground truth."""
    packet = _get_packet_for_reviewer(request, packet_id)
    submitted = {
        key.removeprefix("field-"): request.POST.get(key, "")
        for key in request.POST
        if key.startswith("field-")
    }
    try:
        corrections = services.field_corrections_save(
            packet=packet, reviewer=request.user, submitted=submitted
        )
    except services.ReviewRefused as refused:
        return _refused(request, packet, refused)
    messages.success(
        request,
        f"{len(corrections)} field correction(s) saved; they go into "
        "the ground truth with your decision.",
    )
    return redirect("review:packet", packet_id=packet.pk)


@login_required
@require_POST
def packet_release(request: HtmxHttpRequest, packet_id: int) -> HttpResponse:
    packet = _get_packet_for_reviewer(request, packet_id)
    services.packet_release(packet=packet, user=request.user)
    messages.info(request, "Released: the packet is back in the queue.")
    return redirect("review:queue")


@login_required
def page_image(request: HtmxHttpRequest, packet_id: int, number: int) -> FileResponse:
    """The PDF page as PNG with the packet's grounded evidence on it highlighted; cached."""
    packet = _get_packet_for_reviewer(request, packet_id)
    document = packet.document
    if document.mime_type != Document.MIME_PDF or not 1 <= number <= document.page_count:
        raise Http404("No page image for this document.")
    path = page_image_path(
        document=document,
        number=number,
        highlights=selectors.packet_snippets_on_page(packet, number),
    )
    return FileResponse(path.open("rb"), content_type="image/png")


# -- export and metrics (admins) ----------------------------------------------------------------


@login_required
def export(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "review.export_ground_truth")
    form = ExportForm(request.GET or None)
    if not request.GET or not form.is_valid():
        count = GroundTruth.objects.filter(superseded_by__isnull=True).count()
        return render(
            request,
            "review/export.html",
            {"form": form, "count": count},
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
        body = export_bytes(
            export_filter.selection(),
            fmt=fmt,
            export_filter=export_filter,
            site_url=settings.SITE_URL,
        )
    except ExportUnavailable as refused:
        count = GroundTruth.objects.filter(superseded_by__isnull=True).count()
        context = {"form": form, "count": count, "error": refused.message}
        return render(request, "review/export.html", context, status=refused.status)
    services.audit_record(
        user=request.user,
        action=AuditEvent.Action.EXPORTED,
        obj=request.user,
        detail={k: str(v) for k, v in data.items()},
    )
    response = HttpResponse(body, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{FILENAMES[fmt]}"'
    return response


@login_required
def metrics(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "review.view_metrics")
    context = {**selectors.review_metrics(), "loop": loop_monitoring()}
    return render(request, "review/metrics.html", context)
