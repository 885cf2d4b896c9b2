"""A language-model client that sends surrogates instead of PHI and maps its answers back.

``DeidentifyingClient`` wraps any LLMClient. Every prompt is de-identified before it leaves:
the document's PHI values (learnt from all its pages, so a name labelled on page 1 is replaced
on page 3 too) and whatever the recognisers find in the prompt itself (few-shot examples,
feedback quoting the document) get consistent surrogates; the markers that delimit the
document and the boundary token stay as they are, and the token is derived again from the
de-identified text (it was a hash of the original pages). Every string of the answer is then
mapped back, surrogate by surrogate, to the original words: an evidence snippet copied from a
de-identified page becomes the text of the original page, so grounding (V4) and the viewer
work on the original pages. The same prompt always becomes the same de-identified prompt (the
surrogates come from a keyed hash), so the response cache keeps answering it.

The system prompt is Vetted's own text and goes as it is.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from engine.deid import DocumentScrub, Pseudonyms, Surrogates, Vocabulary
from engine.llm.operations import EvaluationOperations

T = TypeVar("T", bound=BaseModel)

_MARKERS = re.compile(r"^(?:<<<[^\n]*>>>|Boundary token: \S+)$", re.MULTILINE)
_TOKEN_LINE = re.compile(r"^Boundary token: (\S+)$", re.MULTILINE)


class DeidentifyingClient(EvaluationOperations):
    """An LLMClient in front of ``inner``: prompts go out de-identified, answers come back
    re-identified. Accounting, deadline and every other attribute are the inner client's."""

    def __init__(self, inner: Any, *, surrogates: Surrogates, pages: Sequence[str] = ()) -> None:
        self.inner = inner
        self.surrogates = surrogates
        self.pages = list(pages)
        self.document = DocumentScrub.of(self.pages, Pseudonyms(surrogates))
        self._original = "\n".join(self.pages)

    # -- the inner client's state --------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def model(self) -> str:
        return str(self.inner.model)

    @property
    def max_concurrency(self) -> int:  # type: ignore[override]
        return int(self.inner.max_concurrency)

    @property
    def calls(self) -> Any:
        return self.inner.calls

    @property
    def deadline(self) -> float | None:
        return self.inner.deadline  # type: ignore[no-any-return]

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self.inner.deadline = value

    def usage(self) -> dict[str, Any]:
        return self.inner.usage()  # type: ignore[no-any-return]

    # -- the call ------------------------------------------------------------------------------

    def outgoing(self, prompt: str) -> tuple[str, Pseudonyms]:
        """The prompt as it leaves, and the surrogates it carries (to map the answer back)."""
        pseudonyms = Pseudonyms(
            self.surrogates, injective=True, avoid=self._original + "\n" + prompt
        )
        scrub = DocumentScrub(pseudonyms, Vocabulary(dict(self.document.vocabulary.terms)))
        keep = [m.span() for m in _MARKERS.finditer(prompt)]
        return _retoken(scrub.scrub(prompt, keep=keep)), pseudonyms

    def generate(
        self,
        *,
        prompt: str,
        schema: type[T],
        system: str = "",
        operation: str = "generate",
        version: str = "",
    ) -> T:
        sent, pseudonyms = self.outgoing(prompt)
        answer = self.inner.generate(
            prompt=sent, schema=schema, system=system, operation=operation, version=version
        )
        return schema.model_validate(restore_strings(answer.model_dump(mode="json"), pseudonyms))


def restore_strings(value: Any, pseudonyms: Pseudonyms) -> Any:
    """Every string in a JSON-like value with the surrogates mapped back."""
    if isinstance(value, str):
        return pseudonyms.restore(value)
    if isinstance(value, list):
        return [restore_strings(v, pseudonyms) for v in value]
    if isinstance(value, dict):
        return {k: restore_strings(v, pseudonyms) for k, v in value.items()}
    return value


def _retoken(prompt: str) -> str:
    """The boundary token derived again, from the de-identified prompt: the original was a
    hash of the original pages, which should not leave either."""
    found = _TOKEN_LINE.search(prompt)
    if not found:
        return prompt
    old = found.group(1)
    new = hashlib.sha256(prompt.replace(old, "").encode("utf-8", "surrogatepass")).hexdigest()
    return prompt.replace(old, new[: len(old)])
