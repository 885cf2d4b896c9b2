"""A reviewer's correction: its parts, whether they hold together, what changed in words, the
classification it makes and the fields of the corrected segments. Computes only; the
services save.

Segments are the truth a reviewer edits. The mixture follows the segments' page counts and
the dominant type follows the mixture unless the reviewer sets them; either way the result
must agree with itself: a type with a share has a segment, a segment's type has a share, and
the dominant type has the largest share."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from documents.models import Document, Page
from engine import llm
from engine.fields.segment import COMPLETED, extract_segment
from engine.schemas import (
    DISPLAY_NAMES,
    DOC_TYPES,
    ClassificationOutput,
    DocType,
    MixtureEntry,
    Presence,
    Segment,
    SelfEvaluation,
    TypeAssessment,
)
from reliability import deid
from reliability.extraction import ProcessingOptions, form_templates, loop_config, packs
from reliability.models import Extraction

SHARE_TOLERANCE = 0.01

SegmentSpec = tuple[int, int, DocType]


@dataclass(frozen=True)
class Correction:
    segments: tuple[SegmentSpec, ...]
    mixture: dict[DocType, float]
    dominant_type: DocType
    present: tuple[DocType, ...] = ()  # types the classifier missed, marked present
    shares_edited: bool = False  # the reviewer typed shares instead of following page counts

    @property
    def signature(self) -> str:
        """What decides the fields: the segments' ranges and types."""
        raw = json.dumps([[a, b, t.value] for a, b, t in self.segments])
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


def shares_from_pages(segments: tuple[SegmentSpec, ...]) -> dict[DocType, float]:
    """Each type's share of the document's pages (summing to exactly 1)."""
    pages: dict[DocType, int] = {}
    for start, end, doc_type in segments:
        pages[doc_type] = pages.get(doc_type, 0) + end - start + 1
    total = sum(pages.values()) or 1
    shares = {t: round(n / total, 4) for t, n in pages.items()}
    if shares:
        largest = max(shares, key=lambda t: shares[t])
        shares[largest] = round(shares[largest] + 1 - sum(shares.values()), 4)
    return {t: shares.get(t, 0.0) for t in DOC_TYPES}


def dominant_of(segments: tuple[SegmentSpec, ...], mixture: dict[DocType, float]) -> DocType:
    """The type with the largest share; a tie goes to the type that comes first."""
    order = [t for _, _, t in segments]
    return max(order, key=lambda t: (mixture.get(t, 0.0), -order.index(t)))


def correction_build(
    *,
    segments: list[SegmentSpec],
    shares: dict[DocType, float] | None = None,
    dominant: DocType | None = None,
    present: list[DocType] | None = None,
) -> Correction:
    ordered = tuple(sorted(segments))
    mixture = (
        {t: float(shares.get(t, 0.0)) for t in DOC_TYPES} if shares else shares_from_pages(ordered)
    )
    return Correction(
        segments=ordered,
        mixture=mixture,
        dominant_type=dominant or dominant_of(ordered, mixture),
        present=tuple(t for t in (present or []) if t not in {s[2] for s in ordered}),
        shares_edited=bool(shares),
    )


