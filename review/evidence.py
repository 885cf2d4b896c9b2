"""The source text around a piece of evidence: 2 paragraphs before, 3 after. Pure: no Django.

A page's text is its paragraphs joined by blank lines (see documents.pages), so a span
from V4 grounding maps onto paragraphs directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BEFORE = 2
AFTER = 3


@dataclass
class EvidenceContext:
    page: int
    found: bool
    before: list[str] = field(default_factory=list)
    lead: str = ""  # text of the hit paragraph(s) before the snippet
    highlight: str = ""
    trail: str = ""
    after: list[str] = field(default_factory=list)
    opening: list[str] = field(default_factory=list)  # when not found: the claimed page's start


def context_for(
    paragraphs: list[str],
    start: int | None,
    end: int | None,
    *,
    page: int,
    before: int = BEFORE,
    after: int = AFTER,
) -> EvidenceContext:
    if start is None or end is None or not paragraphs:
        return EvidenceContext(page=page, found=False, opening=paragraphs[: before + after + 1])
    bounds = []
    offset = 0
    for text in paragraphs:
        bounds.append((offset, offset + len(text)))
        offset += len(text) + 2  # the blank line between paragraphs
    first = next((i for i, (a, b) in enumerate(bounds) if start < b or i == len(bounds) - 1), 0)
    last = next((i for i, (a, b) in enumerate(bounds) if end <= b), len(bounds) - 1)
    last = max(first, last)
    text = "\n\n".join(paragraphs)
    block_start, block_end = bounds[first][0], bounds[last][1]
    return EvidenceContext(
        page=page,
        found=True,
        before=paragraphs[max(0, first - before) : first],
        lead=text[block_start:start],
        highlight=text[start:end],
        trail=text[end:block_end],
        after=paragraphs[last + 1 : last + 1 + after],
    )
