"""Reads for the review pages, exports and the engine's hand-offs: queue, locks, packet
context, metrics, ground truth. No writes here."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import (
    Avg,
    BooleanField,
    Case,
    Count,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    JSONField,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.utils import timezone

from core.aggregates import percentile
from documents.boxes import span_rects
from documents.models import Document, Page
from engine import quality
from engine.fields.library import find_template
from engine.fields.templates import Tier
from engine.schemas import DISPLAY_NAMES, DOC_TYPES, ClassificationOutput
from engine.verifiers.v3_domain import UNTRUSTED_TEXT_CODES
from reliability import llm_runtime
from reliability.extraction import packs
from reliability.models import Attempt, Extraction, Issue, Run
from review import visibility
from review.corrections import (
    extraction_record,
    page_types,
    segmentation_from_json,
    segmentations_agree,
)
from review.evidence import context_for
from review.models import AuditSample, GroundTruth, Review, ReviewPacket, ReviewSkip, SecondReview
from review.queue import queue_order
from review.words import issue_words

# -- locks and the queue ----------------------------------------------------------------------


def lock_available(user: Any, now: datetime) -> Q:
    """Packets this user may lock: unlocked, locked by the user, or with an expired lock.
    The same rule as lock_is_free, for querysets."""
    return (
        Q(locked_by__isnull=True)
        | Q(locked_by=user)
        | Q(lock_expires_at__isnull=True)
        | Q(lock_expires_at__lte=now)
    )


def lock_is_free(packet: ReviewPacket, user: Any, *, now: datetime | None = None) -> bool:
    now = now or timezone.now()
    return (
        packet.locked_by_id is None
        or packet.locked_by_id == user.pk
        or packet.lock_expires_at is None
        or packet.lock_expires_at <= now
    )


def next_packet_for(user: Any, *, exclude: tuple[int, ...] = ()) -> ReviewPacket | None:
    """The open packet this user should take next: packets they skipped come after all their
    other work (the least recently skipped first); then BLOCKER first, then oldest.

    Two short reads rather than one sort of every open packet by its skip time: the first
    walks the queue's index past the few packets this user skipped."""
    now = timezone.now()
    available = (
        ReviewPacket.objects.filter(status__in=ReviewPacket.OPEN_STATUSES)
        .filter(lock_available(user, now))
        .exclude(pk__in=exclude)
    )
    skipped = ReviewSkip.objects.filter(reviewer=user)
    order = queue_order()
    fresh = available.exclude(pk__in=skipped.values("packet_id")).order_by(*order).first()
    if fresh is not None:
        return fresh
    return available.filter(skips__reviewer=user).order_by("skips__skipped_at", *order).first()


def undo_available(user: Any, *, minutes: int) -> bool:
    """Whether this reviewer's last standing decision is recent enough to undo."""
    last = (
        Review.objects.filter(reviewer=user, withdrawn_at__isnull=True)
        .order_by("-finished_at")
        .values_list("finished_at", flat=True)
        .first()
    )
    return last is not None and last > timezone.now() - timedelta(minutes=minutes)


# -- one packet -------------------------------------------------------------------------------


def _evidence_key(entry: dict[str, Any]) -> tuple[str, int]:
    return (" ".join(entry["snippet"].split()).casefold(), entry["found_page"] or entry["page"])


def evidence_items(packet: ReviewPacket, pages: dict[int, Page]) -> list[dict[str, Any]]:
    """The packet's evidence, each snippet once (the same quote may back several types),
    with its context and, where the page has word boxes, the rectangles it covers."""
    items: dict[tuple[str, int], dict[str, Any]] = {}
    for entry in packet.grounding:
        key = _evidence_key(entry)
        if key in items:
            items[key]["locations"].append(entry["location"])
            continue
        page_number = entry["found_page"] or entry["page"]
        page = pages.get(page_number)
        located = entry["found_page"] is not None and entry["start"] is not None
        context = context_for(
            page.paragraphs if page else [],
            entry["start"] if located else None,
            entry["end"] if located else None,
            page=page_number,
        )
        rects = (
            span_rects(page.boxes, entry["start"], entry["end"])
            if located and page is not None and page.boxes
            else []
        )
        items[key] = {
            **entry,
            "id": f"e{len(items) + 1}",
            "locations": [entry["location"]],
            "context": context,
            "on_claimed_page": entry["found"],
            "rects": [
                {
                    "x": round(x0 * 1000, 1),
                    "y": round(top * 1000, 1),
                    "w": round((x1 - x0) * 1000, 1),
                    "h": round((bottom - top) * 1000, 1),
                }
                for x0, top, x1, bottom in rects
            ],
            "is_pdf": packet.document.mime_type == Document.MIME_PDF,
        }
    for item in items.values():
        item["types"] = sorted(
            {DISPLAY_NAMES.get(loc.split(".")[2], "") for loc in item["locations"] if "." in loc}
            - {""}
        )
    return list(items.values())


