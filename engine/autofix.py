"""Deterministic repairs for auto-fixable issues, and the fingerprint used for cycle detection.

Pure module. Fixes never change a label: they repair counts, fill in missing NO_EVIDENCE
assessments and rescale shares so they sum to 1.
"""

from __future__ import annotations

import hashlib
import json

from engine.schemas import (
    DOC_TYPES,
    ClassificationOutput,
    Issue,
    MixtureEntry,
    Presence,
    TypeAssessment,
)

FIXABLE_CODES = frozenset(
    {"segment_count", "page_count", "missing_type", "segment_shares", "mixture_shares"}
)


def _normalise_shares(values: list[float], preferred: int) -> list[float]:
    clipped = [max(0.0, v) for v in values]
    total = sum(clipped)
    if total <= 0:
        return [1.0 if i == preferred else 0.0 for i in range(len(values))]
    scaled = [round(v / total, 4) for v in clipped]
    # Put the rounding remainder on the largest share so the sum is exactly 1.
    largest = max(range(len(scaled)), key=lambda i: scaled[i])
    scaled[largest] = round(scaled[largest] + 1.0 - sum(scaled), 4)
    return scaled


def apply_fixes(
    output: ClassificationOutput, issues: list[Issue]
) -> tuple[ClassificationOutput, list[str]]:
    """Return a repaired copy and a description of each fix applied."""
    codes = {i.code for i in issues if i.auto_fixable}
    fixed = output.model_copy(deep=True)
    applied: list[str] = []

    if "missing_type" in codes:
        for index, segment in enumerate(fixed.segments):
            have = {t.type for t in segment.types}
            for doc_type in DOC_TYPES:
                if doc_type not in have:
                    segment.types.append(
                        TypeAssessment(
                            type=doc_type,
                            presence_level=Presence.NO_EVIDENCE,
                            confidence=0.0,
                            segment_share=0.0,
                            reasoning="Added by auto-fix: no assessment given.",
                        )
                    )
                    applied.append(f"segments[{index}]: added {doc_type.value} as NO_EVIDENCE")
        have = {m.type for m in fixed.document_mixture}
        for doc_type in DOC_TYPES:
            if doc_type not in have:
                fixed.document_mixture.append(
                    MixtureEntry(
                        type=doc_type, overall_share=0.0, presence_level=Presence.NO_EVIDENCE
                    )
                )
                applied.append(f"document_mixture: added {doc_type.value} as NO_EVIDENCE")

    if "segment_count" in codes and fixed.number_of_segments != len(fixed.segments):
        applied.append(f"number_of_segments: {fixed.number_of_segments} -> {len(fixed.segments)}")
        fixed.number_of_segments = len(fixed.segments)

    if "page_count" in codes:
        for index, segment in enumerate(fixed.segments):
            expected = segment.end_page - segment.start_page + 1
            if segment.segment_page_count != expected:
                applied.append(
                    f"segments[{index}].segment_page_count: "
                    f"{segment.segment_page_count} -> {expected}"
                )
                segment.segment_page_count = expected

    if "segment_shares" in codes:
        for index, segment in enumerate(fixed.segments):
            preferred = next(
                (k for k, t in enumerate(segment.types) if t.type == segment.dominant_type), 0
            )
            shares = _normalise_shares([t.segment_share for t in segment.types], preferred)
            if shares != [t.segment_share for t in segment.types]:
                for t, share in zip(segment.types, shares, strict=True):
                    t.segment_share = share
                applied.append(f"segments[{index}]: shares normalised to sum to 1")

    if "mixture_shares" in codes and fixed.document_mixture:
        preferred = next(
            (
                k
                for k, m in enumerate(fixed.document_mixture)
                if m.type == fixed.dominant_type_overall
            ),
            0,
        )
        shares = _normalise_shares([m.overall_share for m in fixed.document_mixture], preferred)
        for m, share in zip(fixed.document_mixture, shares, strict=True):
            m.overall_share = share
        applied.append("document_mixture: shares normalised to sum to 1")
    return fixed, applied


def fingerprint(output: ClassificationOutput) -> str:
    """MD5 of segment boundaries, dominant types and all shares: equal when a fix changed
    nothing that matters."""
    payload = {
        "overall": output.dominant_type_overall.value,
        "count": output.number_of_segments,
        "segments": [
            [
                s.start_page,
                s.end_page,
                s.segment_page_count,
                s.dominant_type.value,
                sorted((t.type.value, round(t.segment_share, 4)) for t in s.types),
            ]
            for s in output.segments
        ],
        "mixture": sorted(
            (m.type.value, round(m.overall_share, 4)) for m in output.document_mixture
        ),
    }
    return hashlib.md5(
        json.dumps(payload, sort_keys=True).encode(), usedforsecurity=False
    ).hexdigest()