def correction_problems(correction: Correction, *, page_count: int) -> dict[str, list[str]]:
    """What makes a correction inconsistent, by the part of the form it is about."""
    problems: dict[str, list[str]] = {}

    def add(part: str, message: str) -> None:
        problems.setdefault(part, []).append(message)

    covered: dict[int, int] = {}
    for index, (start, end, _) in enumerate(correction.segments, start=1):
        if start > end:
            add("segments", f"Segment {index}: the range {start}-{end} is reversed.")
            continue
        for page in range(start, end + 1):
            if page < 1 or page > page_count:
                add("segments", f"Page {page} is outside the document (pages 1-{page_count}).")
                break
            if page in covered:
                add(
                    "segments",
                    f"Page {page} is in segments {covered[page]} and {index}: segments "
                    "must not overlap.",
                )
                break
            covered[page] = index
    if not correction.segments:
        add("segments", "Give at least one segment.")
    missing = [p for p in range(1, page_count + 1) if p not in covered]
    if correction.segments and missing and "segments" not in problems:
        add(
            "segments",
            f"Page(s) {', '.join(map(str, missing))} belong to no segment: the segments "
            "must cover the whole document.",
        )

    total = sum(correction.mixture.values())
    if abs(total - 1) > SHARE_TOLERANCE:
        add("shares", f"The shares add up to {total:.2f}; they must add up to 1.")
    segment_types = {t for _, _, t in correction.segments}
    for t in DOC_TYPES:
        share = correction.mixture.get(t, 0.0)
        if share > 0 and t not in segment_types:
            add(
                "shares",
                f"The mixture gives {DISPLAY_NAMES[t]} a share of {share:.2f}, but no "
                f"segment is {DISPLAY_NAMES[t]}.",
            )
        if share <= 0 and t in segment_types:
            add(
                "shares",
                f"{DISPLAY_NAMES[t]} has a segment but no share in the mixture.",
            )
    dominant = correction.dominant_type
    if correction.segments and dominant not in segment_types:
        add("dominant_type", "The dominant type must be the type of one of the segments.")
    elif correction.segments:
        top = max(correction.mixture.values())
        if correction.mixture.get(dominant, 0.0) < top - 1e-9:
            leader = max(DOC_TYPES, key=lambda t: correction.mixture.get(t, 0.0))
            add(
                "dominant_type",
                f"The dominant type {DISPLAY_NAMES[dominant]} has a share of "
                f"{correction.mixture.get(dominant, 0.0):.2f}, less than "
                f"{DISPLAY_NAMES[leader]} ({top:.2f}).",
            )
    return problems


def _ranges(segments: list[SegmentSpec] | tuple[SegmentSpec, ...]) -> str:
    return ", ".join(f"{a}-{b} {DISPLAY_NAMES[t]}" for a, b, t in segments)


def correction_reason(original: ClassificationOutput, correction: Correction) -> str:
    """What the correction changed, in words; empty when it changes nothing."""
    before = [(s.start_page, s.end_page, s.dominant_type) for s in original.segments]
    after = list(correction.segments)
    changes: list[str] = []
    if [(a, b) for a, b, _ in before] == [(a, b) for a, b, _ in after]:
        retyped = [(old, new) for old, new in zip(before, after, strict=True) if old[2] != new[2]]
        if len(after) == 1 and retyped:
            changes.append(
                f"Type changed from {DISPLAY_NAMES[before[0][2]]} to {DISPLAY_NAMES[after[0][2]]}"
            )
        for (a, b, old), (_, _, new) in retyped if len(after) > 1 else []:
            changes.append(
                f"Pages {a}-{b} changed from {DISPLAY_NAMES[old]} to {DISPLAY_NAMES[new]}"
            )
    else:
        old_starts = {a for a, _, _ in before}
        new_starts = {a for a, _, _ in after}
        if old_starts < new_starts:
            for a, b, t in before:
                parts = [s for s in after if a <= s[0] <= b]
                if len(parts) > 1:
                    changes.append(
                        f"Split pages {a}-{b} ({DISPLAY_NAMES[t]}) into {_ranges(parts)}"
                    )
            old_type = {a: t for a, _, t in before}
            changes.extend(
                f"Pages {a}-{b} are {DISPLAY_NAMES[t]}, not {DISPLAY_NAMES[old_type[a]]}"
                for a, b, t in after
                if a in old_type and old_type[a] != t
            )
        elif new_starts < old_starts:
            for a, b, t in after:
                parts = [s for s in before if a <= s[0] <= b]
                if len(parts) > 1:
                    changes.append(f"Merged {_ranges(parts)} into {a}-{b} {DISPLAY_NAMES[t]}")
        else:
            changes.append(f"Segments changed from {_ranges(before)} to {_ranges(after)}")
    single_retype = len(after) == 1 and len(before) == 1
    if correction.dominant_type != original.dominant_type_overall and not single_retype:
        changes.append(
            f"Dominant type changed from {DISPLAY_NAMES[original.dominant_type_overall]} to "
            f"{DISPLAY_NAMES[correction.dominant_type]}"
        )
    if correction.shares_edited:
        shares = {m.type: m.overall_share for m in original.document_mixture}
        if any(abs(shares.get(t, 0.0) - v) > 1e-4 for t, v in correction.mixture.items()):
            changes.append("Mixture shares set by the reviewer")
    seen = {m.type for m in original.document_mixture if m.presence_level != Presence.NO_EVIDENCE}
    added = [t for t in correction.present if t not in seen]
    if added:
        changes.append(f"Also present: {', '.join(DISPLAY_NAMES[t] for t in added)}")
    return "; ".join(changes) + "." if changes else ""


