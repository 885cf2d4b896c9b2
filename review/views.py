"""Clinician review pages. Views parse the request, call a selector or a service, and render."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from core.caching import cached
from core.http import HtmxHttpRequest, require_permission
from documents.models import Document
from documents.sandbox import SandboxFailed
from documents.services import page_image_path
from engine.schemas import DISPLAY_NAMES, ClassificationOutput, Severity
from reliability.selectors import loop_monitoring
from review import queue as review_queue
from review import selectors, services
from review.exports import (
    CONTENT_TYPES,
    FILENAMES,
    STREAMED,
    ExportFilter,
    ExportUnavailable,
    Streamed,
    export_bytes,
    export_digest,
    export_stream,
)
from review.forms import (
    TYPE_CHOICES,
    TYPE_KEYS,
    BlindTypeForm,
    CorrectionForm,
    ExportForm,
    ValidateForm,
)
from review.models import AuditSample, GroundTruth, Review, ReviewPacket, SecondReview

SEVERITY_CHOICES = [(s.value, s.value.title()) for s in Severity]
THUMBNAIL_DPI = 18  # a letter page 153 px wide


def _get_packet_for_reviewer(request: HtmxHttpRequest, packet_id: int) -> ReviewPacket:
    require_permission(request, "review.review_packets")
    return get_object_or_404(
        ReviewPacket.objects.select_related("document", "run", "locked_by"), pk=packet_id
    )


# -- queue --------------------------------------------------------------------------------------


@login_required
def queue(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "review.review_packets")
    counts = review_queue.queue_counts()
    context: dict[str, Any] = {
        "counts": counts,
        "mine": review_queue.my_progress(request.user, open_total=counts["open"]),
    }
    if request.htmx and request.htmx.target == "queue-counts":  # the 10-second refresh
        return render(request, "review/queue.html#queue-counts", context)
    status = request.GET.get("status", "open")
    doc_type = request.GET.get("type", "")
    severity = request.GET.get("severity", "")
    code = request.GET.get("code", "")
    search = request.GET.get("q", "")
    filters = {"status": status, "doc_type": doc_type, "severity": severity, "code": code}
    page = review_queue.queue_page(
        review_queue.queue_packets(**filters, search=search),
        after=request.GET.get("after", ""),
        before=request.GET.get("before", ""),
        total=review_queue.queue_total(**filters, search=search),
        size=settings.REVIEW_PAGE_SIZE,
    )
    query = request.GET.copy()
    for key in ("after", "before", "page"):
        query.pop(key, None)
    context |= {
        "page": page,
        "status": status,
        "type": doc_type,
        "severity": severity,
        "code": code,
        "q": search,
        "type_choices": TYPE_CHOICES,
        "severity_choices": SEVERITY_CHOICES,
        "code_choices": review_queue.issue_code_choices(),
        "undo_available": selectors.undo_available(request.user, minutes=services.UNDO_MINUTES),
        "now": timezone.now(),
        "filters": query.urlencode(),
    }
    template = "review/queue.html" + ("#queue-table" if request.htmx else "")
    return render(request, template, context)


@login_required
def next_packet(request: HtmxHttpRequest) -> HttpResponse:
    """The next packet to review. Moving on gives back any packet this reviewer holds; "next"
    never reopens the packet they came from (``?from=``), and prefers packets they were not
    just holding: those come back only when nothing else is waiting."""
    require_permission(request, "review.review_packets")
    held = services.packets_release_all(user=request.user)
    came_from = request.GET.get("from", "")
    left = (int(came_from),) if came_from.isdigit() else ()
    packet = selectors.next_packet_for(
        request.user, exclude=(*left, *held)
    ) or selectors.next_packet_for(request.user, exclude=left)
    if packet is None:
        messages.info(
            request,
            "No other packet is waiting: every packet is decided or being reviewed."
            if left
            else "The queue is empty: every packet is decided or being reviewed.",
        )
        return redirect("review:queue")
    return redirect("review:packet", packet_id=packet.pk)


@login_required
@require_POST
def undo(request: HtmxHttpRequest) -> HttpResponse:
    """Take back this reviewer's last decision (at most UNDO_MINUTES old) and reopen it."""
    require_permission(request, "review.review_packets")
    services.packets_release_all(user=request.user)
    try:
        review = services.review_undo(reviewer=request.user)
    except services.ReviewRefused as refused:
        messages.error(request, refused.message)
        return redirect(request.POST.get("next") or reverse("review:queue"))
    messages.success(
        request,
        f"Undone: your decision on “{review.packet.document.original_filename}” is withdrawn "
        "(a new ground-truth version records it). Decide it again.",
    )
    return redirect("review:packet", packet_id=review.packet_id)


