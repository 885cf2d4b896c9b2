"""Field extraction for a run: the loop per segment (computed first, no database work), its
records, the processing options and the template packs mirrored for the admin."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, cast

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field

from documents.models import Document
from engine.fields.extractors import (
    answer_fields,
    gemini_extractor,
    offline_extractor,
    prefilled_extractor,
)
from engine.fields.loop import LoopConfig, LoopResult, run_loop
from engine.fields.templates import Pack, Template, find_template, load_packs
from engine.llm import LLMError, LLMUnavailable, run_concurrently
from engine.pipeline import PRESETS
from engine.protocols import LLMClient
from engine.schemas import DOC_TYPES, ClassificationOutput, DocType
from reliability.models import Extraction, ExtractionTemplate, Run

logger = logging.getLogger(__name__)

POOR_OCR_REASON = (
    "Extraction refused: the scan's text recognition confidence is too low to "
    "extract fields reliably. Upload a clearer scan."
)


class ProcessingOptions(BaseModel):
    """Options a client may set per document (JSON API) and that presets may default."""

    model_config = ConfigDict(extra="forbid")

    enable_reliability_loop: bool = True
    quality_threshold: float | None = Field(None, ge=0.0, le=1.0)
    max_iterations: int | None = Field(None, ge=1, le=10)
    preset: str | None = None
    type_override: DocType | None = None

    def model_post_init(self, _context: Any) -> None:
        if self.preset is not None and self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {', '.join(PRESETS)}")


def loop_config(options: ProcessingOptions, preset: str) -> LoopConfig:
    """Settings, then the preset's overrides, then the request's own options."""
    values: dict[str, Any] = {
        "quality_threshold": settings.EXTRACTION_QUALITY_THRESHOLD,
        "max_iterations": settings.EXTRACTION_MAX_ITERATIONS,
        "min_improvement": settings.EXTRACTION_MIN_IMPROVEMENT,
        "timeout_seconds": settings.EXTRACTION_TIMEOUT_SECONDS,
    }
    presets = cast(dict[str, dict[str, Any]], settings.EXTRACTION_PRESETS)
    values.update(presets.get(preset, {}))
    if options.quality_threshold is not None:
        values["quality_threshold"] = options.quality_threshold
    if options.max_iterations is not None:
        values["max_iterations"] = options.max_iterations
    return LoopConfig(enabled=options.enable_reliability_loop, **values)


def packs() -> dict[str, Pack]:
    return load_packs(tuple(settings.EXTRACTION_PACKS))


def classification_templates(document: Document) -> list[Template]:
    """The templates the classification call may fill in the same answer: one per document
    type, from the packs in force; none when fields would not be extracted anyway."""
    options = ProcessingOptions.model_validate(document.options or {})
    if (
        not settings.AUTO_EXTRACT
        or document.quality == Document.Quality.LOW_OCR
        or options.type_override is not None
    ):
        return []
    loaded = packs()
    found = [find_template(loaded, t.value) for t in DOC_TYPES]
    return [t for t in found if t is not None]


# Fields already given by the classification call, by (start page, end page, type).
Prefilled = Mapping[tuple[int, int, str], Mapping[str, Mapping[str, Any]]]


def templates_sync() -> int:
    count = 0
    for name, pack in packs().items():
        for template in pack.templates:
            ExtractionTemplate.objects.update_or_create(
                pack=name,
                doc_type=template.doc_type,
                defaults={
                    "pack_version": pack.version,
                    "title": template.title,
                    "field_count": len(template.fields),
                    "definition": template.model_dump(mode="json"),
                },
            )
            count += 1
    ExtractionTemplate.objects.exclude(pack__in=list(packs())).delete()
    return count


def fields_extract(
    *,
    document: Document,
    pages: list[str],
    output: ClassificationOutput,
    preset: str,
    client: LLMClient | None = None,
    prefilled: Prefilled | None = None,
    single_pass: bool = False,
) -> list[Extraction]:
    """Extract fields for every segment of a classification. Computes only: the rows returned
    are unsaved (no run yet), so an LLM extractor never runs inside a database transaction.

    With an LLM, a segment whose fields the classification call already gave (same pages, same
    type) starts from them: no call, unless the loop asks for a better iteration. Segments run
    at once (up to the client's concurrency). LLMUnavailable propagates (the run waits); any
    other LLM failure marks that segment's extraction failed. ``single_pass`` turns the loop
    off (an escalated LLM run: a clinician reviews the fields, and the type may be wrong)."""
    options = ProcessingOptions.model_validate(document.options or {})
    config = loop_config(
        options.model_copy(update={"enable_reliability_loop": False}) if single_pass else options,
        preset,
    )
    loaded = packs()
    rows = []
    tasks: list[Callable[[], None]] = []
    for index, segment in enumerate(output.segments):
        doc_type = (options.type_override or segment.dominant_type).value
        row = Extraction(
            document=document,
            segment_index=index,
            start_page=segment.start_page,
            end_page=segment.end_page,
            doc_type=doc_type,
            options=options.model_dump(mode="json"),
        )
        rows.append(row)
        if document.quality == Document.Quality.LOW_OCR:
            row.status, row.refused_reason = Extraction.Status.REFUSED, POOR_OCR_REASON
            continue
        template = find_template(loaded, doc_type)
        if template is None:
            row.status = Extraction.Status.REFUSED
            row.refused_reason = (
                f"No template for {doc_type} in packs {', '.join(settings.EXTRACTION_PACKS)}."
            )
            continue
        segment_pages = pages[segment.start_page - 1 : segment.end_page]
        given = (prefilled or {}).get((segment.start_page, segment.end_page, doc_type))
        tasks.append(
            partial(
                _extract_segment,
                row=row,
                template=template,
                pages=segment_pages,
                config=config,
                client=client,
                given=given,
                version=_pack_version(loaded, doc_type),
            )
        )
    run_concurrently(tasks, client.max_concurrency if client is not None else 1)
    return rows


def _extract_segment(
    *,
    row: Extraction,
    template: Template,
    pages: Sequence[str],
    config: LoopConfig,
    client: LLMClient | None,
    given: Mapping[str, Mapping[str, Any]] | None,
    version: str,
) -> None:
    segment_pages = list(pages)
    started = time.perf_counter()
    extractor = (
        gemini_extractor(client, template, segment_pages)
        if client is not None
        else offline_extractor(template, segment_pages)
    )
    if given is not None and client is not None:
        extractor = prefilled_extractor(answer_fields(template, given, segment_pages), extractor)
    try:
        result: LoopResult = run_loop(
            template=template, pages=segment_pages, extractor=extractor, config=config
        )
    except LLMUnavailable:
        raise
    except LLMError as exc:
        row.status = Extraction.Status.FAILED
        row.refused_reason = f"The language model call failed: {exc}"
        return
    first = row.start_page
    row.status = Extraction.Status.COMPLETED
    row.template_version = version
    row.extractor = "gemini" if client is not None else "offline"
    row.fields = {
        k: {**v.as_dict(), "page": (v.page + first - 1) if v.page else None}
        for k, v in result.best.fields.items()
    }
    row.final_score = result.final_score
    row.met_threshold = result.met_threshold
    row.iterations_count = len(result.iterations)
    row.iterations = [it.as_dict() for it in result.iterations]
    row.stopped_reason = result.stopped_reason
    row.warnings = [i["message"] for i in result.best.evaluation.issues if i["severity"] != "minor"]
    row.seconds = round(time.perf_counter() - started, 4)


def fields_save(*, run: Run, rows: list[Extraction]) -> list[Extraction]:
    """Persist rows computed by fields_extract as the run's extractions."""
    for row in rows:
        row.run = run
    return Extraction.objects.bulk_create(rows)


def fields_record(
    *, run: Run, output: ClassificationOutput, client: LLMClient | None = None
) -> list[Extraction]:
    """Extract and save in one step, for a run that already exists (tests, re-extraction)."""
    pages = list(run.document.pages.order_by("number").values_list("text", flat=True))
    rows = fields_extract(
        document=run.document, pages=pages, output=output, preset=run.preset, client=client
    )
    return fields_save(run=run, rows=rows)


def _pack_version(loaded: dict[str, Pack], doc_type: str) -> str:
    return next((p.version for p in loaded.values() if p.template(doc_type)), "")
