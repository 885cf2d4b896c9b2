"""Extraction templates as data: one versioned JSON file per pack, validated on load."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

PACKS_DIR = Path(__file__).resolve().parent / "packs"


class Tier(StrEnum):
    REQUIRED = "required"
    IMPORTANT = "important"
    OPTIONAL = "optional"


TIER_WEIGHTS = {Tier.REQUIRED: 1.0, Tier.IMPORTANT: 0.7, Tier.OPTIONAL: 0.3}

FormatName = Literal[
    "text",
    "number",
    "date",
    "percentage",
    "currency",
    "enum",
    "regex",
    "ssn",
    "ein",
    "year",
    "measurement",
]


class FieldSpec(BaseModel):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    description: str
    tier: Tier
    format: FormatName = "text"
    values: list[str] = Field(default_factory=list)  # for enum
    pattern: str = ""  # for regex
    labels: list[str] = Field(
        min_length=1,
        description="Location hint: labels that precede "
        "the value on the page (also box names on forms).",
    )
    location: str = ""  # free-text hint for an LLM, e.g. "box 1" or "FINAL DIAGNOSIS section"
    validity: str = ""  # name of a validity rule in evaluator.VALIDITY_RULES
    multiple: bool = False  # a list of values (e.g. mutations)
    printed: bool = False  # printed on the blank form (its name, its year): not a filled box
    finder: str = ""  # a reader in finders.FINDERS ("grade", "variants"); "" = by format
    cues: list[str] = Field(
        default_factory=list,
        description="Regexes (case-insensitive) that show the document states this field: "
        "found with no value extracted, the field is missing, not absent.",
    )
    # Where a cue counts: anywhere; outside history, indication and comparison sections (a
    # report's results); or in the opening history only (the reason for a visit).
    cue_scope: Literal["document", "results", "opening"] = "results"
    extent: Literal["line", "sentence", "section"] = "section"  # how much text a value takes
    max_chars: int = Field(1500, ge=20)

    @model_validator(mode="after")
    def _format_needs(self) -> FieldSpec:
        if self.format == "enum" and not self.values:
            raise ValueError(f"field {self.name}: an enum needs values")
        if self.format == "regex":
            if not self.pattern:
                raise ValueError(f"field {self.name}: a regex format needs a pattern")
            re.compile(self.pattern)
        for cue in self.cues:
            try:
                re.compile(cue)
            except re.error as exc:
                raise ValueError(f"field {self.name}: cue {cue!r} is not a regex ({exc})") from exc
        return self


class Template(BaseModel):
    doc_type: str
    title: str
    fields: list[FieldSpec] = Field(min_length=1)
    confidence_threshold: float = Field(0.7, ge=0, le=1)
    min_required: int = Field(1, ge=0)
    consistency: list[str] = Field(default_factory=list)  # rule names in evaluator

    @field_validator("fields")
    @classmethod
    def _unique(cls, fields: list[FieldSpec]) -> list[FieldSpec]:
        names = [f.name for f in fields]
        if len(names) != len(set(names)):
            raise ValueError("field names must be unique within a template")
        return fields

    def field(self, name: str) -> FieldSpec:
        return next(f for f in self.fields if f.name == name)


class Pack(BaseModel):
    name: str
    version: str
    domain: str
    templates: list[Template]

    def template(self, doc_type: str) -> Template | None:
        return next((t for t in self.templates if t.doc_type == doc_type), None)


class TemplateError(Exception):
    pass