def corrected_output(correction: Correction) -> ClassificationOutput:
    segments = []
    for start, end, doc_type in correction.segments:
        types = []
        for t in DOC_TYPES:
            if t == doc_type:
                presence, share = Presence.PRIMARY, 1.0
            elif t in correction.present:
                presence, share = Presence.MENTION_ONLY, 0.0
            else:
                presence, share = Presence.NO_EVIDENCE, 0.0
            types.append(
                TypeAssessment(
                    type=t,
                    presence_level=presence,
                    confidence=1.0,
                    segment_share=share,
                    reasoning="Set by a clinician.",
                )
            )
        segments.append(
            Segment(
                start_page=start,
                end_page=end,
                segment_page_count=end - start + 1,
                dominant_type=doc_type,
                types=types,
            )
        )
    primary = {t for _, _, t in correction.segments}
    mixture = [
        MixtureEntry(
            type=t,
            overall_share=round(correction.mixture.get(t, 0.0), 4),
            presence_level=Presence.PRIMARY
            if t in primary
            else Presence.MENTION_ONLY
            if t in correction.present
            else Presence.NO_EVIDENCE,
        )
        for t in DOC_TYPES
    ]
    return ClassificationOutput(
        dominant_type_overall=correction.dominant_type,
        number_of_segments=len(segments),
        segments=segments,
        document_mixture=mixture,
        self_evaluation=SelfEvaluation(confidence=1.0, concerns=[]),
    )


FIELD_KEYS = ("value", "status", "confidence", "snippet", "page")


def extraction_record(
    extraction: Extraction, corrections: dict[str, Any], *, segment: int | None = None
) -> dict[str, Any]:
    """One segment's fields as ground truth keeps them, with the reviewer's field
    corrections (keyed ``<extraction segment>:<field>``) applied and marked."""
    fields = {}
    for name, data in extraction.fields.items():
        key = f"{extraction.segment_index}:{name}"
        if key in corrections:
            # A value the reviewer cleared is a field the document does not state; the
            # machine's value is kept beside the correction (field ground truth: what was
            # read, what it should have been).
            value = corrections[key] if str(corrections[key]).strip() else None
            fields[name] = {
                **{k: data.get(k) for k in FIELD_KEYS},
                "value": value,
                "status": "found" if value is not None else "not_present",
                "corrected": True,
                "extracted": data.get("value"),
            }
        else:
            fields[name] = {k: data.get(k) for k in FIELD_KEYS}
    return {
        "segment": extraction.segment_index if segment is None else segment,
        "doc_type": extraction.doc_type,
        "pages": [extraction.start_page, extraction.end_page],
        "fields": fields,
    }