def packet_issues(
    packet: ReviewPacket, output: ClassificationOutput, evidence: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The packet's issues, each with the evidence it is about (at most two snippets). The
    first issue to cite a snippet shows it; later ones refer back to it, so every snippet
    appears once on the page."""
    issues = []
    shown: set[str] = set()
    for number, issue in enumerate(packet.issues, start=1):
        location = issue.get("location", "")
        related = [
            e
            for e in evidence
            if location and any(loc.startswith(location) for loc in e["locations"])
        ]
        segment = re.match(r"segments\[(\d+)\]", location)
        if not related and segment and int(segment.group(1)) < len(output.segments):
            # A segment-level issue: show the evidence behind the type the segment claims.
            claimed = output.segments[int(segment.group(1))].dominant_type.value
            prefix = f"{segment.group(0)}.types.{claimed}."
            related = [e for e in evidence if any(loc.startswith(prefix) for loc in e["locations"])]
        related = related[:2]
        page = (related[0]["found_page"] or related[0]["page"]) if related else None
        on_page = re.match(r"pages\[(\d+)\]", location)  # a page's issue (hidden text)
        if on_page:
            page = int(on_page.group(1))
        if page is None and segment and int(segment.group(1)) < len(output.segments):
            page = output.segments[int(segment.group(1))].start_page
        said = issue_words(issue, output)
        issues.append(
            {
                **issue,
                "title": said.title,
                "sentence": said.sentence,
                "number": number,
                "page": page or "",
                "evidence": [e for e in related if e["id"] not in shown],
                "see_also": [e for e in related if e["id"] in shown],
                "evidence_ids": " ".join(e["id"] for e in related),
                # Whether any of its snippets has paragraphs around it to show (E).
                "has_around": any(
                    e["context"].found and (e["context"].before or e["context"].after)
                    for e in related
                    if e["id"] not in shown
                ),
            }
        )
        shown.update(e["id"] for e in related)
    return issues


def unreferenced_evidence(
    evidence: list[dict[str, Any]], issues: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    cited = {e["id"] for issue in issues for e in issue["evidence"] + issue["see_also"]}
    return [e for e in evidence if e["id"] not in cited]


def _marked_text(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[str, str]]:
    """The page text cut into (piece, evidence id or "") in order, spans not overlapping."""
    pieces: list[tuple[str, str]] = []
    cursor = 0
    for start, end, item_id in sorted(spans):
        start = max(start, cursor)
        if end <= start:
            continue
        if start > cursor:
            pieces.append((text[cursor:start], ""))
        pieces.append((text[start:end], item_id))
        cursor = end
    if cursor < len(text):
        pieces.append((text[cursor:], ""))
    return pieces


def packet_workspace(packet: ReviewPacket, output: ClassificationOutput) -> dict[str, Any]:
    """Everything the one-screen packet page shows: issues and evidence (each snippet once),
    and the document page by page with the evidence placed on it."""
    document = packet.document
    wanted = {g["found_page"] for g in packet.grounding if g["found_page"]}
    # One read of the pages, word boxes only for the pages evidence was found on (a page's
    # boxes are as long as its words).
    page_rows = list(
        Page.objects.filter(document_id=packet.document_id)
        .defer("boxes", "block_types", "hidden_text")  # hidden text: admins only
        .annotate(
            evidence_boxes=Case(
                When(number__in=wanted, then=F("boxes")),
                default=Value([], JSONField()),
                output_field=JSONField(),
            )
        )
        .order_by("number")
    )
    boxes = {row.number: row.evidence_boxes for row in page_rows if row.number in wanted}
    for row in page_rows:
        row.boxes = row.evidence_boxes
    by_number: dict[int, Page] = {p.number: p for p in page_rows}
    evidence = evidence_items(packet, by_number)
    issues = packet_issues(packet, output, evidence)
    segment_of = {
        n: index
        for index, s in enumerate(output.segments)
        for n in range(s.start_page, s.end_page + 1)
    }
    pages = []
    for row in page_rows:
        on_page = [e for e in evidence if e["found_page"] == row.number]
        spans = [(e["start"], e["end"], e["id"]) for e in on_page if e["start"] is not None]
        pages.append(
            {
                "number": row.number,
                "method": row.get_extraction_method_display(),
                "width": round(row.width or 612),
                "height": round(row.height or 792),
                "has_boxes": bool(row.boxes),
                "evidence": on_page,
                "pieces": _marked_text(row.text, spans),
                "segment": segment_of.get(row.number, 0),
                # Where text a reader cannot see was found (left out of the text above).
                "hidden_words": sum(int(h.get("words", 0)) for h in row.hidden or []),
                "hidden": [
                    {
                        "x": round(x0 * 1000, 1),
                        "y": round(top * 1000, 1),
                        "w": round(max(x1 - x0, 0.002) * 1000, 1),
                        "h": round(max(bottom - top, 0.002) * 1000, 1),
                    }
                    for h in row.hidden or []
                    if h.get("words")  # a lone stray glyph is not outlined
                    for x0, top, x1, bottom in h.get("boxes", [])
                ],
            }
        )
    is_pdf = document.mime_type == Document.MIME_PDF
    return {
        "evidence": evidence,
        "issues": issues,
        "other_evidence": unreferenced_evidence(evidence, issues),
        "pages": pages,
        "is_pdf": is_pdf,
        # Pages ingested before word boxes were kept cannot show evidence on the image: open
        # such a document on its text, where the evidence is marked.
        "text_first": not is_pdf or (bool(wanted) and not any(boxes.values())),
    }


def documents_with_outcome(*, user: Any, status: str = "", search: str = "") -> QuerySet[Document]:
    """Documents, newest first, each annotated in the same query with its latest run's status
    and decision, its current ground truth's type, source and state, its latest packet, and
    whether ``user`` is blind to its labels (review.visibility)."""
    run = Run.objects.filter(document=OuterRef("pk")).order_by("-created_at")
    truth = GroundTruth.objects.filter(document=OuterRef("pk"), superseded_by__isnull=True)
    packet = ReviewPacket.objects.filter(document=OuterRef("pk")).order_by("-created_at")
    documents = (
        Document.objects.select_related("uploaded_by")
        .defer("options")
        .annotate(
            run_status=Subquery(run.values("status")[:1]),
            run_decision=Subquery(run.values("final_decision")[:1]),
            truth_type=Subquery(truth.values("dominant_type")[:1]),
            truth_source=Subquery(truth.values("source")[:1]),
            truth_state=Subquery(truth.values("state")[:1]),
            packet_id=Subquery(packet.values("pk")[:1]),
            packet_status=Subquery(packet.values("status")[:1]),
            packet_type=Subquery(packet.values("dominant_type")[:1]),
            blind=Value(False)
            if visibility.sees_all(user)
            else ExpressionWrapper(visibility.blind_documents(user), output_field=BooleanField()),
        )
        .order_by("-created_at")
    )
    if status in Document.Status.values:
        documents = documents.filter(status=status)
    else:  # deleted documents (retention) are listed only when asked for
        documents = documents.exclude(status=Document.Status.DELETED)
    if search.strip():
        documents = documents.filter(original_filename__icontains=search.strip())
    return documents


def document_workspace(document: Document) -> dict[str, Any]:
    """The viewer of a check's page (an audit, a second review, an adjudication): the
    document page by page, with nothing of anyone's answer on it."""
    page_rows = list(document.pages.defer("boxes", "block_types").order_by("number"))
    is_pdf = document.mime_type == Document.MIME_PDF and bool(document.file)
    return {
        "pages": [
            {
                "number": row.number,
                "method": row.get_extraction_method_display(),
                "width": round(row.width or 612),
                "height": round(row.height or 792),
                "evidence": [],
                "pieces": [(row.text, "")] if row.text else [],
                "segment": 0,
            }
            for row in page_rows
        ],
        "is_pdf": is_pdf,
        "text_first": not is_pdf,
    }


def in_template_order(doc_type: str, names: list[str]) -> list[str]:
    """Field names in the order their template lists them (JSON storage loses the order)."""
    template = find_template(packs(), doc_type)
    order = {f.name: i for i, f in enumerate(template.fields)} if template else {}
    return sorted(names, key=lambda name: (order.get(name, len(order)), name))


def fields_for_display(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ground-truth field records with every value as text (lists joined), in template order,
    for the page."""
    shown = []
    for record in records:
        fields = {}
        stored = record.get("fields", {})
        for name in in_template_order(record.get("doc_type", ""), list(stored)):
            data = stored[name]
            value = data.get("value")
            fields[name] = {
                **data,
                "value": "; ".join(map(str, value)) if isinstance(value, list) else value,
            }
        doc_type = record.get("doc_type", "")
        shown.append(
            {**record, "fields": fields, "type_name": DISPLAY_NAMES.get(doc_type, doc_type)}
        )
    return shown


def packet_decisions(packet: ReviewPacket) -> list[Review]:
    """Every decision on the packet, the standing one first, withdrawn ones after."""
    return list(
        Review.objects.filter(packet=packet)
        .select_related("reviewer", "withdrawn_by", "ground_truth")
        .order_by(F("withdrawn_at").desc(nulls_first=True), "-finished_at")
    )


def packet_attempts(packet: ReviewPacket) -> list[Attempt]:
    return list(
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


UNCERTAIN_STATUSES = frozenset({"missing", "ambiguous"})
SURE = 0.9  # a value read at the first search level: under its label, cleanly
VOUCHED_SCORE = 0.95  # the loop's score from which its values are vouched for


def uncertain_fields(doc_type: str, stored: dict[str, Any]) -> list[str]:
    """The required and important fields of an extraction that a reader must check: stated
    but not read, several values, a value withdrawn, or a value read less surely than under
    its label (``SURE``)."""
    template = find_template(packs(), doc_type)
    if template is None:
        return []
    names = []
    for spec in template.fields:
        if spec.tier == Tier.OPTIONAL or spec.name not in stored:
            continue
        data = stored[spec.name] or {}
        status = data.get("status")
        withdrawn = data.get("withdrawn") not in (None, "", [])
        unsure = status == "found" and float(data.get("confidence") or 0.0) < SURE
        if status in UNCERTAIN_STATUSES or withdrawn or unsure:
            names.append(spec.name)
    return names


def packet_extractions(packet: ReviewPacket) -> list[dict[str, Any]]:
    """Each extraction of the packet's run with its fields for the page, the fields a reader
    must check (``uncertain``) and whether its score vouches for its values."""
    rows = []
    for extraction in Extraction.objects.filter(run_id=packet.run_id).order_by("segment_index"):
        fields = []
        uncertain = uncertain_fields(extraction.doc_type, extraction.fields)
        for name in in_template_order(extraction.doc_type, list(extraction.fields)):
            data = extraction.fields[name]
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
                    "canonical": data.get("canonical"),
                    "uncertain": name in uncertain,
                }
            )
        score = extraction.final_score
        rows.append(
            {
                "extraction": extraction,
                "fields": fields,
                "uncertain": uncertain,
                "vouched": score is not None and score >= VOUCHED_SCORE and not uncertain,
            }
        )
    return rows


# -- ground truth -----------------------------------------------------------------------------


def ground_truth_current_count() -> int:
    """How many documents have a current, standing ground-truth record."""
    return (
        GroundTruth.objects.filter(superseded_by__isnull=True)
        .exclude(source=GroundTruth.Source.WITHDRAWN)
        .count()
    )


def current_ground_truth(document: Document) -> GroundTruth | None:
    """The document's standing ground truth; None when there is none, or when its last
    decision was withdrawn and it waits to be decided again."""
    return (
        GroundTruth.objects.filter(document=document, superseded_by__isnull=True)
        .exclude(source=GroundTruth.Source.WITHDRAWN)
        .select_related("reviewer")
        .first()
    )


def _current_truth() -> Any:
    return GroundTruth.objects.filter(superseded_by__isnull=True).exclude(
        source=GroundTruth.Source.WITHDRAWN
    )


def training_ground_truth(sme_only: bool = False) -> list[tuple[str, str, list[str]]]:
    """(document id, type, page texts) of every document's current ground truth, the
    training data of the trained classifier. ``sme_only`` leaves out auto-accepted answers."""
    records = _current_truth()
    if sme_only:
        records = records.exclude(source=GroundTruth.Source.AUTO_ACCEPTED)
    truth = dict(records.values_list("document_id", "dominant_type"))
    pages: dict[Any, list[str]] = {key: [] for key in truth}
    for document_id, text in (
        Page.objects.filter(document_id__in=list(truth))
        .order_by("document_id", "number")
        .values_list("document_id", "text")
    ):
        pages[document_id].append(text or "")
    return [(str(key), label, pages[key]) for key, label in truth.items() if pages[key]]


def learning_ground_truth() -> list[tuple[str, str, list[str], bool]]:
    """(document id, type, page texts, whether a clinician gave the label) of every
    document's current ground truth: the learning loop's data. A clinician gave it when it was
    decided on a packet, or settled by an audit, a second review or an adjudication (those
    write SME sources too); an accepted machine answer, audited or not yet, is not.

    In the order the labels were given (oldest first): the exemplar memory replays each
    source's labels in this order to tell which decision certified it."""
    truth = {
        key: (label, source != GroundTruth.Source.AUTO_ACCEPTED)
        for key, label, source in _current_truth()
        .order_by("created_at", "pk")
        .values_list("document_id", "dominant_type", "source")
    }
    pages: dict[Any, list[str]] = {key: [] for key in truth}
    for document_id, text in (
        Page.objects.filter(document_id__in=list(truth))
        .order_by("document_id", "number")
        .values_list("document_id", "text")
    ):
        pages[document_id].append(text or "")
    return [
        (str(key), label, pages[key], clinician)
        for key, (label, clinician) in truth.items()
        if pages[key]
    ]


def clinician_label_count() -> int:
    """Current labels that clinicians gave (the learning loop counts new ones)."""
    return _current_truth().exclude(source=GroundTruth.Source.AUTO_ACCEPTED).count()


def clinician_run_labels() -> list[tuple[int, str]]:
    """(run id, type) of every current label a clinician gave on a run (a packet's decision,
    an audit's correction): what the learned waivers count (reliability.waivers)."""
    return [
        (int(run_id), str(label))
        for run_id, label in _current_truth()
        .exclude(source=GroundTruth.Source.AUTO_ACCEPTED)
        .filter(run__isnull=False)
        .values_list("run_id", "dominant_type")
    ]


def corrected_examples(*, limit: int = 500) -> list[tuple[int, Any, str, str]]:
    """(ground-truth id, document id, corrected type, text) of the latest SME corrections: the
    examples the LLM is shown. The text is the document's pages and nothing else (never a
    reviewer's notes or reasons). A document whose text is untrusted is never an example: one
    of its runs recorded text addressed to a language model, or hidden text
    (engine.verifiers.v3_domain.UNTRUSTED_TEXT_CODES). A clinician may correct its type; its
    words are not put in front of a model again."""
    untrusted = Issue.objects.filter(
        attempt__run__document_id=OuterRef("document_id"), code__in=UNTRUSTED_TEXT_CODES
    )
    rows = list(
        _current_truth()
        .filter(source=GroundTruth.Source.SME_CORRECTED)
        .exclude(Exists(untrusted))
        .order_by("-created_at")
        .values_list("pk", "document_id", "dominant_type")[:limit]
    )
    texts: dict[Any, list[str]] = {}
    for document_id, text in (
        Page.objects.filter(document_id__in=[r[1] for r in rows])
        .order_by("document_id", "number")
        .values_list("document_id", "text")
    ):
        texts.setdefault(document_id, []).append(text or "")
    return [
        (pk, document_id, label, "\n\n".join(texts[document_id]))
        for pk, document_id, label in rows
        if texts.get(document_id)
    ]


def ground_truth_fields(
    run: Run, corrections: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Per segment: doc type and each field's value/status/confidence/snippet, with any
    reviewer corrections applied (marked as such)."""
    return [
        extraction_record(extraction, corrections or {})
        for extraction in run.extractions.filter(status=Extraction.Status.COMPLETED)
    ]


def ground_truth_selection(
    *,
    start: date | None = None,
    end: date | None = None,
    source: str = "",
    doc_type: str = "",
    state: str = "",
    all_versions: bool = False,
) -> QuerySet[GroundTruth]:
    """The ground-truth records an export holds, in export order (document SHA-256, then
    id, then version). ``state`` ``final`` or ``provisional`` keeps the versions in that
    state; empty keeps both."""
    records = GroundTruth.objects.select_related("document", "reviewer", "run", "superseded_by")
    if not all_versions:
        # The current version only; a withdrawn decision leaves no ground truth to export.
        # NOT EXISTS rather than superseded_by IS NULL: PostgreSQL plans it as an anti-join
        # with a true row estimate; the outer join's "IS NULL" filter it estimated at one
        # row, and a streamed export's cursor then chose a nested loop (quadratic).
        newer = GroundTruth.objects.filter(supersedes=OuterRef("pk"))
        records = records.filter(~Exists(newer)).exclude(source=GroundTruth.Source.WITHDRAWN)
    if start:
        records = records.filter(created_at__date__gte=start)
    if end:
        records = records.filter(created_at__date__lte=end)
    if source:
        records = records.filter(source=source)
    if doc_type:
        records = records.filter(dominant_type=doc_type)
    if state:
        records = records.filter(state=state)
    # The id breaks ties between documents deleted under the retention policy (no SHA-256).
    return records.order_by("document__sha256", "document_id", "version")


# -- metrics ----------------------------------------------------------------------------------


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


def review_metrics() -> dict[str, Any]:
    """Decision mix, auto-fix success, attempts, turnaround and reviewer agreement per type,
    all as SQL aggregates (medians in the database): no review or run is loaded into Python."""
    runs = Run.objects.filter(status=Run.Status.COMPLETED)
    decided = runs.aggregate(
        total=Count("pk"),
        accepted=Count("pk", filter=Q(final_decision="AUTO_ACCEPT")),
        escalated=Count("pk", filter=Q(final_decision="ESCALATE_TO_SME")),
        retried=Count("pk", filter=Q(attempts_count__gt=1)),
        retried_accepted=Count("pk", filter=Q(attempts_count__gt=1, final_decision="AUTO_ACCEPT")),
        llm_calls=Avg("llm_calls"),
    )
    total = decided["total"] or 0
    median_attempts = percentile(runs, "attempts_count", 0.5) if total else None
    # A withdrawn decision (undone, or reopened by an admin) no longer counts.
    reviews = Review.objects.filter(finished_at__isnull=False, withdrawn_at__isnull=True)
    turnaround = ExpressionWrapper(
        F("finished_at") - F("escalated_at"), output_field=DurationField()
    )
    median_turnaround = (
        percentile(reviews, turnaround, 0.5, output_field=DurationField())
        if reviews.exists()
        else None
    )
    names = {t.value: DISPLAY_NAMES[t] for t in DOC_TYPES}
    agreement = [
        {
            "type": names.get(row["claimed_type"], row["claimed_type"]),
            "reviews": row["reviews"],
            "agreed": row["agreed"],
            "rate": row["agreed"] / row["reviews"],
        }
        for row in reviews.values("claimed_type")
        .annotate(
            reviews=Count("pk"), agreed=Count("pk", filter=Q(outcome=Review.Outcome.VALIDATED))
        )
        .order_by("claimed_type")
        if row["reviews"]
    ]
    order = {name: i for i, name in enumerate(names.values())}
    agreement.sort(key=lambda a: order.get(a["type"], len(order)))
    return {
        "documents": Document.objects.filter(status=Document.Status.READY).count(),
        "decided": decided,
        "escalation_rate": decided["escalated"] / total if total else 0.0,
        "autofix_success": decided["retried_accepted"] / decided["retried"]
        if decided["retried"]
        else None,
        "median_attempts": median_attempts,
        "turnaround_hours": _hours(median_turnaround),
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
        "llm": llm_metrics(),
    }


LLM_TOTALS = {
    "calls": Sum("llm_calls"),
    "requests": Sum("llm_requests"),
    "cache_hits": Sum("llm_cache_hits"),
    "tokens_in": Sum("tokens_in"),
    "tokens_out": Sum("tokens_out"),
    "tokens_thinking": Sum("tokens_thinking"),
    "cost": Sum("cost_usd"),
}


def llm_metrics() -> dict[str, Any]:
    """Language-model use and spend, all from SQL aggregates: totals, per model, today against
    the daily budget, runs waiting (and why) and the shared circuit."""
    llm_runs = Run.objects.exclude(classifier="offline")
    totals = llm_runs.aggregate(runs=Count("pk"), **LLM_TOTALS)
    completed = llm_runs.filter(status=Run.Status.COMPLETED).aggregate(
        runs=Count("pk"),
        calls=Avg("llm_calls"),
        tokens_in=Avg("tokens_in"),
        tokens_out=Avg("tokens_out"),
        tokens_thinking=Avg("tokens_thinking"),
        cost=Avg("cost_usd"),
    )
    by_model = list(
        llm_runs.values("model").annotate(runs=Count("pk"), **LLM_TOTALS).order_by("-runs")
    )
    today = llm_runs.filter(started_at__gte=llm_runtime.day_start()).aggregate(
        runs=Count("pk"), calls=Sum("llm_calls"), cost=Sum("cost_usd")
    )
    waiting = Run.objects.filter(status=Run.Status.WAITING).aggregate(
        runs=Count("pk"),
        for_budget=Count("pk", filter=Q(wait_code=Run.WaitCode.BUDGET)),
        next_try=Min("retry_at"),
    )
    failed = llm_runs.filter(status=Run.Status.FAILED, error_code=Run.ErrorCode.LLM_FAILED).count()
    budget = settings.LLM_DAILY_BUDGET_USD
    circuit = llm_runtime.circuit_state()
    return {
        "totals": totals,
        "per_completed_run": completed,
        "by_model": by_model,
        "today": today,
        "budget": budget,
        "budget_spent": bool(budget) and (today["cost"] or 0) >= budget,
        "waiting": waiting,
        "failed": failed,
        "circuit_open_until": datetime.fromtimestamp(
            circuit.paused_until, tz=timezone.get_current_timezone()
        )
        if circuit is not None and circuit.remaining() > 0
        else None,
        "circuit_reason": circuit.reason if circuit is not None else "",
    }


def _hours(value: Any) -> float | None:
    """A duration from the database (a timedelta; SQLite may give microseconds) in hours."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds() / 3600
    return float(value) / 3_600_000_000


# -- audits and second reviews ------------------------------------------------------------------


def audit_queue() -> list[AuditSample]:
    """Runs waiting for a blind audit, oldest first."""
    return list(
        AuditSample.objects.filter(status=AuditSample.Status.PENDING)
        .select_related("document")
        .order_by("created_at")
    )


def document_pages(document: Document) -> list[Page]:
    return list(document.pages.order_by("number"))


def second_reviews_for(user: Any) -> list[SecondReview]:
    """First answers waiting for this user's independent second review (not their own)."""
    return list(
        SecondReview.objects.filter(status=SecondReview.Status.AWAITING)
        .exclude(first_by=user)
        .select_related("document")
        .order_by("created_at")
    )


def adjudications_for(user: Any) -> list[SecondReview]:
    """Disagreements this user may settle (they gave neither answer)."""
    return list(
        SecondReview.objects.filter(status=SecondReview.Status.ADJUDICATION)
        .exclude(first_by=user)
        .exclude(second_reviewer=user)
        .select_related("document")
        .order_by("created_at")
    )


def audit_disputes() -> list[SecondReview]:
    """Audits that disagreed with an accepted run and whose checks are still open: the
    accepted label stands, provisional, until they end (for Admins)."""
    return list(
        SecondReview.objects.filter(
            kind=SecondReview.Kind.AUDIT, status__in=SecondReview.OPEN_STATUSES
        )
        .select_related("document", "audit", "first_by")
        .order_by("created_at")
    )


def awaiting_second_review(packet: ReviewPacket) -> SecondReview | None:
    """The open second review of the packet's standing decision, if any: until it agrees or
    is adjudicated, that decision's ground truth is not final."""
    return (
        SecondReview.objects.filter(
            packet=packet,
            status__in=SecondReview.OPEN_STATUSES,
            first_review__withdrawn_at__isnull=True,
        )
        .select_related("first_review")
        .first()
    )


AUDIT_SETTLED = (
    AuditSample.Verdict.AGREES,
    AuditSample.Verdict.ERROR,
    AuditSample.Verdict.OVERTURNED,
)


def audit_metrics() -> dict[str, Any]:
    """Per machine type, the accepted-error rate measured by audits whose checks ended (an
    auditor's disagreement counts as an error once a second review or an adjudication
    confirmed it), with its 95% Wilson interval.

    The warning needs evidence: a type is flagged only when the one-sided 95% lower bound of
    its error rate is above AUDIT_ERROR_LIMIT (the audits show the rate is above the limit,
    not merely that they cannot yet show it is below). A type whose upper bound is still above
    the limit without such evidence is shown as "not enough audits yet"."""
    names = {t.value: DISPLAY_NAMES[t] for t in DOC_TYPES}
    rows = (
        AuditSample.objects.filter(verdict__in=AUDIT_SETTLED)
        .values("machine_type")
        .annotate(
            audited=Count("pk"),
            errors=Count("pk", filter=Q(verdict=AuditSample.Verdict.ERROR)),
        )
        .order_by("machine_type")
    )
    limit = settings.AUDIT_ERROR_LIMIT
    per_type = []
    for row in rows:
        low, high = quality.wilson_interval(row["errors"], row["audited"])
        one_sided_low, _ = quality.wilson_interval(
            row["errors"], row["audited"], z=quality.Z_95_ONE_SIDED
        )
        per_type.append(
            {
                "type": names.get(row["machine_type"], row["machine_type"]),
                "audited": row["audited"],
                "errors": row["errors"],
                "rate": row["errors"] / row["audited"],
                "low": low,
                "high": high,
                "alert": one_sided_low > limit,
                "undecided": one_sided_low <= limit < high,
            }
        )
    order = {name: i for i, name in enumerate(names.values())}
    per_type.sort(key=lambda r: order.get(r["type"], len(order)))
    return {
        "audit_rows": per_type,
        "audit_limit": limit,
        "audit_pending": AuditSample.objects.filter(status=AuditSample.Status.PENDING).count(),
        "audit_disputed": AuditSample.objects.filter(verdict=AuditSample.Verdict.DISPUTED).count(),
        "audit_alerts": [r["type"] for r in per_type if r["alert"]],
    }


def second_review_metrics() -> dict[str, Any]:
    """Agreement between first and second answers over every completed second review:
    Cohen's kappa of the documents' types, overall and per type (is it this type or not),
    page-level type agreement (each page's type under both segmentations) and the share of
    segmentations that agree exactly (pages and types)."""
    done = list(
        SecondReview.objects.exclude(second_type="")
        .exclude(status=SecondReview.Status.CANCELLED)
        .select_related("document")
        .only("first_type", "second_type", "first_segments", "second_segments", "document")
    )
    pairs = [(s.first_type, s.second_type) for s in done]
    per_type = quality.kappa_per_type(pairs, [t.value for t in DOC_TYPES])
    rows = [
        {
            "type": DISPLAY_NAMES[t],
            "pairs": sum(1 for a, b in pairs if t.value in (a, b)),
            "kappa": per_type[t.value],
        }
        for t in DOC_TYPES
    ]
    pages_same = pages_total = exact = 0
    for second in done:
        first = segmentation_from_json(second.first_segments)
        answer = segmentation_from_json(second.second_segments)
        count = max([b for _, b, _ in first + answer] or [0])
        a, b = page_types(first, count), page_types(answer, count)
        pages_same += sum(1 for x, y in zip(a, b, strict=True) if x == y)
        pages_total += count
        exact += segmentations_agree(first, answer)
    return {
        "kappa_overall": quality.cohen_kappa(pairs),
        "kappa_pairs": len(pairs),
        "kappa_rows": [r for r in rows if r["pairs"]],
        "page_agreement": pages_same / pages_total if pages_total else None,
        "segmentation_agreement": exact / len(done) if done else None,
        "second_open": SecondReview.objects.filter(status=SecondReview.Status.AWAITING).count(),
        "adjudication_open": SecondReview.objects.filter(
            status=SecondReview.Status.ADJUDICATION
        ).count(),
    }


# -- the learning loop ---------------------------------------------------------------------------

CHART_WIDTH = 600
CHART_HEIGHT = 120


def _series_chart(
    *,
    label: str,
    days: list[date],
    values: dict[date, float],
    activations: list[dict[str, Any]],
) -> dict[str, Any]:
    """One rate per day as an SVG polyline (server-rendered, like _bars.html), with a
    vertical mark at each model activation. The y axis runs from 0 to the largest rate (at
    least 1%), so a small rate such as the audited error is still readable."""
    peak = max([*values.values(), 0.01])
    span = max(1, len(days) - 1)

    def x(day: date) -> float:
        return round(CHART_WIDTH * (day - days[0]).days / span, 1)

    def y(value: float) -> float:
        return round(CHART_HEIGHT - CHART_HEIGHT * value / peak, 1)

    points = " ".join(f"{x(d)},{y(values[d])}" for d in days if d in values)
    dots = [
        {"x": x(d), "y": y(values[d]), "day": d, "value": values[d]} for d in days if d in values
    ]
    marks = [
        {
            "x": x(timezone.localtime(a["activated_at"]).date()),
            "version": a["version"][:7],
            "day": timezone.localtime(a["activated_at"]).date(),
        }
        for a in activations
        if timezone.localtime(a["activated_at"]).date() >= days[0]
    ]
    return {
        "label": label,
        "points": points,
        "dots": dots,
        "marks": marks,
        "peak": peak,
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "first": days[0],
        "last": days[-1],
        "empty": not values,
    }


def learning_metrics() -> dict[str, Any]:
    """The learning loop's section of the metrics page (templates/review/_learning.html):
    reliability's overview, with the audited accepted-error rate per day from the audits."""
    from reliability.selectors import LEARNING_DAYS, learning_overview

    overview = learning_overview()
    today = timezone.localdate()
    days = [today - timedelta(days=n) for n in range(LEARNING_DAYS - 1, -1, -1)]
    audits = (
        AuditSample.objects.filter(verdict__in=AUDIT_SETTLED, sampled_on__gte=days[0])
        .values("sampled_on")
        .annotate(
            audited=Count("pk"), errors=Count("pk", filter=Q(verdict=AuditSample.Verdict.ERROR))
        )
    )
    daily = overview["daily"]
    charts = [
        _series_chart(
            label="Escalation rate",
            days=days,
            values={r["day"]: r["escalated"] / r["runs"] for r in daily if r["runs"]},
            activations=overview["activations"],
        ),
        _series_chart(
            label="Audited accepted-error rate",
            days=days,
            values={r["sampled_on"]: r["errors"] / r["audited"] for r in audits if r["audited"]},
            activations=overview["activations"],
        ),
        _series_chart(
            label="Novelty rate",
            days=days,
            values={r["day"]: r["novel"] / r["runs"] for r in daily if r["runs"]},
            activations=overview["activations"],
        ),
    ]
    names = {t.value: DISPLAY_NAMES[t] for t in DOC_TYPES}
    thresholds = [
        {
            **row,
            "type_name": "Every type"
            if row["doc_type"] == "*"
            else names.get(row["doc_type"], row["doc_type"]),
            "scope": "" if row["source"] == "*" else row["source"],
        }
        for row in overview["thresholds"]
    ]
    return {**overview, "charts": charts, "threshold_rows": thresholds, "days": LEARNING_DAYS}
