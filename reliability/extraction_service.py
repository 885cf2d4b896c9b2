"""Field extraction workflows: run the loop per segment, record it, mirror templates."""

from __future__ import annotations

import logging
import time
from typing import Any, cast

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field

from documents.models import Document
from reliability import llm
from reliability.extraction.loop import LoopConfig, LoopResult, offline_extractor, run_loop
from reliability.extraction.offline import ExtractedField
from reliability.extraction.templates import Template, find_template, load_packs
from reliability.models import Extraction, ExtractionTemplate, Run
from reliability.pipeline import PRESETS
from reliability.schemas import ClassificationOutput, DocType

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


def packs() -> dict[str, Any]:
    return load_packs(tuple(settings.EXTRACTION_PACKS))


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


def gemini_extractor(client: llm.GeminiClient, template: Template, pages: list[str]) -> Any:
    text = "\n\n".join(f"=== PAGE {n} ===\n{t}" for n, t in enumerate(pages, start=1))

    def run(
        prompt: str, feedback: str | None, flagged: list[str], iteration: int
    ) -> dict[str, ExtractedField]:
        result = client.extract_fields(
            fields={f.name: f"{f.description} ({f.format})" for f in template.fields},
            text=text,
            instructions=prompt,
        )
        if result.error:
            raise llm.LLMError(result.error)
        fields = {}
        for spec in template.fields:
            answer = (result.value or {}).get(spec.name) or {}
            snippet = answer.get("snippet") or ""
            page = next((n for n, t in enumerate(pages, start=1) if snippet and snippet in t), None)
            fields[spec.name] = ExtractedField(
                spec.name,
                answer.get("value"),
                answer.get("status", "not_present"),
                float(answer.get("confidence", 0.0)),
                snippet,
                page,
                None,
            )
        return fields

    return run


def extraction_run(
    *, run: Run, output: ClassificationOutput, client: llm.GeminiClient | None = None
) -> list[Extraction]:
    """Extract fields for every segment of the accepted or escalated classification."""
    document = run.document
    options = ProcessingOptions.model_validate(document.options or {})
    config = loop_config(options, run.preset)
    loaded = packs()
    pages = list(document.pages.order_by("number").values_list("text", flat=True))
    created = []
    for index, segment in enumerate(output.segments):
        doc_type = (options.type_override or segment.dominant_type).value
        base = dict(
            document=document,
            run=run,
            segment_index=index,
            start_page=segment.start_page,
            end_page=segment.end_page,
            doc_type=doc_type,
            options=options.model_dump(mode="json"),
        )
        if document.quality == Document.Quality.LOW_OCR:
            created.append(
                Extraction.objects.create(
                    status=Extraction.Status.REFUSED, refused_reason=POOR_OCR_REASON, **base
                )
            )
            continue
        template = find_template(loaded, doc_type)
        if template is None:
            created.append(
                Extraction.objects.create(
                    status=Extraction.Status.REFUSED,
                    refused_reason=f"No template for {doc_type} in packs "
                    f"{', '.join(settings.EXTRACTION_PACKS)}.",
                    **base,
                )
            )
            continue
        segment_pages = pages[segment.start_page - 1 : segment.end_page]
        started = time.perf_counter()
        extractor = (
            gemini_extractor(client, template, segment_pages)
            if client is not None
            else offline_extractor(template, segment_pages)
        )
        try:
            result: LoopResult = run_loop(
                template=template, pages=segment_pages, extractor=extractor, config=config
            )
        except llm.LLMError as exc:
            created.append(
                Extraction.objects.create(
                    status=Extraction.Status.FAILED,
                    refused_reason=f"The language model call failed: {exc}",
                    **base,
                )
            )
            continue
        warnings = [i["message"] for i in result.best.evaluation.issues if i["severity"] != "minor"]
        fields = {
            k: {**v.as_dict(), "page": (v.page + segment.start_page - 1) if v.page else None}
            for k, v in result.best.fields.items()
        }
        created.append(
            Extraction.objects.create(
                status=Extraction.Status.COMPLETED,
                template_version=_pack_version(loaded, doc_type),
                extractor="gemini" if client is not None else "offline",
                fields=fields,
                final_score=result.final_score,
                met_threshold=result.met_threshold,
                iterations_count=len(result.iterations),
                iterations=[it.as_dict() for it in result.iterations],
                stopped_reason=result.stopped_reason,
                warnings=warnings,
                seconds=round(time.perf_counter() - started, 4),
                **base,
            )
        )
    return created


def _pack_version(loaded: dict[str, Any], doc_type: str) -> str:
    return next((p.version for p in loaded.values() if p.template(doc_type)), "")


def fields_for_ground_truth(
    run: Run, corrections: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Per segment: doc type and each field's value/status/confidence/snippet, with any
    reviewer corrections applied (marked as such)."""
    corrections = corrections or {}
    records = []
    for extraction in run.extractions.filter(status=Extraction.Status.COMPLETED):
        fields = {}
        for name, data in extraction.fields.items():
            key = f"{extraction.segment_index}:{name}"
            if key in corrections:
                fields[name] = {
                    **data,
                    "value": corrections[key],
                    "status": "found",
                    "corrected": True,
                }
            else:
                fields[name] = {
                    k: data.get(k) for k in ("value", "status", "confidence", "snippet", "page")
                }
        records.append(
            {
                "segment": extraction.segment_index,
                "doc_type": extraction.doc_type,
                "pages": [extraction.start_page, extraction.end_page],
                "fields": fields,
            }
        )
    return records
