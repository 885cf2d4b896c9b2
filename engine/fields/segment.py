"""One segment's fields: pick the template for its type (for an Other segment, the form
template it fills best, when form packs are in force), drive the loop with the offline or the
LLM extractor, and report the outcome with page numbers of the whole document. Pure: no
Django. Runs (reliability) and corrections (review) both extract through this one step."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.fields.extractors import (
    answer_fields,
    gemini_extractor,
    gemini_filler,
    offline_extractor,
    prefilled_extractor,
)
from engine.fields.forms import FormMatch, match_form, offline_filler
from engine.fields.library import find_template
from engine.fields.loop import LoopConfig, run_loop
from engine.fields.templates import Pack, Template
from engine.llm import LLMError, LLMUnavailable
from engine.protocols import LLMClient

COMPLETED = "completed"
OTHER = "other"  # the clinical type a form (a W-2, a 1099) is classified as
REFUSED = "refused"
FAILED = "failed"


@dataclass
class SegmentFields:
    status: str  # completed | refused | failed
    reason: str = ""  # why a segment was refused or failed
    doc_type: str = ""  # the template used: the segment's type, or the form it filled
    form: FormMatch | None = None  # an Other segment matched against the form templates
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    template_version: str = ""
    extractor: str = ""
    first_score: float | None = None
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
    forms: list[Template] | None = None,
    expected_year: int | None = None,
    given: Mapping[str, Mapping[str, Any]] | None = None,
) -> SegmentFields:
    """``pages`` are the segment's own pages; ``start_page`` is where it starts in the
    document, so that each field's page is a page number of the whole document. ``forms``
    (the form templates in force) are tried on a segment of type Other: the best-filled form
    that qualifies gives the template; ``expected_year`` checks a tax form's year. ``given``
    is an LLM's answer for these fields already (the classification call extracts them too):
    it is the first iteration, with no call. LLMUnavailable propagates (the run waits); any
    other LLM failure is this segment's failure."""
    started = time.perf_counter()
    template = find_template(packs, doc_type)
    form: FormMatch | None = None
    if forms and doc_type == OTHER:
        try:
            form = match_form(
                forms,
                pages,
                expected_year=expected_year,
                filler=gemini_filler(client) if client is not None else offline_filler,
            )
        except LLMUnavailable:
            raise
        except LLMError as exc:
            return SegmentFields(status=FAILED, reason=f"The language model call failed: {exc}")
        if form.chosen is not None:
            template = form.chosen.template
    if template is None:
        return SegmentFields(
            status=REFUSED,
            reason=f"No template for {doc_type} in packs {', '.join(packs)}.",
            form=form,
        )
    extractor = (
        gemini_extractor(client, template, pages)
        if client is not None
        else offline_extractor(template, pages)
    )
    if given is not None and client is not None and template.doc_type == doc_type:
        extractor = prefilled_extractor(answer_fields(template, given, pages), extractor)
    try:
        result = run_loop(template=template, pages=pages, extractor=extractor, config=config)
    except LLMUnavailable:
        raise
    except LLMError as exc:
        return SegmentFields(
            status=FAILED, reason=f"The language model call failed: {exc}", form=form
        )
    return SegmentFields(
        status=COMPLETED,
        doc_type=template.doc_type,
        form=form,
        fields={
            k: {**v.as_dict(), "page": (v.page + start_page - 1) if v.page else None}
            for k, v in result.best.fields.items()
        },
        template_version=next(
            (p.version for p in packs.values() if p.template(template.doc_type)), ""
        ),
        extractor=str(getattr(client, "provider", "gemini")) if client is not None else "offline",
        first_score=result.iterations[0].evaluation.overall,
        final_score=result.final_score,
        met_threshold=result.met_threshold,
        iterations=[it.as_dict() for it in result.iterations],
        stopped_reason=result.stopped_reason,
        warnings=[i["message"] for i in result.best.evaluation.issues if i["severity"] != "minor"],
        seconds=round(time.perf_counter() - started, 4),
    )
