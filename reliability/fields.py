"""Field extraction for a run: the loop per segment (computed first, no database work), its
records, the processing options and the template packs mirrored for the admin."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from django.conf import settings

from documents.models import Document
from engine.fields.forms import FormMatch
from engine.fields.library import find_template
from engine.fields.loop import LoopConfig
from engine.fields.segment import extract_segment
from engine.fields.templates import Pack, Template
from engine.llm import run_concurrently
from engine.protocols import LLMClient
from engine.run import Prefilled
from engine.schemas import DOC_TYPES, ClassificationOutput
from reliability.extraction import (
    POOR_OCR_REASON,
    ProcessingOptions,
    form_templates,
    loop_config,
    packs,
)
from reliability.models import Extraction, ExtractionTemplate, Run

logger = logging.getLogger(__name__)

# The options, loop settings and packs are shared with review (reliability.extraction); they are
# named here too because the API, the commands and the tests know them from this module.
__all__ = ["POOR_OCR_REASON", "ProcessingOptions", "form_templates", "loop_config", "packs"]


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
    forms = form_templates()
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
        tasks.append(
            partial(
                _extract_into,
                row=row,
                pages=pages[segment.start_page - 1 : segment.end_page],
                packs=loaded,
                config=config,
                client=client,
                forms=forms,
                expected_year=options.expected_tax_year,
                given=(prefilled or {}).get((segment.start_page, segment.end_page, doc_type)),
            )
        )
    run_concurrently(tasks, client.max_concurrency if client is not None else 1)
    return rows


def _extract_into(
    *,
    row: Extraction,
    pages: list[str],
    packs: dict[str, Pack],
    config: LoopConfig,
    client: LLMClient | None,
    forms: list[Template],
    expected_year: int | None,
    given: Mapping[str, Mapping[str, Any]] | None,
) -> None:
    """One segment through the shared segment step, recorded on its (unsaved) row."""
    result = extract_segment(
        packs=packs,
        doc_type=row.doc_type,
        pages=pages,
        start_page=row.start_page,
        config=config,
        client=client,
        forms=forms,
        expected_year=expected_year,
        given=given,
    )
    row.status = result.status
    row.refused_reason = result.reason
    if result.form is not None:
        _record_form(row, result.form)
    if result.status != Extraction.Status.COMPLETED:
        return
    row.doc_type = result.doc_type
    row.template_version = result.template_version
    row.extractor = result.extractor
    row.fields = result.fields
    row.first_score = result.first_score
    row.final_score = result.final_score
    row.met_threshold = result.met_threshold
    row.iterations_count = len(result.iterations)
    row.iterations = result.iterations
    row.stopped_reason = result.stopped_reason
    row.warnings = result.warnings + row.warnings
    row.seconds = result.seconds


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