# -- packet -------------------------------------------------------------------------------------


def _status_message(
    packet: ReviewPacket, *, holds_lock: bool, error: str, standing: Review | None
) -> dict[str, str]:
    """The one message about the packet's state: an error, who decided it, who holds it, or
    how long it is yours."""
    if error:
        return {"kind": "error", "text": error}
    if packet.status == ReviewPacket.Status.COMPLETED:
        if standing is None:
            return {
                "kind": "success",
                "text": "This packet has been decided; an independent second review is "
                "pending, so the decision is not shown here.",
            }
        who = standing.reviewer.get_full_name() or standing.reviewer.username
        when = timezone.localtime(standing.finished_at)
        return {
            "kind": "success",
            "text": f"{standing.get_outcome_display()} by {who} on {when:%d %b %Y at %H:%M}.",
        }
    if not holds_lock:
        holder = packet.locked_by
        name = (holder.get_full_name() or holder.username) if holder else "Someone"
        until = (
            f" until {timezone.localtime(packet.lock_expires_at):%H:%M}"
            if packet.lock_expires_at
            else ""
        )
        return {
            "kind": "warning",
            "text": f"{name} is reviewing this packet{until}. You can read it but not decide it.",
        }
    expires = (
        f" (until {timezone.localtime(packet.lock_expires_at):%H:%M})."
        if packet.lock_expires_at
        else "."
    )
    return {
        "kind": "hint",
        "text": f"Locked to you for {settings.REVIEW_LOCK_MINUTES} minutes{expires}",
    }


def _packet_context(
    request: HtmxHttpRequest,
    packet: ReviewPacket,
    *,
    holds_lock: bool,
    correction_form: CorrectionForm | None = None,
    error: str = "",
) -> dict[str, Any]:
    output = ClassificationOutput.model_validate(packet.classification)
    workspace = selectors.packet_workspace(packet, output)
    decisions = selectors.packet_decisions(packet)
    standing = next((d for d in decisions if d.withdrawn_at is None), None)
    second = selectors.awaiting_second_review(packet) if standing else None
    if (
        second is not None
        and second.status == SecondReview.Status.AWAITING
        and second.first_review.reviewer_id != request.user.pk
    ):
        # A second reviewer must not see the first decision before deciding themselves.
        decisions, standing = [], None
    undo_until = (
        standing.finished_at + timedelta(minutes=services.UNDO_MINUTES) if standing else None
    )
    form = correction_form or CorrectionForm.for_output(
        output, page_count=packet.document.page_count
    )
    return {
        "packet": packet,
        "document": packet.document,
        "run": packet.run,
        "output": output,
        "display": DISPLAY_NAMES,
        **workspace,
        "comparison": packet.comparison,
        "attempts": selectors.packet_attempts(packet),
        "holds_lock": holds_lock and packet.status != ReviewPacket.Status.COMPLETED,
        "validate_form": ValidateForm(),
        "correction_form": form,
        "segment_rows": form.rows(),
        "type_keys": TYPE_KEYS,
        "type_choices": TYPE_CHOICES,
        "status_message": _status_message(
            packet, holds_lock=holds_lock, error=error, standing=standing
        ),
        "decisions": decisions,
        "standing": standing,
        "standing_truth": standing.ground_truth if standing else None,
        "truth_fields": selectors.fields_for_display(standing.ground_truth.fields)
        if standing
        else [],
        "classified_as": DISPLAY_NAMES.get(
            output.dominant_type_overall, output.dominant_type_overall.value
        ),
        "can_undo": bool(
            standing
            and standing.reviewer_id == request.user.pk
            and undo_until
            and undo_until > timezone.now()
        ),
        "can_reopen": bool(standing and request.user.has_perm("review.reopen_packets")),
        "extractions": selectors.packet_extractions(packet),
        "second_review": second,
    }


