"""What delimiting does to document text before a model sees it, with the way back.

A line of document text that looks like a prompt marker (``=== PAGE 2 ===``, ``-----``,
``*** CORRECTED REPORT ***``, ``<<...``) reaches the model with ``NEUTRAL_PREFIX`` in front of
it, and runs of three or more angle brackets are spaced out (``<<<`` becomes ``< < <``), so the
text cannot pass for one of Vetted's own markers (engine.llm.delimiting). A model quoting such a
line quotes what it was shown. ``neutralise_mapped`` is the one definition of the change: it
gives the text as the model sees it together with, for each of its characters, the character
of the original it stands for. Delimiting uses the text; grounding (engine.grounding) looks for
a quote in it and reports the span of the original through the map. So a line the model can
quote from the prompt is a line grounding finds on its page, and what delimiting did not add is
never taken away (a page that really says "(document text)" keeps it).

Pure: no Django, no provider SDK (grounding imports it).
"""

from __future__ import annotations

import re

NEUTRAL_PREFIX = "(document text) "
# A line that starts like one of the prompt's markers, a Markdown rule or a banner.
MARKER_LINE = re.compile(r"^[ \t]*(?:<{2,}|>{2,}|={3,}|-{3,}|#{3,}|\*{3,}|\[{2,}|\]{2,})")
ANGLE_RUNS = re.compile(r"<{3,}|>{3,}")
_MARKER_LINES = re.compile(MARKER_LINE.pattern, re.MULTILINE)


def neutralise_mapped(text: str) -> tuple[str, list[int]]:
    """(the text as a model is shown it, for each of its characters the index in ``text`` of
    the character it stands for). Angle runs are spaced out first (an inserted space stands for
    the bracket before it); then every line that still starts like a marker gets the prefix
    (which stands for the line's first character)."""
    spaced: list[str] = []
    where: list[int] = []
    runs = {m.start(): m.end() for m in ANGLE_RUNS.finditer(text)}
    i = 0
    while i < len(text):
        end = runs.get(i)
        if end is None:
            spaced.append(text[i])
            where.append(i)
            i += 1
            continue
        for k in range(i, end):
            if k > i:
                spaced.append(" ")
                where.append(k - 1)
            spaced.append(text[k])
            where.append(k)
        i = end
    joined = "".join(spaced)
    shown: list[str] = []
    offsets: list[int] = []
    position = 0
    for line in joined.split("\n"):
        if MARKER_LINE.match(line):
            anchor = where[position] if position < len(where) else len(text)
            shown.append(NEUTRAL_PREFIX)
            offsets.extend([anchor] * len(NEUTRAL_PREFIX))
        shown.append(line)
        offsets.extend(where[position : position + len(line)])
        position += len(line)
        if position < len(joined):  # the newline
            shown.append("\n")
            offsets.append(where[position])
            position += 1
    return "".join(shown), offsets


def changed_by_neutralise(text: str) -> bool:
    """Whether ``neutralise`` changes the text (a quick look, without building the map)."""
    return bool(ANGLE_RUNS.search(text) or _MARKER_LINES.search(text))


def neutralise(text: str) -> str:
    """The text with marker-like lines prefixed and marker brackets broken up."""
    return neutralise_mapped(text)[0]
