from __future__ import annotations

import hashlib
import io
import re
import statistics
from datetime import timedelta
from pathlib import Path
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Avg, Count, Q
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from config.http import HtmxHttpRequest, require_permission
from documents.models import Document, Page
from reliability.models import Attempt, Extraction, Run
from reliability.schemas import DISPLAY_NAMES, DOC_TYPES, ClassificationOutput, Severity
from review import services
from review.context import context_for
from review.forms import TYPE_CHOICES, CorrectionForm, ValidateForm
from review.models import AuditEvent, GroundTruth, Review, ReviewPacket

SEVERITY_CHOICES = [(s.value, s.value.title()) for s in Severity]


def _get_packet_for_reviewer(request: HtmxHttpRequest, packet_id: int) -> ReviewPacket:
    require_permission(request, "review.review_packets")
    return get_object_or_404(
        ReviewPacket.objects.select_related("document", "run", "locked_by"), pk=packet_id
    )


# -- queue --------------------------------------------------------------------------------------


def _queue_counts() -> dict[str, int]:
    today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    return ReviewPacket.objects.aggregate(
        pending=Count("pk", filter=Q(status=ReviewPacket.Status.PENDING)),
        in_review=Count("pk", filter=Q(status=ReviewPacket.Status.IN_REVIEW)),
        blockers=Count("pk", filter=Q(status__in=services.OPEN_STATUSES, priority=0)),
        completed_today=Count(
            "pk", filter=Q(status=ReviewPacket.Status.COMPLETED, updated_at__gte=today)
        ),
    )


@login_required
def queue(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "review.review_packets")
    status = request.GET.get("status", "open")
    doc_type = request.GET.get("type", "")
    severity = request.GET.get("severity", "")
    packets = ReviewPacket.objects.select_related("document", "locked_by").only(
        "pk",
        "status",
        "priority",
        "dominant_type",
        "worst_severity",
        "issue_count",
        "created_at",
        "lock_expires_at",
        "document__original_filename",
        "document__page_count",
        "locked_by__username",
        "locked_by__first_name",
        "locked_by__last_name",
    )
    if status == "open":
        packets = packets.filter(status__in=services.OPEN_STATUSES)
    elif status in ReviewPacket.Status.values:
        packets = packets.filter(status=status)
    if doc_type in {t.value for t in DOC_TYPES}:
        packets = packets.filter(dominant_type=doc_type)
    if severity in Severity.__members__:
        packets = packets.filter(worst_severity=severity)
    page = Paginator(
        packets.order_by("priority", "created_at", "pk"), settings.REVIEW_PAGE_SIZE
    ).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "status": status,
        "type": doc_type,
        "severity": severity,
        "type_choices": TYPE_CHOICES,
        "severity_choices": SEVERITY_CHOICES,
        "counts": _queue_counts(),
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
    packet = services.next_packet_for(request.user)
    if packet is None:
        messages.info(request, "The queue is empty: every packet is decided or being reviewed.")
        return redirect("review:queue")
    return redirect("review:packet", packet_id=packet.pk)


# -- packet -------------------------------------------------------------------------------------


def _evidence_contexts(packet: ReviewPacket) -> list[dict[str, Any]]:
    wanted = {g["found_page"] or g["page"] for g in packet.grounding}
    pages = {
        p.number: p.paragraphs
        for p in Page.objects.filter(document_id=packet.document_id, number__in=wanted).only(
            "number", "paragraphs"
        )
    }
    contexts = []
    for entry in packet.grounding:
        page = entry["found_page"] or entry["page"]
        paragraphs = pages.get(page, [])
        found_here = entry["found"]
        context = context_for(
            paragraphs,
            entry["start"] if entry["found_page"] else None,
            entry["end"] if entry["found_page"] else None,
            page=page,
        )
        contexts.append(
            {
                **entry,
                "context": context,
                "on_claimed_page": found_here,
                "is_pdf": packet.document.mime_type == Document.MIME_PDF,
            }
        )
    return contexts


