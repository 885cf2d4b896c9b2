"""Field extraction for a run: the loop per segment (computed first, no database work), its
records, the processing options and the template packs mirrored for the admin."""

from __future__ import annotations

import logging
import time
from typing import Any, cast

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field

from documents.models import Document
from engine.fields.extractors import gemini_extractor, gemini_filler, offline_extractor
from engine.fields.forms import FormMatch, match_form, offline_filler
from engine.fields.loop import LoopConfig, LoopResult, run_loop
from engine.fields.templates import Pack, Template, find_template, load_packs
from engine.llm import LLMError
from engine.pipeline import PRESETS
from engine.protocols import LLMClient
from engine.schemas import ClassificationOutput, DocType
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
    expected_tax_year: int | None = Field(
        None,
        ge=1950,
        le=2100,
        description="For tax forms: a form for another tax year is reported as an ERROR issue.",
    )

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


def form_templates() -> list[Template]:
    """Templates of the packs in force that are forms rather than clinical document types
    (the us_tax pack's W-2, 1099s, K-1): a document classified as Other is matched against
    them by filling each."""
    clinical = {t.value for t in DocType}
    return [t for pack in packs().values() for t in pack.templates if t.doc_type not in clinical]


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
) -> list[Extraction]:
    """Extract fields for every segment of a classification. Computes only: the rows returned
    are unsaved (no run yet), so an LLM extractor never runs inside a database transaction."""
    options = ProcessingOptions.model_validate(document.options or {})
    config = loop_config(options, preset)
    loaded = packs()
    rows = []
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
        segment_pages = pages[segment.start_page - 1 : segment.end_page]
        started = time.perf_counter()
        template = find_template(loaded, doc_type)
        forms = form_templates() if doc_type == DocType.OTHER.value else []
        if forms:
            try:
                match = match_form(
                    forms,
                    segment_pages,
                    expected_year=options.expected_tax_year,
                    filler=gemini_filler(client) if client is not None else offline_filler,
                )
            except LLMError as exc:
                row.status = Extraction.Status.FAILED
                row.refused_reason = f"The language model call failed: {exc}"
                continue
            _record_form(row, match)
            if match.chosen is not None:
                template = match.chosen.template
                row.doc_type = template.doc_type
        if template is None:
            row.status = Extraction.Status.REFUSED
            row.refused_reason = (
                f"No template for {doc_type} in packs {', '.join(settings.EXTRACTION_PACKS)}."
            )
            continue
        extractor = (
            gemini_extractor(client, template, segment_pages)
            if client is not None
            else offline_extractor(template, segment_pages)
        )
        try:
            result: LoopResult = run_loop(
                template=template, pages=segment_pages, extractor=extractor, config=config
            )
        except LLMError as exc:
            row.status = Extraction.Status.FAILED
            row.refused_reason = f"The language model call failed: {exc}"
            continue
        row.status = Extraction.Status.COMPLETED
        row.template_version = _pack_version(loaded, template.doc_type)
        row.extractor = "gemini" if client is not None else "offline"
        row.fields = {
            k: {**v.as_dict(), "page": (v.page + segment.start_page - 1) if v.page else None}
            for k, v in result.best.fields.items()
        }
        row.final_score = result.final_score
        row.first_score = result.iterations[0].evaluation.overall
        row.met_threshold = result.met_threshold
        row.iterations_count = len(result.iterations)
        row.iterations = [it.as_dict() for it in result.iterations]
        row.stopped_reason = result.stopped_reason
        row.warnings = [
            i["message"] for i in result.best.evaluation.issues if i["severity"] != "minor"
        ] + row.warnings
        row.seconds = round(time.perf_counter() - started, 4)
    return rows


def _record_form(row: Extraction, match: FormMatch) -> None:
    """The form-filling classification on the segment's extraction: its type (or none: the
    document stays Other), the alternatives, each attempt and the issues."""
    row.form_type = match.form_type
    row.alternatives = match.alternatives
    row.form_attempts = match.as_dict()["attempts"]
    row.issues = match.issues
    row.warnings = [i["message"] for i in match.issues]
    if not match.form_type and match.title:  # a recognised form with nothing filled in
        row.warnings.append(f"{match.title}: {match.message}")


def form_issues(rows: list[Extraction]) -> list[tuple[int, dict[str, str]]]:
    """(segment, issue) for every ERROR a form raised (a wrong tax year): such a run is not
    accepted without a person."""
    return [
        (row.segment_index, issue)
        for row in rows
        for issue in row.issues
        if issue.get("severity") == "ERROR"
    ]


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
