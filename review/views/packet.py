"""The packet page: the evidence, the document, and the decision panel."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from core.http import HtmxHttpRequest, require_permission
from engine.schemas import DISPLAY_NAMES, ClassificationOutput
from reliability.selectors import source_certification
from review import queue as review_queue
from review import selectors
from review.corrections import segmentation_json, segmentation_of, segmentation_words
from review.forms import (
    TYPE_CHOICES,
    TYPE_KEYS,
    CorrectionForm,
    ValidateForm,
    posted_rows,
)
from review.models import GroundTruth, Review, ReviewPacket
from review.panel import panel_seen_parse, panel_token
from review.services import ReviewRefused
from review.services import decisions as decide
from review.views.common import get_packet_for_reviewer, page_png
from review.visibility import label_view, sees_all
from review.words import escalation_reasons, reasons_sentence


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
    for page in workspace["pages"]:
        page["image"] = reverse("review:page_image", args=[packet.pk, page["number"]])
    decisions = selectors.packet_decisions(packet)
    token = panel_token(packet=packet, user=request.user, revision=len(decisions))
    standing = next((d for d in decisions if d.withdrawn_at is None), None)
    second = selectors.awaiting_second_review(packet) if standing else None
    if not label_view(request.user, packet.document).human:
        # A blind check is open: the decision is the checker's to find out, not to read.
        decisions, standing = [], None
    undo_until = standing.finished_at + timedelta(minutes=decide.UNDO_MINUTES) if standing else None
    form = correction_form or CorrectionForm.for_output(
        output, page_count=packet.document.page_count
    )
    why = escalation_reasons(
        issues=packet.issues,
        output=output,
        gate=packet.run.gate,
        comparison=packet.comparison,
        stopped_reason=packet.run.stopped_reason,
    )
    return {
        "packet": packet,
        "document": packet.document,
        "run": packet.run,
        "output": output,
        "why_escalated": reasons_sentence(why),
        "technical": sees_all(request.user),
        "display": DISPLAY_NAMES,
        **workspace,
        "comparison": packet.comparison,
        "attempts": selectors.packet_attempts(packet),
        "holds_lock": holds_lock and packet.status != ReviewPacket.Status.COMPLETED,
        "validate_form": ValidateForm(),
        "panel_token": token,
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
        # Only with a decision the user may see (``standing`` is None under a blind check),
        # asked of every decided packet (the same queries, seen or not).
        "certification": source_certification(
            document_id=packet.document_id,
            doc_type=standing.ground_truth.dominant_type if standing else None,
        )
        if packet.status == ReviewPacket.Status.COMPLETED
        else None,
        "truth_fields": selectors.fields_for_display(standing.ground_truth.fields)
        if standing
        else [],
        "machine_segments": json.dumps(segmentation_json(segmentation_of(output))),
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
        # "Packet 3 of 12 today": only for the packet this reviewer is working on.
        "progress": review_queue.workspace_progress(request.user)
        if holds_lock and packet.status != ReviewPacket.Status.COMPLETED
        else None,
    }


@login_required
def packet_detail(request: HtmxHttpRequest, packet_id: int) -> HttpResponse:
    packet = get_packet_for_reviewer(request, packet_id)
    holds = decide.packet_open(packet=packet, user=request.user)
    template = "review/packet.html"
    if request.htmx:
        template += "#packet-issues"
    return render(request, template, _packet_context(request, packet, holds_lock=holds))


def _refused(
    request: HtmxHttpRequest,
    packet: ReviewPacket,
    refused: ReviewRefused,
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
        decide.UNDO_MINUTES,
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
    packet = get_packet_for_reviewer(request, packet_id)
    form = ValidateForm(request.POST)
    notes = form.cleaned_data["notes"] if form.is_valid() else ""
    # The panel's segments and types are posted with the validation, always: it must show
    # the machine's answer, or the validation would record something the reviewer did not
    # see. Without them nothing is assumed: the service refuses (review.panel).
    page_count = packet.document.page_count
    panel = CorrectionForm(request.POST, page_count=page_count)
    shown = None
    if posted_rows(request.POST):
        if not panel.is_valid():
            return _refused(request, packet, ReviewRefused(PANEL_DOES_NOT_HOLD), panel)
        shown = panel.correction()
    try:
        review = decide.review_submit(
            packet_id=packet.pk,
            reviewer=request.user,
            correction=None,
            notes=notes,
            shown=shown,
            seen=panel_seen_parse(request.POST, page_count=page_count),
        )
    except ReviewRefused as refused:
        return _refused(request, packet, refused, panel if shown is not None else None)
    return _after_decision(request, packet, recorded_message(review))


PANEL_DOES_NOT_HOLD = (
    "Nothing was recorded: the panel shows segments that do not hold together (see its "
    "messages). Mend them and save with Enter, or press R to put the machine's answer back."
)


def recorded_message(review: Review) -> str:
    """What a decision recorded, in words: the type(s) and the source, and whether it is
    final."""
    truth = review.ground_truth
    what = segmentation_words(segmentation_of(truth.classification))
    # Mid-sentence: "as pages 1-3 Other; page 4 ...", not "as Pages 1-3 Other".
    what = what[:1].lower() + what[1:] if what.startswith("Page") else what
    name = review.packet.document.original_filename
    if review.outcome == Review.Outcome.VALIDATED:
        said = f"Recorded “{name}” as {what}, validated by you (the machine's answer)."
    else:
        # The reason is a sentence of its own ("... to Pathology Report."): one period.
        said = f"Recorded “{name}” as {what}, corrected by you: {review.reason.rstrip('.')}."
    if truth.state == GroundTruth.State.PROVISIONAL:
        said += " Provisional until an independent second review."
    return said


def _checked_correction(packet: ReviewPacket, form: CorrectionForm) -> str:
    """Validate the form and the correction's consistency; the correction's reason, or ""
    with the problems added to the form."""
    if not form.is_valid():
        return ""
    reason, problems = decide.correction_check(packet=packet, correction=form.correction())
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
    packet = get_packet_for_reviewer(request, packet_id)
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
        review = decide.review_submit(
            packet_id=packet.pk,
            reviewer=request.user,
            correction=form.correction(),
            notes=form.cleaned_data["notes"],
            seen=panel_seen_parse(request.POST, page_count=packet.document.page_count),
        )
    except ReviewRefused as refused:
        return _refused(request, packet, refused, form)
    return _after_decision(
        request, packet, recorded_message(review) + _fields_summary(review.ground_truth)
    )


@login_required
@require_POST
def packet_preview(request: HtmxHttpRequest, packet_id: int) -> HttpResponse:
    """What saving this correction would record: the reason, any problem, and the fields of
    the corrected segments, extracted again where pages or types changed."""
    packet = get_packet_for_reviewer(request, packet_id)
    form = CorrectionForm(request.POST, page_count=packet.document.page_count)
    context: dict[str, Any] = {"packet": packet, "preview_errors": [], "preview_fields": []}
    if form.is_valid():
        try:
            reason, problems, fields = decide.correction_preview(
                packet=packet, reviewer=request.user, correction=form.correction()
            )
        except ReviewRefused as refused:
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
    packet = get_packet_for_reviewer(request, packet_id)
    try:
        decide.packet_skip(packet=packet, user=request.user)
    except ReviewRefused as refused:
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
    packet = get_packet_for_reviewer(request, packet_id)
    submitted = {
        key.removeprefix("field-"): request.POST.get(key, "")
        for key in request.POST
        if key.startswith("field-")
    }
    try:
        corrections = decide.field_corrections_save(
            packet=packet, reviewer=request.user, submitted=submitted
        )
    except ReviewRefused as refused:
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
    packet = get_packet_for_reviewer(request, packet_id)
    decide.packet_release(packet=packet, user=request.user)
    messages.info(request, "Released: the packet is back in the queue.")
    return redirect("review:queue")


@login_required
@require_POST
def packet_reopen(request: HtmxHttpRequest, packet_id: int) -> HttpResponse:
    """An admin takes back a decided packet's decision; it goes back to the queue."""
    packet = get_packet_for_reviewer(request, packet_id)
    require_permission(request, "review.reopen_packets")
    try:
        decide.packet_reopen(packet=packet, user=request.user)
    except ReviewRefused as refused:
        return _refused(request, packet, refused)
    messages.success(
        request,
        f"Reopened “{packet.document.original_filename}”: its decision is withdrawn and the "
        "packet is back in the queue.",
    )
    return redirect("review:queue")


@login_required
def page_image(request: HtmxHttpRequest, packet_id: int, number: int) -> HttpResponseBase:
    """The PDF page as PNG (``?size=thumb`` for the page strip; review.views.common.page_png).
    Evidence is drawn over it by the page, from the page's word boxes."""
    packet = get_packet_for_reviewer(request, packet_id)
    return page_png(request, packet.document, number)
