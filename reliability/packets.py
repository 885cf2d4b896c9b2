"""The review packet as JSON: the shape written by export_packet and the download link."""

from __future__ import annotations

from typing import Any

from review.models import ReviewPacket


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
