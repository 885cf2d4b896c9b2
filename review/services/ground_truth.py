"""Ground truth: versions appended, never overwritten, each provisional or final; the
segmentations that audits, second reviews and adjudications record.

A version is provisional while a check on it is open (a blind audit of an accepted answer, a
second review or adjudication of a clinician's decision) and final once the process is done.
The state is the one thing about a version that changes, once, from provisional to final
(``ground_truth_settle``); everything else is fixed when it is written."""

from __future__ import annotations

from typing import Any

from core import events
from documents.models import Document
from engine.schemas import ClassificationOutput
from reliability.models import Run
from review.corrections import (
    Segmentation,
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
    state: str = GroundTruth.State.FINAL,
    reviewer: Any | None = None,
    field_corrections: dict[str, Any] | None = None,
    fields: list[dict[str, Any]] | None = None,
    reason: str = "",
    note: str = "",
) -> GroundTruth:
    """Append a new version; an earlier version is superseded, never overwritten. ``fields``
    (a correction's re-extracted fields) replace the run's fields when given. Call inside a
    transaction."""
    latest = GroundTruth.objects.latest_locked(document)
    truth = GroundTruth.objects.create(
        document=document,
        source=source,
        state=state,
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


def ground_truth_hold(truth: GroundTruth) -> None:
    """A check was opened on ``truth`` after it was written (an accepted run drawn for a blind
    audit): it is provisional until the check ends."""
    GroundTruth.objects.filter(pk=truth.pk).update(state=GroundTruth.State.PROVISIONAL)
    truth.state = GroundTruth.State.PROVISIONAL


def ground_truth_settle(truth: GroundTruth) -> None:
    """The checks on ``truth`` ended in its favour: it is final (announced with its labels)."""
    if truth.state == GroundTruth.State.FINAL:
        return
    GroundTruth.objects.filter(pk=truth.pk).update(state=GroundTruth.State.FINAL)
    truth.state = GroundTruth.State.FINAL
    ground_truth_changed(truth, supersedes=truth.supersedes)


def ground_truth_changed(truth: GroundTruth, *, supersedes: GroundTruth | None) -> None:
    """The webhook event of a new version, or of a version that became final. A provisional
    version is under a blind check: its type and source stay out of the payload until the
    check ends (an event with the state final carries them)."""
    data: dict[str, Any] = {
        "ground_truth_id": truth.pk,
        "document_id": str(truth.document_id),
        "version": truth.version,
        "state": truth.state,
        "supersedes_id": supersedes.pk if supersedes else None,
    }
    if truth.state == GroundTruth.State.FINAL:
        data.update(source=truth.source, dominant_type=truth.dominant_type)
    events.publish(events.Event.GROUND_TRUTH_CHANGED, data)


def segmentation_correction(segments: Segmentation) -> Any:
    """The correction that records ``segments`` (each document's pages and type), with shares
    that follow the page counts."""
    return correction_build(segments=list(segments))


def segmentation_truth(
    *,
    run: Run | None,
    document: Document,
    segments: Segmentation,
    fields: list[Any],
    reviewer: Any,
    reason: str,
    note: str,
    state: str = GroundTruth.State.FINAL,
) -> GroundTruth:
    """Record a corrected version holding ``segments``, through the correction path. Call
    inside a transaction, with the fields extracted before it (segmentation_fields)."""
    return ground_truth_record(
        document=document,
        run=run,
        output=corrected_output(segmentation_correction(segments)),
        source=GroundTruth.Source.SME_CORRECTED,
        state=state,
        reviewer=reviewer,
        fields=fields,
        reason=reason,
        note=note,
    )


def segmentation_fields(
    *, run: Run | None, document: Document, segments: Segmentation
) -> list[Any]:
    """The fields of the document read with ``segments``. Slow with an LLM extractor: call
    outside transactions."""
    if run is None:
        return []
    return correction_fields(
        document=document,
        run_id=run.pk,
        preset=run.preset,
        corrections={},
        correction=segmentation_correction(segments),
    )
