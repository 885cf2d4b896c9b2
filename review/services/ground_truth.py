"""Ground truth: versions appended, never overwritten; the retyping that audits and
adjudications record."""

from __future__ import annotations

from typing import Any

from core import events
from documents.models import Document
from engine.schemas import (
    ClassificationOutput,
    DocType,
)
from reliability.models import Run
from review.corrections import (
    corrected_output,
    correction_build,
    correction_fields,
)
from review.models import GroundTruth
from review.selectors import ground_truth_fields


def ground_truth_record(
    *,
    document: Document,
    run: Run | None,
    output: ClassificationOutput,
    source: str,
    reviewer: Any | None = None,
    field_corrections: dict[str, Any] | None = None,
    fields: list[dict[str, Any]] | None = None,
    reason: str = "",
    note: str = "",
) -> GroundTruth:
    """Append a new version; an earlier version is superseded, never overwritten. ``fields``
    (a correction's re-extracted fields) replace the run's fields when given."""
    latest = GroundTruth.objects.latest_locked(document)
    truth = GroundTruth.objects.create(
        document=document,
        source=source,
        dominant_type=output.dominant_type_overall.value,
        classification=output.model_dump(mode="json"),
        fields=fields
        if fields is not None
        else ground_truth_fields(run, field_corrections)
        if run
        else [],
        reason=reason,
        note=note,
        reviewer=reviewer,
        run=run,
        model=run.model if run else "",
        prompt_version=run.prompt_version if run else "",
        version=(latest.version + 1) if latest else 1,
        supersedes=latest,
    )
    ground_truth_changed(truth, supersedes=latest)
    return truth


def ground_truth_changed(truth: GroundTruth, *, supersedes: GroundTruth | None) -> None:
    events.publish(
        events.Event.GROUND_TRUTH_CHANGED,
        {
            "ground_truth_id": truth.pk,
            "document_id": str(truth.document_id),
            "version": truth.version,
            "source": truth.source,
            "dominant_type": truth.dominant_type,
            "supersedes_id": supersedes.pk if supersedes else None,
        },
    )


def retype_correction(*, document: Document, doc_type: DocType) -> Any:
    """A whole-document correction to one type: what an audit or an adjudication decides
    (the type, not the segments)."""
    return correction_build(segments=[(1, max(document.page_count, 1), doc_type)])


def retype_truth(
    *,
    run: Run | None,
    document: Document,
    doc_type: DocType,
    fields: list[Any],
    reviewer: Any,
    reason: str,
    note: str,
) -> GroundTruth:
    """Record a corrected ground-truth version through the correction path. Call inside a
    transaction, with the fields extracted before it (retype_fields)."""
    correction = retype_correction(document=document, doc_type=doc_type)
    return ground_truth_record(
        document=document,
        run=run,
        output=corrected_output(correction),
        source=GroundTruth.Source.SME_CORRECTED,
        reviewer=reviewer,
        fields=fields,
        reason=reason,
        note=note,
    )


def retype_fields(*, run: Run | None, document: Document, doc_type: DocType) -> list[Any]:
    """The fields of the document read as one segment of the new type. Slow with an LLM
    extractor: call outside transactions."""
    if run is None:
        return []
    return correction_fields(
        document=document,
        run_id=run.pk,
        preset=run.preset,
        corrections={},
        correction=retype_correction(document=document, doc_type=doc_type),
    )
