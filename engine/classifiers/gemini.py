"""The Gemini classifier: one structured call answering a full ClassificationOutput."""

from __future__ import annotations

from engine.protocols import LLMClient
from engine.schemas import DISPLAY_NAMES, ClassificationOutput

PROMPT_VERSION = "classify-2026.11.1"

SYSTEM_PROMPT = f"""You classify clinical documents for a hospital. Types:
{", ".join(f"{k} ({v})" for k, v in DISPLAY_NAMES.items())}.
Presence levels: PRIMARY (the segment is this type), EMBEDDED_RAW (a copy of such a report is
inside the segment), MENTION_ONLY (the type is only referred to), NO_EVIDENCE.
Split the document into segments of consecutive pages that form one document each. For every
segment give an assessment for every one of the five types; shares of a segment sum to 1; the
document mixture gives every type's overall share (summing to 1). Evidence snippets must be
copied verbatim from the page they cite (page numbers are 1-based); never paraphrase. Do not use
headers or footers (page numbers, fax banners, MRN, dates of birth) as evidence. Forms,
requisitions, cover sheets and routine lab panels are "other"."""


class GeminiClassifier:
    name = "gemini"
    prompt_version = PROMPT_VERSION

    def __init__(self, client: LLMClient) -> None:
        self.client = client

    @property
    def model(self) -> str:
        return self.client.model

    def classify(self, pages: list[str], feedback: str | None = None) -> ClassificationOutput:
        body = "\n\n".join(f"=== PAGE {n} ===\n{text}" for n, text in enumerate(pages, start=1))
        prompt = f"The document has {len(pages)} page(s).\n\n{body}"
        if feedback:
            prompt += f"\n\n{feedback}"
        return self.client.generate(
            prompt=prompt, schema=ClassificationOutput, system=SYSTEM_PROMPT, operation="classify"
        )
