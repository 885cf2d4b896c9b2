"""Review data as files: the packet as JSON (export_packet and the download link) and ground
truth as JSONL or CSV (the export page and export_ground_truth)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from datetime import UTC
from typing import Any

from documents.models import Page
from review.deidentify import DEID_FIELD, ExportScrub
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
    # provisional while a check on the version is open, final once it is done. Beside the
    # source it qualifies (SME_CORRECTED + provisional: a correction awaiting its second
    # review); every other column keeps its order, and the CSV header names them all.
    "state",
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
        # Both null once the document is deleted under the retention policy: its ground
        # truth is kept, de-identified, under the same document id.
        "document_sha256": truth.document.sha256,
        "filename": truth.document.original_filename or None,
        "version": truth.version,
        "source": truth.source,
        "state": truth.state,
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


EXPORT_CHUNK = 1000  # records per batch of a streamed export (one page-text query each)


def _batches(records: Iterable[GroundTruth], size: int) -> Iterator[list[GroundTruth]]:
    batch: list[GroundTruth] = []
    for truth in records:
        batch.append(truth)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def ground_truth_chunks(
    records: Iterable[GroundTruth],
    *,
    fmt: str,
    with_text: bool = False,
    chunk_size: int = EXPORT_CHUNK,
    deid: ExportScrub | None = None,
) -> Iterator[bytes]:
    """JSONL or CSV as it is read: the CSV header, then one chunk per batch of records (the
    batch's page texts fetched in one query). The chunks join to the same bytes for the same
    records whatever the batch size: stable order, sorted keys, one line per record. With
    ``deid`` every row is de-identified (its pages are read to learn the document's PHI,
    with or without ``with_text``) and gains a last column, ``deidentification``."""
    if fmt not in ("jsonl", "csv"):
        raise ValueError(f"unknown export format {fmt!r}")
    columns = list(EXPORT_FIELDS) + ([TEXT_FIELD] if with_text else [])
    columns += [DEID_FIELD] if deid else []
    if fmt == "csv":
        yield _csv_lines([columns])
    for batch in _batches(records, chunk_size):
        texts = page_texts(batch) if with_text or deid else {}
        rows = [ground_truth_as_dict(t) for t in batch]
        if with_text:
            for row in rows:
                row[TEXT_FIELD] = texts.get(row["document_id"], [])
        if deid:
            rows = [deid_row(deid, row, texts, with_text=with_text) for row in rows]
        if fmt == "jsonl":
            yield "".join(
                json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows
            ).encode()
        else:
            yield _csv_lines([_csv_row(r, columns, with_text=with_text) for r in rows])


def deid_row(
    deid: ExportScrub,
    row: dict[str, Any],
    texts: dict[str, list[dict[str, Any]]],
    *,
    with_text: bool,
) -> dict[str, Any]:
    return deid.record(
        row, texts.get(row["document_id"], []), with_text=TEXT_FIELD if with_text else None
    )


def _csv_row(row: dict[str, Any], columns: list[str], *, with_text: bool) -> list[Any]:
    row = dict(
        row,
        classification=json.dumps(row["classification"], sort_keys=True),
        fields=json.dumps(row["fields"], sort_keys=True),
    )
    if with_text:
        row[TEXT_FIELD] = json.dumps(row[TEXT_FIELD], sort_keys=True, ensure_ascii=False)
    return [csv_cell(row[f]) for f in columns]


def _csv_lines(rows: list[list[Any]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue().encode()


def export_ground_truth(
    records: Iterable[GroundTruth],
    *,
    fmt: str,
    with_text: bool = False,
    deid: ExportScrub | None = None,
) -> bytes:
    """JSONL or CSV in one piece (``ground_truth_chunks`` joined). ``with_text`` adds each
    page's text (``pages``: number and text), for training; ``deid`` de-identifies."""
    return b"".join(ground_truth_chunks(records, fmt=fmt, with_text=with_text, deid=deid))