def _packet_context(
    request: HtmxHttpRequest,
    packet: ReviewPacket,
    *,
    holds_lock: bool,
    correction_form: CorrectionForm | None = None,
    error: str = "",
) -> dict[str, Any]:
    output = ClassificationOutput.model_validate(packet.classification)
    evidence = _evidence_contexts(packet)
    issues = []
    for issue in packet.issues:
        location = issue.get("location", "")
        related = [e for e in evidence if location and e["location"].startswith(location)]
        segment = re.match(r"segments\[(\d+)\]", location)
        if not related and segment and int(segment.group(1)) < len(output.segments):
            # A segment-level issue: show the evidence behind the type the segment claims.
            claimed = output.segments[int(segment.group(1))].dominant_type.value
            prefix = f"{segment.group(0)}.types.{claimed}."
            related = [e for e in evidence if e["location"].startswith(prefix)]
        issues.append({**issue, "evidence": related[:2]})
    comparison = packet.comparison
    attempts = list(
        Attempt.objects.filter(run_id=packet.run_id)
        .only(
            "number",
            "source",
            "decision",
            "decision_rule",
            "fixes_applied",
            "quality_score",
            "duration_seconds",
            "note",
        )
        .order_by("number")
    )
    return {
        "packet": packet,
        "document": packet.document,
        "run": packet.run,
        "output": output,
        "display": DISPLAY_NAMES,
        "issues": issues,
        "evidence": evidence,
        "comparison": comparison,
        "attempts": attempts,
        "holds_lock": holds_lock,
        "validate_form": ValidateForm(),
        "correction_form": correction_form
        or CorrectionForm(
            initial=CorrectionForm.initial_for(output), page_count=packet.document.page_count
        ),
        "error": error,
        "lock_minutes": settings.REVIEW_LOCK_MINUTES,
        "extractions": _extractions(packet),
    }


def _extractions(packet: ReviewPacket) -> list[dict[str, Any]]:
    rows = []
    for extraction in Extraction.objects.filter(run_id=packet.run_id).order_by("segment_index"):
        fields = []
        for name, data in extraction.fields.items():
            key = f"{extraction.segment_index}:{name}"
            value = data.get("value")
            shown = "; ".join(value) if isinstance(value, list) else (value or "")
            fields.append(
                {
                    "key": key,
                    "name": name,
                    "value": shown,
                    "corrected": packet.field_corrections.get(key),
                    "status": data.get("status"),
                    "confidence": data.get("confidence"),
                    "snippet": data.get("snippet"),
                    "page": data.get("page"),
                }
            )
        rows.append({"extraction": extraction, "fields": fields})
    return rows


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
    context = _packet_context(
        request, packet, holds_lock=False, correction_form=form, error=refused.message
    )
    return render(request, "review/packet.html", context, status=refused.status)


