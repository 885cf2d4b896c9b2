"""The LLM layer: the Gemini client (transport, generate, accounting) and the evaluation
operations every LLM client offers. Only ``engine.llm.client`` imports google.genai."""

from engine.llm.client import (
    CONFIDENCE_RUBRIC,
    CallRecord,
    GeminiClient,
    client_from_settings,
    configured,
    uses_vertex,
)
from engine.llm.errors import LLMError, LLMSchemaError, LLMTransportError
from engine.llm.operations import EvalResult, EvaluationOperations

__all__ = [
    "CONFIDENCE_RUBRIC",
    "CallRecord",
    "EvalResult",
    "EvaluationOperations",
    "GeminiClient",
    "LLMError",
    "LLMSchemaError",
    "LLMTransportError",
    "client_from_settings",
    "configured",
    "uses_vertex",
]
