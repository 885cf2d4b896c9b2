"""The LLM evaluation operations over a user's documents: filter, score, extract and
extract_fields, each document's text sent as delimited data, with bounded concurrency and the
results in input order; and the record of what one request spent (``evaluation_record``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal
from functools import partial
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from documents.models import Document
from engine.llm import EvalResult, LLMUnavailable
from engine.llm.delimiting import Delimited, delimit
from engine.protocols import LLMClient
from reliability.models import Evaluation

logger = logging.getLogger(__name__)

Operation = Literal["filter", "score", "extract", "extract_fields"]
MAX_DOCUMENTS = 50
MAX_TEXT_CHARS = 200_000  # a document's text beyond this is not sent (said in the result)


class EvaluateRequest(BaseModel):
    """What to ask of each document. ``question`` serves filter, score and extract; ``fields``
    (name -> description) serves extract_fields."""

    model_config = ConfigDict(extra="forbid")

    operation: Operation
    documents: list[str] = Field(min_length=1, max_length=MAX_DOCUMENTS)
    question: str = Field("", max_length=2000)
    low: float = 0.0
    high: float = 1.0
    kind: Literal["text", "number", "boolean", "enum"] = "text"
    options: list[str] = Field(default_factory=list, max_length=50)
    fields: dict[str, str] = Field(default_factory=dict, max_length=50)
    instructions: str = Field("", max_length=2000)

    @model_validator(mode="after")
    def _operation_needs(self) -> EvaluateRequest:
        if self.operation == "extract_fields":
            if not self.fields:
                raise ValueError("extract_fields needs 'fields' (name -> description)")
        elif not self.question.strip():
            raise ValueError(f"{self.operation} needs a 'question'")
        if self.operation == "score" and self.low > self.high:
            raise ValueError("score needs low <= high")
        if self.operation == "extract" and self.kind == "enum" and not self.options:
            raise ValueError("extract with kind 'enum' needs 'options'")
        return self


def document_text(document: Document) -> tuple[Delimited | None, str]:
    """(text, problem): the document's pages, delimited as data, or why it has none yet. At
    most MAX_TEXT_CHARS characters are sent; the problem says when pages were cut."""
    if document.status != Document.Status.READY:
        return None, f"The document is not ready (it is {document.status})."
    pages: list[str] = []
    left = MAX_TEXT_CHARS
    for text in document.pages.order_by("number").values_list("text", flat=True):
        if left <= 0:
            break
        pages.append(text[:left])
        left -= len(text)
    problem = f"Only the first {MAX_TEXT_CHARS} characters were read." if left < 0 else ""
    return delimit(pages), problem


def documents_evaluate(
    *, client: LLMClient, request: EvaluateRequest, documents: list[Document]
) -> list[dict[str, Any]]:
    """One result per document, in the order given. A document without text yet gets an
    error without a call; a failed call is an error (value None), never a silent answer."""
    texts = [document_text(d) for d in documents]
    ready = [i for i, (text, _) in enumerate(texts) if text is not None]
    items: list[dict[str, Any]] = []
    for i in ready:
        text = texts[i][0]
        if request.operation == "extract_fields":
            items.append(
                {"fields": request.fields, "text": text, "instructions": request.instructions}
            )
        elif request.operation == "score":
            items.append(
                {
                    "question": request.question,
                    "text": text,
                    "low": request.low,
                    "high": request.high,
                }
            )
        elif request.operation == "extract":
            items.append(
                {
                    "question": request.question,
                    "text": text,
                    "kind": request.kind,
                    "options": request.options,
                }
            )
        else:
            items.append({"question": request.question, "text": text})
    operations: dict[str, Callable[..., EvalResult]] = {
        "filter": client.filter,
        "score": client.score,
        "extract": client.extract,
        "extract_fields": client.extract_fields,
    }
    calls = [partial(_answer, operations[request.operation], item) for item in items]
    answers: dict[int, EvalResult] = dict(
        zip(ready, client.concurrently(calls) if calls else [], strict=True)
    )
    results = []
    for index, document in enumerate(documents):
        answer = answers.get(index) or EvalResult(error=texts[index][1])
        note = texts[index][1] if index in answers else ""
        results.append(
            {
                "document": str(document.pk),
                "value": answer.value,
                "confidence": answer.confidence,
                "reasoning": answer.reasoning,
                "error": answer.error,
                "interval": answer.interval,
                "note": note or None,
            }
        )
    logger.info(
        "evaluate %s over %s document(s): %s failed",
        request.operation,
        len(documents),
        sum(1 for r in results if r["error"]),
    )
    return results


def _answer(operation: Callable[..., EvalResult], item: dict[str, Any]) -> EvalResult:
    """One document's answer. A model that stays unavailable through the call's retries is
    that document's error (value None), as any failed call is: the caller may ask again."""
    try:
        return operation(**item)
    except LLMUnavailable as exc:
        return EvalResult(error=str(exc))


def evaluation_record(
    *,
    user: Any,
    request: EvaluateRequest,
    results: list[dict[str, Any]],
    usage: dict[str, Any],
    model: str,
) -> Evaluation:
    """What one request asked and spent, kept: its cost counts against the daily budget."""
    return Evaluation.objects.create(
        user=user if getattr(user, "pk", None) else None,
        operation=request.operation,
        documents=len(results),
        failed=sum(1 for r in results if r["error"]),
        model=model[:64],
        llm_calls=usage["calls"],
        llm_requests=usage["requests"],
        llm_cache_hits=usage["cache_hits"],
        tokens_in=usage["tokens_in"],
        tokens_out=usage["tokens_out"],
        tokens_thinking=usage["tokens_thinking"],
        cost_usd=Decimal(str(usage["cost_usd"])),
        seconds=usage["seconds"],
    )
