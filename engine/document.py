"""What the verifiers know about one document: its pages and, optionally, an LLM client."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from engine.grounding import Normalised, normalise
from engine.protocols import LLMClient


@dataclass
class DocumentContext:
    """What the verifiers know about the document: its pages' text, 1-based."""

    pages: list[str]
    llm: LLMClient | None = None  # an LLM client for the optional checks; None = skipped
    min_dominant_confidence: float = 0.5
    skipped: list[str] = field(default_factory=list)

    @property
    def page_count(self) -> int:
        return len(self.pages)

    def page_text(self, number: int) -> str | None:
        return self.pages[number - 1] if 1 <= number <= len(self.pages) else None

    @cached_property
    def normalised(self) -> list[Normalised]:
        return [normalise(text) for text in self.pages]

    def segment_text(self, start: int, end: int) -> str:
        return "\n\n".join(self.pages[max(start, 1) - 1 : min(end, len(self.pages))])