def _after_decision(request: HtmxHttpRequest, message: str) -> HttpResponse:
    messages.success(request, message)
    following = services.next_packet_for(request.user)
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
        holds = services.lock_is_free(packet, request.user)
        context = _packet_context(
            request,
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
    if packet.status == ReviewPacket.Status.COMPLETED or not services.lock_is_free(
        packet, request.user
    ):
        return _refused(
            request,
            packet,
            services.ReviewRefused(
                "Only the reviewer holding the lock can correct fields before deciding."
            ),
        )
    corrections = dict(packet.field_corrections)
    for row in _extractions(packet):
        for f in row["fields"]:
            submitted = request.POST.get(f"field-{f['key']}")
            if submitted is None:
                continue
            if submitted.strip() != (f["value"] or ""):
                corrections[f["key"]] = submitted.strip()
            else:
                corrections.pop(f["key"], None)
    packet.field_corrections = corrections
    packet.save(update_fields=["field_corrections", "updated_at"])
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
    snippets = sorted(
        {g["snippet"] for g in packet.grounding if g["found"] and g["found_page"] == number}
    )
    key = hashlib.sha256("\n".join(snippets).encode()).hexdigest()[:16]
    cache = Path(settings.MEDIA_ROOT) / "page-images" / str(document.pk)
    path = cache / f"{number}-{settings.PAGE_IMAGE_DPI}-{key}.png"
    if not path.exists():
        import pdfplumber

        cache.mkdir(parents=True, exist_ok=True)
        with document.file.open("rb") as handle, pdfplumber.open(io.BytesIO(handle.read())) as pdf:
            page = pdf.pages[number - 1]
            image = page.to_image(resolution=settings.PAGE_IMAGE_DPI)
            for snippet in snippets:
                words = [re.escape(w) for w in snippet.split()]
                if not words:
                    continue
                for hit in page.search(r"\s*".join(words), regex=True, case=False):
                    image.draw_rect(
                        (hit["x0"] - 1, hit["top"] - 1, hit["x1"] + 1, hit["bottom"] + 1),
                        fill=(255, 213, 0, 90),
                        stroke=(230, 160, 0),
                        stroke_width=2,
                    )
            image.save(str(path), format="PNG")
    return FileResponse(path.open("rb"), content_type="image/png")


# -- export and metrics (admins) ----------------------------------------------------------------


class ExportForm(forms.Form):
    start = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    end = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    source = forms.ChoiceField(
        required=False, choices=[("", "Any source"), *GroundTruth.Source.choices]
    )
    type = forms.ChoiceField(required=False, choices=[("", "Any type"), *TYPE_CHOICES])
    format = forms.ChoiceField(choices=[("jsonl", "JSON Lines"), ("csv", "CSV")])
    all_versions = forms.BooleanField(required=False, label="Include superseded versions")


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
    records = services.ground_truth_selection(
        start=data["start"],
        end=data["end"],
        source=data["source"],
        doc_type=data["type"],
        all_versions=data["all_versions"],
    )
    body = services.export_ground_truth(records, fmt=data["format"])
    services.audit_record(
        user=request.user,
        action=AuditEvent.Action.EXPORTED,
        obj=request.user,
        detail={k: str(v) for k, v in data.items()},
    )
    response = HttpResponse(
        body, content_type="application/x-ndjson" if data["format"] == "jsonl" else "text/csv"
    )
    response["Content-Disposition"] = f'attachment; filename="ground-truth.{data["format"]}"'
    return response


def _bars(rows: list[tuple[str, float]], *, width: int = 420, unit: str = "") -> dict[str, Any]:
    peak = max((v for _, v in rows), default=0) or 1
    return {
        "rows": [
            {"label": label, "value": value, "width": round(width * value / peak), "y": i * 26}
            for i, (label, value) in enumerate(rows)
        ],
        "height": 26 * len(rows),
        "width": width,
        "unit": unit,
    }


@login_required
def metrics(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "review.view_metrics")
    runs = Run.objects.filter(status=Run.Status.COMPLETED)
    decided = runs.aggregate(
        total=Count("pk"),
        accepted=Count("pk", filter=Q(final_decision="AUTO_ACCEPT")),
        escalated=Count("pk", filter=Q(final_decision="ESCALATE_TO_SME")),
        retried=Count("pk", filter=Q(attempts_count__gt=1)),
        retried_accepted=Count("pk", filter=Q(attempts_count__gt=1, final_decision="AUTO_ACCEPT")),
        llm_calls=Avg("llm_calls"),
    )
    attempts = sorted(runs.values_list("attempts_count", flat=True))
    reviews = list(
        Review.objects.select_related("packet").only(
            "outcome", "finished_at", "packet__created_at", "packet__dominant_type"
        )
    )
    turnaround = [(r.finished_at - r.packet.created_at).total_seconds() / 3600 for r in reviews]
    agreement: list[dict[str, Any]] = []
    for t in DOC_TYPES:
        mine = [r for r in reviews if r.packet.dominant_type == t.value]
        if mine:
            agreed = sum(r.outcome == Review.Outcome.VALIDATED for r in mine)
            agreement.append(
                {
                    "type": DISPLAY_NAMES[t],
                    "reviews": len(mine),
                    "agreed": agreed,
                    "rate": agreed / len(mine),
                }
            )
    total = decided["total"] or 0
    context = {
        "documents": Document.objects.filter(status=Document.Status.READY).count(),
        "decided": decided,
        "escalation_rate": decided["escalated"] / total if total else 0.0,
        "autofix_success": decided["retried_accepted"] / decided["retried"]
        if decided["retried"]
        else None,
        "median_attempts": statistics.median(attempts) if attempts else None,
        "turnaround_hours": statistics.median(turnaround) if turnaround else None,
        "agreement": agreement,
        "decision_chart": _bars(
            [
                ("Auto-accepted", decided["accepted"]),
                ("Escalated", decided["escalated"]),
                ("Retried", decided["retried"]),
            ]
        ),
        "agreement_chart": _bars(
            [(a["type"], round(100 * a["rate"])) for a in agreement], unit="%"
        ),
        "since": timezone.now() - timedelta(days=30),
    }
    return render(request, "review/metrics.html", context)
