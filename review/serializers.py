"""Review data as files: the packet as JSON (export_packet and the download link) and ground
truth as JSONL or CSV (the export page and export_ground_truth)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from datetime import UTC
from typing import Any

from documents.models import Page
from review.models import GroundTruth, ReviewPacket


def packet_as_dict(packet: ReviewPacket) -> dict[str, Any]:
    run = packet.run
    document = packet.document
    return {
        "packet_id": packet.pk,
        "status": packet.status,
        "priority": packet.priority,
        "created_at": packet.created_at.isoformat(),
        "document": {
            "id": str(document.pk),
            "filename": document.original_filename,
            "sha256": document.sha256,
            "page_count": document.page_count,
            "quality": document.quality,
        },
        "classification": packet.classification,
        "issues": packet.issues,
        "grounding": packet.grounding,
        "production_comparison": packet.comparison,
        "run": {
            "id": run.pk,
            "preset": run.preset,
            "classifier": run.classifier,
            "model": run.model,
            "prompt_version": run.prompt_version,
            "final_decision": run.final_decision,
            "stopped_reason": run.stopped_reason,
            "attempts": run.attempts_count,
            "llm_calls": run.llm_calls,
            "skipped_checks": run.skipped_checks,
        },
        "history": packet.history,
    }


EXPORT_FIELDS = [
    "document_id",
    "document_sha256",
    "filename",
    "version",
    "source",
    "dominant_type",
    "run_id",
    "model",
    "prompt_version",
    "reviewer",
    "decided_at",
    "classification",
    "fields",
    "reason",
    "note",
]
TEXT_FIELD = "pages"  # each page's text, only when asked for


def ground_truth_as_dict(truth: GroundTruth) -> dict[str, Any]:
    return {
        "document_id": str(truth.document_id),
        "document_sha256": truth.document.sha256,
        "filename": truth.document.original_filename,
        "version": truth.version,
        "source": truth.source,
        "dominant_type": truth.dominant_type,
        "run_id": truth.run_id,
        "model": truth.model,
        "prompt_version": truth.prompt_version,
        "reviewer": truth.reviewer.username if truth.reviewer else None,
        "decided_at": truth.created_at.astimezone(UTC).isoformat(),
        "classification": truth.classification,
        "fields": truth.fields,
        "reason": truth.reason,
        "note": truth.note,
    }


def page_texts(records: Iterable[GroundTruth]) -> dict[str, list[dict[str, Any]]]:
    """Each record's document pages (number and text), by document id: the on-request
    training text of an export."""
    texts: dict[str, list[dict[str, Any]]] = {}
    rows = (
        Page.objects.filter(document_id__in={t.document_id for t in records})
        .order_by("document_id", "number")
        .values_list("document_id", "number", "text")
    )
    for document_id, number, text in rows:
        texts.setdefault(str(document_id), []).append({"number": number, "text": text})
    return texts


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell that a spreadsheet will not run: text that starts like a formula
    (= + - @, or a tab or carriage return before one) gets a leading apostrophe (OWASP's advice
    against CSV injection). Numbers stay numbers; None is empty."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def export_ground_truth(
    records: Iterable[GroundTruth], *, fmt: str, with_text: bool = False
) -> bytes:
    """JSONL or CSV, byte-identical for the same records (stable order, sorted keys).
    ``with_text`` adds each page's text (``pages``: number and text), for training."""
    truths = list(records)
    rows = [ground_truth_as_dict(t) for t in truths]
    columns = list(EXPORT_FIELDS)
    if with_text:
        texts = page_texts(truths)
        for row in rows:
            row[TEXT_FIELD] = texts.get(row["document_id"], [])
        columns.append(TEXT_FIELD)
    if fmt == "jsonl":
        return "".join(
            json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows
        ).encode()
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for r in rows:
            r = dict(
                r,
                classification=json.dumps(r["classification"], sort_keys=True),
                fields=json.dumps(r["fields"], sort_keys=True),
            )
            if with_text:
                r[TEXT_FIELD] = json.dumps(r[TEXT_FIELD], sort_keys=True, ensure_ascii=False)
            writer.writerow([csv_cell(r[f]) for f in columns])
        return buffer.getvalue().encode()
    raise ValueError(f"unknown export format {fmt!r}")
