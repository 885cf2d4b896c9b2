"""Field extraction as this deployment configures it: the processing options a document may
carry, the loop's settings and the template packs in force. Shared by reliability (a run's
extraction) and review (re-extraction after a correction) without either reaching into the
other."""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field

from engine.fields.library import load_packs
from engine.fields.loop import LoopConfig
from engine.fields.templates import Pack, Template
from engine.pipeline import PRESETS
from engine.schemas import DocType

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
    (the us_tax pack's W-2, 1099s, K-1): a segment classified as Other is matched against
    them by filling each."""
    clinical = {t.value for t in DocType}
    return [t for pack in packs().values() for t in pack.templates if t.doc_type not in clinical]
