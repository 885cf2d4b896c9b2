"""The escalation queue, "next packet" and undo."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from core.http import HtmxHttpRequest, require_permission
from review import queue as review_queue
from review import selectors
from review.forms import (
    TYPE_CHOICES,
)
from review.services import ReviewRefused, decisions
from review.views.common import (
    SEVERITY_CHOICES,
)


@login_required
def queue(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "review.review_packets")
    counts = review_queue.queue_counts(user=request.user)
    context: dict[str, Any] = {
        "counts": counts,
        "mine": review_queue.my_progress(request.user, counts=counts),
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
        "undo_available": selectors.undo_available(request.user, minutes=decisions.UNDO_MINUTES),
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
    held = decisions.packets_release_all(user=request.user)
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
    decisions.packets_release_all(user=request.user)
    try:
        review = decisions.review_undo(reviewer=request.user)
    except ReviewRefused as refused:
        messages.error(request, refused.message)
        return redirect(request.POST.get("next") or reverse("review:queue"))
    messages.success(
        request,
        f"Undone: your decision on “{review.packet.document.original_filename}” is withdrawn "
        "(a new ground-truth version records it). Decide it again.",
    )
    return redirect("review:packet", packet_id=review.packet_id)