@login_required
def packet_detail(request: HtmxHttpRequest, packet_id: int) -> HttpResponse:
    packet = _get_packet_for_reviewer(request, packet_id)
    holds = services.packet_open(packet=packet, user=request.user)
    template = "review/packet.html"
    if request.htmx:
        template += "#packet-issues"
    return render(request, template, _packet_context(request, packet, holds_lock=holds))


def _refused(
    request: HtmxHttpRequest,
    packet: ReviewPacket,
    refused: services.ReviewRefused,
    form: CorrectionForm | None = None,
) -> HttpResponse:
    packet.refresh_from_db()
    holds = packet.status != ReviewPacket.Status.COMPLETED and selectors.lock_is_free(
        packet, request.user
    )
    context = _packet_context(
        request, packet, holds_lock=holds, correction_form=form, error=refused.message
    )
    return render(request, "review/packet.html", context, status=refused.status)


def _after_decision(request: HtmxHttpRequest, packet: ReviewPacket, message: str) -> HttpResponse:
    undo = format_html(
        ' <kbd>U</kbd> undoes it for {} minutes. <a href="{}">See the decision</a>.',
        services.UNDO_MINUTES,
        reverse("review:packet", args=[packet.pk]),
    )
    messages.success(request, format_html("{}{}", message, undo))
    following = selectors.next_packet_for(request.user, exclude=(packet.pk,))
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
        request, packet, f"Validated “{packet.document.original_filename}”: ground truth recorded."
    )


def _checked_correction(packet: ReviewPacket, form: CorrectionForm) -> str:
    """Validate the form and the correction's consistency; the correction's reason, or ""
    with the problems added to the form."""
    if not form.is_valid():
        return ""
    reason, problems = services.correction_check(packet=packet, correction=form.correction())
    for part, found in problems.items():
        for message in found:
            form.add_error("dominant_type" if part == "dominant_type" else None, message)
    return "" if problems else reason


def _fields_summary(truth: GroundTruth) -> str:
    redone = [r for r in truth.fields if r.get("re_extracted")]
    if not redone:
        return ""
    found = sum(1 for r in redone for f in r["fields"].values() if f.get("status") == "found")
    types = ", ".join(sorted({DISPLAY_NAMES.get(r["doc_type"], r["doc_type"]) for r in redone}))
    return f" Fields extracted again with the {types} template: {found} found."


@login_required
@require_POST
def packet_correct(request: HtmxHttpRequest, packet_id: int) -> HttpResponse:
    packet = _get_packet_for_reviewer(request, packet_id)
    form = CorrectionForm(request.POST, page_count=packet.document.page_count)
    reason = _checked_correction(packet, form)
    if not reason:
        holds = packet.status != ReviewPacket.Status.COMPLETED and selectors.lock_is_free(
            packet, request.user
        )
        context = _packet_context(
            request,
            packet,
            holds_lock=holds,
            correction_form=form,
            error="The correction was not saved: see the messages in the decision panel.",
        )
        return render(request, "review/packet.html", context, status=400)
    try:
        review = services.review_submit(
            packet_id=packet.pk,
            reviewer=request.user,
            correction=form.correction(),
            notes=form.cleaned_data["notes"],
        )
    except services.ReviewRefused as refused:
        return _refused(request, packet, refused, form)
    return _after_decision(
        request,
        packet,
        f"Corrected “{packet.document.original_filename}”: {reason}"
        + _fields_summary(review.ground_truth),
    )


@login_required
@require_POST
def packet_preview(request: HtmxHttpRequest, packet_id: int) -> HttpResponse:
    """What saving this correction would record: the reason, any problem, and the fields of
    the corrected segments, extracted again where pages or types changed."""
    packet = _get_packet_for_reviewer(request, packet_id)
    form = CorrectionForm(request.POST, page_count=packet.document.page_count)
    context: dict[str, Any] = {"packet": packet, "preview_errors": [], "preview_fields": []}
    if form.is_valid():
        try:
            reason, problems, fields = services.correction_preview(
                packet=packet, reviewer=request.user, correction=form.correction()
            )
        except services.ReviewRefused as refused:
            return HttpResponse(refused.message, status=refused.status)
        context.update(
            preview_reason=reason,
            preview_errors=[m for found in problems.values() for m in found],
            preview_fields=selectors.fields_for_display(fields),
        )
    else:
        context["preview_errors"] = [m for found in form.errors.values() for m in found]
    return render(request, "review/packet.html#correction-preview", context)


