"""Review data as files: the packet as JSON (export_packet and the download link) and ground
truth as JSONL or CSV (the export page and export_ground_truth)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from datetime import UTC
from typing import Any

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
]


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
    }


def export_ground_truth(records: Iterable[GroundTruth], *, fmt: str) -> bytes:
    """JSONL or CSV, byte-identical for the same records (stable order, sorted keys)."""
    rows = [ground_truth_as_dict(t) for t in records]
    if fmt == "jsonl":
        return "".join(
            json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows
        ).encode()
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(EXPORT_FIELDS)
        for r in rows:
            r = dict(
                r,
                classification=json.dumps(r["classification"], sort_keys=True),
                fields=json.dumps(r["fields"], sort_keys=True),
            )
            writer.writerow(["" if r[f] is None else r[f] for f in EXPORT_FIELDS])
        return buffer.getvalue().encode()
    raise ValueError(f"unknown export format {fmt!r}")
