"""The extractors the loop can drive, side by side: the deterministic offline one, the LLM one
(``extract_fields``), and a prefilled one whose first iteration is an answer already given (the
classification call extracts fields too). Each is built for one template and one segment's pages
and is called once per iteration with (prompt, feedback, flagged fields, iteration)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.fields.finders import MAX_LEVEL
from engine.fields.forms import CRITICAL_FIELDS, FormFiller
from engine.fields.loop import Extractor, base_prompt
from engine.fields.offline_extractor import ExtractedField, extract, hits_at, outline_for
from engine.fields.templates import Template, Tier
from engine.llm.delimiting import delimit
from engine.llm.errors import LLMError
from engine.protocols import LLMClient


def offline_extractor(template: Template, pages: list[str]) -> Extractor:
    levels: dict[str, int] = {}
    outline = outline_for(pages)

    def run(
        prompt: str, feedback: str | None, flagged: list[str], iteration: int
    ) -> dict[str, ExtractedField]:
        # Widen the search only where the evaluator asked, to the next level that reads
        # something for the field (or the widest, when none does).
        for name in flagged:
            spec = template.field(name)
            for level in range(levels.get(name, 0) + 1, MAX_LEVEL + 1):
                levels[name] = level
                if hits_at(spec, outline, level):
                    break
        return extract(template, pages, levels=dict(levels))

    return run


def answer_fields(
    template: Template, answer: Mapping[str, Mapping[str, Any]], pages: list[str]
) -> dict[str, ExtractedField]:
    """An LLM's answer (field name -> value, status, confidence, snippet) as the template's
    fields; the page is the first of ``pages`` (1-based) holding the snippet verbatim."""
    fields = {}
    for spec in template.fields:
        item = answer.get(spec.name) or {}
        snippet = item.get("snippet") or ""
        page = next((n for n, t in enumerate(pages, start=1) if snippet and snippet in t), None)
        fields[spec.name] = ExtractedField(
            spec.name,
            item.get("value"),
            item.get("status") or "not_present",
            float(item.get("confidence") or 0.0),
            snippet,
            page,
            None,
        )
    return fields


def gemini_extractor(client: LLMClient, template: Template, pages: list[str]) -> Extractor:
    block = delimit(pages)

    def run(
        prompt: str, feedback: str | None, flagged: list[str], iteration: int
    ) -> dict[str, ExtractedField]:
        # The loop's prompt is the template's instructions followed by its feedback; the
        # feedback quotes document values, so it travels in a feedback block of its own.
        instructions = prompt.removesuffix(f"\n\n{feedback}") if feedback else prompt
        result = client.extract_fields(
            fields={f.name: f"{f.description} ({f.format})" for f in template.fields},
            text=block,
            instructions=instructions,
            feedback=feedback,
        )
        if result.error:
            raise LLMError(result.error)
        return answer_fields(template, result.value or {}, pages)

    return run


def prefilled_extractor(first: dict[str, ExtractedField], then: Extractor) -> Extractor:
    """Iteration 0 is ``first`` (no call); later iterations, if the loop wants them, ``then``."""

    def run(
        prompt: str, feedback: str | None, flagged: list[str], iteration: int
    ) -> dict[str, ExtractedField]:
        if iteration == 0:
            return dict(first)
        return then(prompt, feedback, flagged, iteration)

    return run


def gemini_filler(client: LLMClient) -> FormFiller:
    """Form filling with ``extract_fields``: each attempt's feedback (the alternatives to
    consider, then the critical fields only) is added to the template's prompt."""

    def fill(
        template: Template, pages: list[str], strategy: str, feedback: str
    ) -> dict[str, ExtractedField]:
        asked = template
        if strategy == CRITICAL_FIELDS:
            asked = template.model_copy(
                update={"fields": [f for f in template.fields if f.tier == Tier.REQUIRED]}
            )
        prompt = base_prompt(asked) + (f"\n\n{feedback}" if feedback else "")
        fields = gemini_extractor(client, asked, pages)(prompt, feedback or None, [], 0)
        return {s.name: fields.get(s.name) or ExtractedField(s.name) for s in template.fields}

    return fill
