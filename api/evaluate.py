"""Ask a language model about your own documents (filter, score, extract, extract_fields)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import HttpRequest
from django.utils import timezone
from ninja import Body, Router

from api.access import own_document
from api.schemas import EvaluateBody, EvaluationResponse, errors
from core.errors import Refused
from reliability import llm_runtime
from reliability.evaluations import (
    MAX_DOCUMENTS,
    EvaluateRequest,
    documents_evaluate,
    evaluation_record,
)

router = Router(tags=["evaluate"])


LLM_NOT_CONFIGURED = (
    "No language model is configured, so the evaluation operations are unavailable: set "
    "GEMINI_API_KEY (or the Vertex AI settings), or LLM_PROVIDER=openai with OPENAI_MODEL, on "
    "the server."
)


@router.post(
    "/evaluate/",
    url_name="evaluate",
    operation_id="evaluate_documents",
    summary="Ask a language model about your documents: filter, score, extract, extract_fields",
    description=(
        f"Runs one operation over up to {MAX_DOCUMENTS} of your own documents with bounded "
        "concurrency (LLM_MAX_CONCURRENCY) and answers in the order asked. Each result has "
        "value, confidence, optional reasoning and error: value null without an error means the "
        "document does not contain the answer. A document of another user, or an unknown one, "
        "is a 404 for the whole request; a document not yet ingested is an error in its result. "
        "Calls share the runs' rate limit, circuit and response cache; the request answers "
        "within EVALUATE_DEADLINE_SECONDS (a document not answered by then gets an error); its "
        "spend counts against the daily budget, and once that is spent the answer is 429 (code "
        "llm_budget_spent, with Retry-After). Without a language model configured the answer "
        "is 503 (code llm_not_configured)."
    ),
    response={200: EvaluationResponse, **errors(404, 503)},
)
def evaluate(request: HttpRequest, body: Body[EvaluateBody]) -> dict[str, Any]:  # type: ignore[type-arg]
    asked = _evaluate_request(body)
    client = llm_runtime.client_for_evaluation()
    if client is None:
        raise Refused(status=503, message=LLM_NOT_CONFIGURED, code="llm_not_configured")
    if llm_runtime.budget_exhausted():
        resume = llm_runtime.next_budget_day()
        raise Refused(
            status=429,
            code="llm_budget_spent",
            message="The daily language-model budget is spent; ask again when the next day "
            f"starts ({resume:%Y-%m-%d %H:%M} UTC).",
            extra={
                "retry_at": resume.isoformat(),
                "retry_after": max(1, int((resume - timezone.now()).total_seconds())),
            },
        )
    documents = []
    for raw in asked.documents:
        try:
            documents.append(own_document(request, UUID(raw)))
        except Refused:
            raise Refused(
                status=404, message=f"No such document for this token: {raw}.", code="not_found"
            ) from None
    results = documents_evaluate(client=client, request=asked, documents=documents)
    usage = client.usage()
    evaluation_record(
        user=request.user, request=asked, results=results, usage=usage, model=client.model
    )
    return {
        "operation": asked.operation,
        "model": client.model,
        "results": results,
        "usage": {k: v for k, v in usage.items() if k != "log"},
    }


def _evaluate_request(body: Any) -> EvaluateRequest:
    """The operation's request as the evaluation service takes it. A score's ends may come in
    either order."""
    values = body.model_dump(mode="json")
    if values["operation"] == "score" and values["low"] > values["high"]:
        values["low"], values["high"] = values["high"], values["low"]
    return EvaluateRequest.model_validate(values)
