"""What the verifiers know about one document: its pages, optionally an LLM client and the
independent second opinion the gate compares the primary with."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from engine.grounding import Normalised, normalise
from engine.protocols import LLMClient
from engine.schemas import Boundary, ClassificationOutput

if TYPE_CHECKING:
    from engine.exemplars import ExemplarVote
    from engine.novelty import Novelty
    from engine.risk import ThresholdTable


# How text on a page was hidden from a reader (the codes documents.hidden records at
# ingestion), in words for an issue: "... words a reader cannot see (invisible text render
# mode)".
HIDDEN_KINDS = {
    "render_mode": "invisible text render mode",
    "outside_crop": "outside the visible page",
    "tiny": "too small to read",
    "background": "in the colour of the background",
    "under_image": "covered by an image or a shape",
    "disagrees": "a scan's text layer that the scan does not show",
    "not_shown": "not drawn on the page as a viewer shows it",
    "partly_shown": "cut off on a line the page shows",
    "misread": "glyphs that show other text than the text layer says",
}
# Left out of the page's text and recorded, but no sign of intent: a word cut off at a
# table cell's border or a watermark letter under a table, on a line the page shows
# (documents.hidden's reading check). They never raise hidden_text on their own.
UNCOUNTED_HIDDEN_KINDS = frozenset({"partly_shown"})


@dataclass(frozen=True)
class HiddenText:
    """Text on page ``page`` that a reader cannot see, left out of the page's text at
    ingestion: how it was hidden (a HIDDEN_KINDS code) and how many words. Never the text."""

    page: int
    kind: str
    words: int


@dataclass(frozen=True)
class SecondOpinion:
    """An independent classifier's answer for the document, computed once per run."""

    name: str
    output: ClassificationOutput


@dataclass
class DocumentContext:
    """What the verifiers know about the document: its pages' text, 1-based."""

    pages: list[str]
    llm: LLMClient | None = None  # an LLM client for the optional checks; None = skipped
    min_dominant_confidence: float = 0.5
    skipped: list[str] = field(default_factory=list)
    # The independent gate: None when there is no second classifier (the offline classifier
    # is the primary). Its agreement stands in for the same-model LLM checks only when its own
    # confidence reaches gate_confirm_confidence.
    second: SecondOpinion | None = None
    gate_confirm_confidence: float = 0.5
    # The learning loop (engine.acceptance): the document's novelty against the model's
    # training documents, and the risk-controlled thresholds by type (and by ``source``, the
    # document's source); None: not checked.
    novelty: Novelty | None = None
    acceptance: ThresholdTable | None = None
    source: str = "*"
    # The exemplar memory's vote (engine.exemplars): clinician-labelled look-alikes of the same
    # source, folded into the acceptance score; None: no memory.
    exemplar: ExemplarVote | None = None
    # Text the pages carry that a reader cannot see (left out of ``pages``): V3 raises it.
    hidden: list[HiddenText] = field(default_factory=list)
    # LLM check results by labels, so an attempt whose labels did not change is not re-checked.
    llm_memo: dict[Any, list[Any]] = field(default_factory=dict)

    @property
    def page_count(self) -> int:
        return len(self.pages)

    def page_text(self, number: int) -> str | None:
        return self.pages[number - 1] if 1 <= number <= len(self.pages) else None

    @cached_property
    def normalised(self) -> list[Normalised]:
        return [normalise(text) for text in self.pages]

    @cached_property
    def boundaries(self) -> list[Boundary]:
        """Where the pages themselves say a new document starts (engine.boundaries)."""
        from engine.boundaries import detect

        return detect(self.pages)

    def segment_text(self, start: int, end: int) -> str:
        return "\n\n".join(self.pages[max(start, 1) - 1 : min(end, len(self.pages))])
