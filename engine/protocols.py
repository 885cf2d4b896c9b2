"""The two seams of the engine, typed: a classifier and an LLM client.

Services receive objects that satisfy these protocols, so tests pass a scripted client or the
real client aimed at a local stub server, and the offline and Gemini classifiers are
interchangeable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel

from engine.llm.client import CallRecord
from engine.llm.delimiting import Delimited
from engine.llm.operations import EvalResult
from engine.schemas import ClassificationOutput

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")


class Classifier(Protocol):
    """Answers a full ClassificationOutput for a document's pages (1-based order)."""

    name: str

    @property
    def model(self) -> str: ...

    @property
    def prompt_version(self) -> str: ...

    def classify(self, pages: list[str], feedback: str | None = None) -> ClassificationOutput: ...


class LLMClient(Protocol):
    """Structured generation with accounting, and the evaluation operations on top of it."""

    model: str
    max_concurrency: int
    calls: list[CallRecord]
    deadline: float | None  # time.monotonic() after which no call is started

    def generate(
        self,
        *,
        prompt: str,
        schema: type[T],
        system: str = "",
        operation: str = "generate",
        version: str = "",
    ) -> T: ...

    def usage(self) -> dict[str, Any]: ...

    def filter(self, *, question: str, text: str | Delimited) -> EvalResult: ...

    def score(
        self, *, question: str, text: str | Delimited, low: float = 0.0, high: float = 1.0
    ) -> EvalResult: ...

    def extract(
        self,
        *,
        question: str,
        text: str | Delimited,
        kind: Literal["text", "number", "boolean", "enum"] = "text",
        options: Sequence[str] = (),
    ) -> EvalResult: ...

    def extract_fields(
        self,
        *,
        fields: dict[str, str],
        text: str | Delimited,
        instructions: str = "",
        feedback: str | None = None,
    ) -> EvalResult: ...

    def filter_batch(self, items: Sequence[dict[str, Any]]) -> list[EvalResult]: ...

    def score_batch(self, items: Sequence[dict[str, Any]]) -> list[EvalResult]: ...

    def extract_batch(self, items: Sequence[dict[str, Any]]) -> list[EvalResult]: ...

    def extract_fields_batch(self, items: Sequence[dict[str, Any]]) -> list[EvalResult]: ...

    def concurrently(self, tasks: Sequence[Callable[[], R]]) -> list[R]: ...
