"""The two extractors the loop can drive, side by side: the deterministic offline one and the
LLM one (``extract_fields``). Each is built for one template and one segment's pages and is
called once per iteration with (prompt, feedback, flagged fields, iteration)."""

from __future__ import annotations

from engine.fields.finders import MAX_LEVEL
from engine.fields.forms import CRITICAL_FIELDS, FormFiller
from engine.fields.loop import Extractor, base_prompt
from engine.fields.offline_extractor import ExtractedField, extract, hits_at, outline_for
from engine.fields.templates import Template, Tier
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


def gemini_extractor(client: LLMClient, template: Template, pages: list[str]) -> Extractor:
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
            raise LLMError(result.error)
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
