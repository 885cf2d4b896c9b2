"""One segment's fields: pick the template for its type, drive the loop with the offline or
the LLM extractor, and report the outcome with page numbers of the whole document. Pure: no
Django. Runs (reliability) and corrections (review) both extract through this one step."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from engine.fields.extractors import gemini_extractor, offline_extractor
from engine.fields.loop import LoopConfig, run_loop
from engine.fields.templates import Pack, find_template
from engine.llm import LLMError
from engine.protocols import LLMClient

COMPLETED = "completed"
REFUSED = "refused"
FAILED = "failed"


@dataclass
class SegmentFields:
    status: str  # completed | refused | failed
    reason: str = ""  # why a segment was refused or failed
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    template_version: str = ""
    extractor: str = ""
    final_score: float | None = None
    met_threshold: bool = False
    iterations: list[dict[str, Any]] = field(default_factory=list)
    stopped_reason: str = ""
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0


def extract_segment(
    *,
    packs: dict[str, Pack],
    doc_type: str,
    pages: list[str],
    start_page: int,
    config: LoopConfig,
    client: LLMClient | None = None,
) -> SegmentFields:
    """``pages`` are the segment's own pages; ``start_page`` is where it starts in the
    document, so that each field's page is a page number of the whole document."""
    template = find_template(packs, doc_type)
    if template is None:
        return SegmentFields(
            status=REFUSED, reason=f"No template for {doc_type} in packs {', '.join(packs)}."
        )
    started = time.perf_counter()
    extractor = (
        gemini_extractor(client, template, pages)
        if client is not None
        else offline_extractor(template, pages)
    )
    try:
        result = run_loop(template=template, pages=pages, extractor=extractor, config=config)
    except LLMError as exc:
        return SegmentFields(status=FAILED, reason=f"The language model call failed: {exc}")
    return SegmentFields(
        status=COMPLETED,
        fields={
            k: {**v.as_dict(), "page": (v.page + start_page - 1) if v.page else None}
            for k, v in result.best.fields.items()
        },
        template_version=next((p.version for p in packs.values() if p.template(doc_type)), ""),
        extractor="gemini" if client is not None else "offline",
        final_score=result.final_score,
        met_threshold=result.met_threshold,
        iterations=[it.as_dict() for it in result.iterations],
        stopped_reason=result.stopped_reason,
        warnings=[i["message"] for i in result.best.evaluation.issues if i["severity"] != "minor"],
        seconds=round(time.perf_counter() - started, 4),
    )