@login_required
@require_POST
def packet_skip(request: HtmxHttpRequest, packet_id: int) -> HttpResponse:
    packet = _get_packet_for_reviewer(request, packet_id)
    try:
        services.packet_skip(packet=packet, user=request.user)
    except services.ReviewRefused as refused:
        return _refused(request, packet, refused)
    messages.info(
        request,
        f"Skipped “{packet.document.original_filename}”: it comes after your other packets.",
    )
    following = selectors.next_packet_for(request.user, exclude=(packet.pk,))
    if following is not None:
        return redirect("review:packet", packet_id=following.pk)
    return redirect("review:queue")


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
@require_POST
def packet_reopen(request: HtmxHttpRequest, packet_id: int) -> HttpResponse:
    """An admin takes back a decided packet's decision; it goes back to the queue."""
    packet = _get_packet_for_reviewer(request, packet_id)
    require_permission(request, "review.reopen_packets")
    try:
        services.packet_reopen(packet=packet, user=request.user)
    except services.ReviewRefused as refused:
        return _refused(request, packet, refused)
    messages.success(
        request,
        f"Reopened “{packet.document.original_filename}”: its decision is withdrawn and the "
        "packet is back in the queue.",
    )
    return redirect("review:queue")


@login_required
def page_image(request: HtmxHttpRequest, packet_id: int, number: int) -> HttpResponseBase:
    """The PDF page as PNG (``?size=thumb`` for the page strip); cached. Evidence is drawn
    over it by the page, from the page's word boxes."""
    packet = _get_packet_for_reviewer(request, packet_id)
    document = packet.document
    if (
        document.mime_type != Document.MIME_PDF
        or not document.file
        or not 1 <= number <= document.page_count
    ):
        raise Http404("No page image for this document.")
    dpi = THUMBNAIL_DPI if request.GET.get("size") == "thumb" else settings.PAGE_IMAGE_DPI
    try:
        path = page_image_path(document=document, number=number, dpi=dpi)
    except FileNotFoundError:
        raise Http404("The document's file is missing.") from None
    except SandboxFailed as failed:
        return HttpResponse(
            f"This page cannot be shown as an image: {failed.message}.",
            status=422,
            content_type="text/plain; charset=utf-8",
        )
    # Patient data: core.middleware.NoStoreMiddleware keeps browsers from storing it.
    return FileResponse(path.open("rb"), content_type="image/png")


# -- export and metrics (admins) ----------------------------------------------------------------


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
    records = export_filter.selection()
    if fmt in STREAMED:

        def audit(result: Streamed) -> None:
            services.export_audit(
                user=request.user,
                digest=result.digest,
                filters=data,
                records=result.records,
                complete=result.complete,
            )

        stream = export_stream(
            records,
            fmt=fmt,
            site_url=settings.SITE_URL,
            with_text=data["with_text"],
            on_end=audit,
        )
        streaming = StreamingHttpResponse(stream, content_type=CONTENT_TYPES[fmt])
        streaming["Content-Disposition"] = f'attachment; filename="{FILENAMES[fmt]}"'
        return streaming
    try:
        body = export_bytes(
            records,
            fmt=fmt,
            export_filter=export_filter,
            site_url=settings.SITE_URL,
            with_text=data["with_text"],
        )
    except ExportUnavailable as refused:
        context = {
            "form": form,
            "count": selectors.ground_truth_current_count(),
            "error": refused.message,
        }
        return render(request, "review/export.html", context, status=refused.status)
    services.export_audit(
        user=request.user, digest=export_digest(body), filters=data, records=records.count()
    )
    response = HttpResponse(body, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{FILENAMES[fmt]}"'
    return response


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


# -- audits of auto-accepted runs, second reviews and adjudication ------------------------------
# The blind pages show the document and ask for its type; the machine's answer (or the first
# reviewer's) is not in the page until the answer is recorded.


def _may_adjudicate(user: Any) -> bool:
    """Admins adjudicate; with ADJUDICATION_BY_REVIEWERS, so may any reviewer (the services
    refuse both reviewers of the decision either way)."""
    return user.has_perm("review.adjudicate_reviews") or (
        settings.ADJUDICATION_BY_REVIEWERS and user.has_perm("review.review_packets")
    )


def _type_name(value: str) -> str:
    return DISPLAY_NAMES.get(value, value) if value else ""


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
        "adjudications": selectors.adjudications_for(user) if _may_adjudicate(user) else [],
        "can_audit": user.has_perm("review.audit_runs"),
        "can_adjudicate": _may_adjudicate(user),
    }
    return render(request, "review/checks.html", context)


