"""The production comparison: what a second, independent classifier says about the same pages.
Pure: no Django."""

from __future__ import annotations

from typing import Any

from engine.schemas import ClassificationOutput


def compare(
    primary: ClassificationOutput, second: ClassificationOutput | None, *, name: str
) -> dict[str, Any]:
    """The comparison shown to reviewers (and stored on the packet)."""
    if second is None:
        return {
            "available": False,
            "reason": "The offline classifier is the primary: there is no second opinion.",
        }
    boundaries = [(s.start_page, s.end_page) for s in primary.segments]
    other_boundaries = [(s.start_page, s.end_page) for s in second.segments]
    return {
        "available": True,
        "classifier": name,
        "dominant_type": second.dominant_type_overall.value,
        "agrees_on_type": second.dominant_type_overall == primary.dominant_type_overall,
        "agrees_on_segments": boundaries == other_boundaries,
        "classification": second.model_dump(mode="json"),
    }