def correction_fields(
    *,
    document: Document,
    run_id: int,
    preset: str,
    corrections: dict[str, Any],
    correction: Correction,
) -> list[dict[str, Any]]:
    """The fields of every corrected segment. A segment the reviewer left as it was (same
    pages, same type) keeps the run's fields and the reviewer's field corrections; any other
    is extracted again with its type's template. Slow with an LLM: call outside transactions."""
    kept = {
        (e.start_page, e.end_page, e.doc_type): e
        for e in Extraction.objects.filter(run_id=run_id, status=Extraction.Status.COMPLETED)
    }
    needs_text = any((a, b, t.value) not in kept for a, b, t in correction.segments)
    pages = (
        list(
            Page.objects.filter(document=document).order_by("number").values_list("text", flat=True)
        )
        if needs_text
        else []
    )
    options = ProcessingOptions.model_validate(document.options or {})
    config = loop_config(options, preset)
    loaded = packs() if needs_text else {}
    client = (
        deid.llm_client(llm.client_from_settings(settings), pages=pages) if needs_text else None
    )
    records: list[dict[str, Any]] = []
    for index, (start, end, doc_type) in enumerate(correction.segments):
        extraction = kept.get((start, end, doc_type.value))
        if extraction is not None:
            records.append(extraction_record(extraction, corrections, segment=index))
            continue
        if document.quality == Document.Quality.LOW_OCR:
            continue  # as at classification: a poor scan is not extracted
        result = extract_segment(
            packs=loaded,
            doc_type=doc_type.value,
            pages=pages[start - 1 : end],
            start_page=start,
            config=config,
            client=client,
            forms=form_templates() if needs_text else [],
            expected_year=options.expected_tax_year,
        )
        if result.status != COMPLETED:
            continue
        records.append(
            {
                "segment": index,
                "doc_type": result.doc_type,
                "pages": [start, end],
                "fields": {
                    name: {k: data.get(k) for k in FIELD_KEYS}
                    for name, data in result.fields.items()
                },
                "re_extracted": True,
            }
        )
    return records


# -- segmentations: what a second review and an audit record and compare ------------------------

Segmentation = list[SegmentSpec]


def segmentation_of(output: ClassificationOutput | dict[str, Any]) -> Segmentation:
    """Where each document of ``output`` starts and its type, in page order."""
    data = output.model_dump(mode="json") if isinstance(output, ClassificationOutput) else output
    found = [
        (int(s["start_page"]), int(s["end_page"]), DocType(s["dominant_type"]))
        for s in data.get("segments", [])
    ]
    return sorted(found)


def segmentation_json(segments: Segmentation) -> list[list[Any]]:
    return [[a, b, t.value] for a, b, t in segments]


def segmentation_from_json(rows: list[list[Any]]) -> Segmentation:
    return sorted((int(a), int(b), DocType(t)) for a, b, t in rows)


def segmentations_agree(first: Segmentation, second: Segmentation) -> bool:
    """The same documents: the same first and last page and the same type for each. (Pages
    and types together: a bundle split 1 / 2-3 / 4-7 does not agree with one document of the
    same type, nor with the split 1-2 / 3 / 4-7.)"""
    return sorted(first) == sorted(second)


def page_types(segments: Segmentation, page_count: int) -> list[str]:
    """Each page's type under ``segments`` ("" where no segment covers it)."""
    types = [""] * page_count
    for start, end, doc_type in segments:
        for page in range(max(1, start), min(end, page_count) + 1):
            types[page - 1] = doc_type.value
    return types


def segmentation_words(segments: Segmentation) -> str:
    """In words: "Pages 1-3 Pathology Report; pages 4-7 Radiology Report" (an en dash in
    the ranges); one document is named by its type alone."""
    if len(segments) == 1:
        return DISPLAY_NAMES[segments[0][2]]
    said = "; ".join(
        f"pages {a}\u2013{b} {DISPLAY_NAMES[t]}" if a != b else f"page {a} {DISPLAY_NAMES[t]}"
        for a, b, t in segments
    )
    return said[:1].upper() + said[1:]