def _document_context(document: Document, image_url: Any) -> dict[str, Any]:
    has_images = document.mime_type == Document.MIME_PDF and bool(document.file)
    return {
        "document": document,
        "pages": [
            {
                "number": page.number,
                "text": page.text,
                "image": image_url(page.number) if has_images else "",
            }
            for page in selectors.document_pages(document)
        ],
    }


def _get_sample(request: HtmxHttpRequest, sample_id: int) -> AuditSample:
    require_permission(request, "review.audit_runs")
    return get_object_or_404(
        AuditSample.objects.select_related("document", "auditor", "correction"), pk=sample_id
    )


def _audit_context(sample: AuditSample, form: BlindTypeForm | None = None) -> dict[str, Any]:
    context = _document_context(
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
            "yours": _type_name(sample.audited_type),
            "theirs_label": "Machine (auto-accepted)",
            "theirs": _type_name(sample.machine_type),
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
        sample = services.audit_submit(
            sample_id=sample.pk,
            auditor=request.user,
            doc_type=form.chosen(),
            note=form.cleaned_data["note"],
        )
    except services.ReviewRefused as refused:
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
    return _page_png(request, sample.document, number)


def _page_png(request: HtmxHttpRequest, document: Document, number: int) -> FileResponse:
    if (
        document.mime_type != Document.MIME_PDF
        or not document.file
        or not 1 <= number <= document.page_count
    ):
        raise Http404("No page image for this document.")
    try:
        path = page_image_path(document=document, number=number, dpi=settings.PAGE_IMAGE_DPI)
    except FileNotFoundError:
        raise Http404("The document's file is missing.") from None
    response = FileResponse(path.open("rb"), content_type="image/png")
    response["Cache-Control"] = "private, max-age=3600"
    return response


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
    context = _document_context(
        packet.document, lambda n: reverse("review:page_image", args=[packet.pk, n])
    )
    is_first = first_reviewer.pk == user.pk
    awaiting = second.status == SecondReview.Status.AWAITING
    adjudicating = second.status == SecondReview.Status.ADJUDICATION
    may_adjudicate = (
        adjudicating
        and _may_adjudicate(user)
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
            "yours_label": f"Second review ({_name(second.second_reviewer)})",
            "yours": _type_name(second.second_type) or "—",
            "theirs_label": f"First decision ({_name(first_reviewer)})",
            "theirs": _type_name(second.first_type),
            "agrees": second.first_type == second.second_type if second.second_type else None,
            "final": _type_name(second.final_type),
            "adjudicator": _name(second.adjudicator),
            "status": second.get_status_display(),
        }
    return context


def _name(user: Any) -> str:
    return (user.get_full_name() or user.username) if user else ""


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
        second = services.second_review_submit(
            second_id=second.pk,
            reviewer=request.user,
            doc_type=form.chosen(),
            note=form.cleaned_data["note"],
        )
    except services.ReviewRefused as refused:
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
    if not _may_adjudicate(request.user):
        raise PermissionDenied("Your role does not allow adjudication.")
    form = BlindTypeForm(request.POST)
    if not form.is_valid():
        context = _second_context(request, second, form)
        return render(request, "review/blind.html", context, status=400)
    try:
        second = services.adjudicate(
            second_id=second.pk,
            user=request.user,
            doc_type=form.chosen(),
            note=form.cleaned_data["note"],
        )
    except services.ReviewRefused as refused:
        messages.error(request, refused.message)
        return redirect("review:second", second_id=second.pk)
    messages.success(
        request, f"Adjudicated: {_type_name(second.final_type)}. The ground truth is final."
    )
    return redirect("review:second", second_id=second.pk)
