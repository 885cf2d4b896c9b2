"""The evaluation operations on top of ``generate``: filter, score, extract, extract_fields,
and their ``*_batch`` forms (bounded concurrency, results in input order).

Each result carries ``value``, ``confidence``, optional ``reasoning`` and ``error``: value None
without an error means "not present in the source"; value None with an error means the
operation failed. A transient failure (``LLMUnavailable``) is not swallowed into a result: it
propagates, so that the run waits and resumes instead of recording a check as failed. A client
gets the operations by inheriting ``EvaluationOperations`` and providing ``generate``.

The source text is always delimited as data (engine.llm.delimiting) and every system prompt
says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, create_model

from engine.llm.delimiting import DATA_NOTICE, Delimited, feedback_block, text_block
from engine.llm.errors import LLMError, LLMUnavailable

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

EVALUATE_SYSTEM = (
    "You answer one question about a clinical document, from the document's text only.\n"
    + DATA_NOTICE
)
EXTRACT_SYSTEM = (
    "You extract fields from a clinical document, from the document's text only. For each field "
    "give value (null if the document does not contain it), status, confidence and the verbatim "
    "source snippet.\n" + DATA_NOTICE
)


class EvaluationOperations:
    """Mixed into an LLM client: every operation is one structured ``generate`` call."""

    max_concurrency: int = 4

    def generate(
        self,
        *,
        prompt: str,
        schema: type[T],
        system: str = "",
        operation: str = "generate",
        version: str = "",
    ) -> T:
        raise NotImplementedError

    def filter(self, *, question: str, text: str | Delimited) -> EvalResult:
        return self._evaluate("filter", _FilterAnswer, question, text)

    def score(
        self, *, question: str, text: str | Delimited, low: float = 0.0, high: float = 1.0
    ) -> EvalResult:
        result = self._evaluate(
            "score",
            _ScoreAnswer,
            f"{question} Answer with a number from {low} to {high}, "
            "and the interval you are confident it lies in.",
            text,
        )
        if result.value is not None and not low <= float(result.value) <= high:
            return EvalResult(
                value=None, confidence=0.0, error=f"score {result.value} outside {low}..{high}"
            )
        return result

    def extract(
        self,
        *,
        question: str,
        text: str | Delimited,
        kind: Literal["text", "number", "boolean", "enum"] = "text",
        options: Sequence[str] = (),
    ) -> EvalResult:
        value_type: Any = {
            "text": str,
            "number": float,
            "boolean": bool,
            "enum": Literal[tuple(options)] if options else str,
        }[kind]
        schema = create_model(
            f"Extract{kind.title()}",
            value=(value_type | None, Field(description="None when the source does not say.")),
            confidence=(float, ...),
            reasoning=(str, ""),
        )
        return self._evaluate("extract", schema, question, text)

    def extract_fields(
        self,
        *,
        fields: dict[str, str],
        text: str | Delimited,
        instructions: str = "",
        feedback: str | None = None,
    ) -> EvalResult:
        """``fields`` maps field name to its description; value is a dict of field results.
        ``text`` is the document text (``Delimited`` pages, or plain text delimited here);
        ``feedback`` (an evaluator's report on an earlier answer) goes in a feedback block."""
        definitions: dict[str, Any] = {
            name: (FieldValue, Field(description=desc)) for name, desc in fields.items()
        }
        schema = create_model("ExtractedFields", **definitions)
        block, token = _as_block(text)
        prompt = f"{instructions}\n\n{block}"
        if feedback:
            prompt += "\n\n" + feedback_block(feedback, token)
        try:
            answer = self.generate(
                prompt=prompt, schema=schema, system=EXTRACT_SYSTEM, operation="extract_fields"
            )
        except LLMUnavailable:
            raise
        except LLMError as exc:
            return EvalResult(value=None, confidence=0.0, error=str(exc))
        values = answer.model_dump()
        found = [v["confidence"] for v in values.values() if v["value"] is not None]
        return EvalResult(value=values, confidence=min(found) if found else 0.0)

    def filter_batch(self, items: Sequence[dict[str, Any]]) -> list[EvalResult]:
        return self.concurrently([partial(self.filter, **item) for item in items])

    def score_batch(self, items: Sequence[dict[str, Any]]) -> list[EvalResult]:
        return self.concurrently([partial(self.score, **item) for item in items])

    def extract_batch(self, items: Sequence[dict[str, Any]]) -> list[EvalResult]:
        return self.concurrently([partial(self.extract, **item) for item in items])

    def extract_fields_batch(self, items: Sequence[dict[str, Any]]) -> list[EvalResult]:
        return self.concurrently([partial(self.extract_fields, **item) for item in items])

    def concurrently(self, tasks: Sequence[Callable[[], R]]) -> list[R]:
        """Independent calls at once, at most ``max_concurrency``; results in input order. The
        first exception (e.g. LLMUnavailable) is raised once every task has finished."""
        return run_concurrently(tasks, self.max_concurrency)

    def _evaluate(
        self, operation: str, schema: type[BaseModel], question: str, text: str | Delimited
    ) -> EvalResult:
        block, _token = _as_block(text)
        prompt = f"QUESTION: {question}\n\n{block}"
        try:
            answer = self.generate(
                prompt=prompt, schema=schema, operation=operation, system=EVALUATE_SYSTEM
            )
        except LLMUnavailable:
            raise
        except LLMError as exc:
            return EvalResult(value=None, confidence=0.0, error=str(exc))
        data = answer.model_dump()
        return EvalResult(
            value=data.get("value"),
            confidence=float(data.get("confidence", 0)),
            reasoning=data.get("reasoning") or None,
            interval=data.get("interval"),
        )


def run_concurrently(tasks: Sequence[Callable[[], R]], max_workers: int) -> list[R]:
    """Run callables with bounded concurrency (inline when there is one); results in order."""
    if len(tasks) <= 1 or max_workers <= 1:
        return [task() for task in tasks]
    with ThreadPoolExecutor(max_workers=min(max_workers, len(tasks))) as pool:
        futures = [pool.submit(task) for task in tasks]
    return [future.result() for future in futures]


def _as_block(text: str | Delimited) -> tuple[str, str]:
    """Delimited text stays as it is; plain text is delimited as one page."""
    if isinstance(text, Delimited):
        return text.text, text.token
    return text_block(text)


class EvalResult(BaseModel):
    value: Any = None
    confidence: float = 0.0
    reasoning: str | None = None
    error: str | None = None
    interval: list[float] | None = None


class FieldValue(BaseModel):
    value: str | None = None
    status: Literal["found", "not_present", "ambiguous"] = "not_present"
    confidence: float = 0.0
    snippet: str = ""


class _FilterAnswer(BaseModel):
    value: bool
    confidence: float
    reasoning: str = ""


class _ScoreAnswer(BaseModel):
    value: float | None
    interval: list[float] | None = None
    confidence: float
    reasoning: str = ""
