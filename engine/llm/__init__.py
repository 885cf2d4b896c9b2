"""The LLM layer: the Gemini client (transport, generate, accounting) and the evaluation
operations every LLM client offers. Only ``engine.llm.client`` imports google.genai."""

from engine.llm.client import (
    CONFIDENCE_RUBRIC,
    CallRecord,
    GeminiClient,
    Price,
    ResponseCache,
    client_from_settings,
    configured,
    prompt_version,
    uses_vertex,
)
from engine.llm.errors import (
    LLMBlocked,
    LLMError,
    LLMNoAnswer,
    LLMRefused,
    LLMSchemaError,
    LLMTransportError,
    LLMTruncated,
    LLMUnavailable,
)
from engine.llm.operations import EvalResult, EvaluationOperations, run_concurrently
from engine.llm.throttle import LocalThrottle, RedisThrottle, Throttle

__all__ = [
    "CONFIDENCE_RUBRIC",
    "CallRecord",
    "EvalResult",
    "EvaluationOperations",
    "GeminiClient",
    "LLMBlocked",
    "LLMError",
    "LLMNoAnswer",
    "LLMRefused",
    "LLMSchemaError",
    "LLMTransportError",
    "LLMTruncated",
    "LLMUnavailable",
    "LocalThrottle",
    "Price",
    "RedisThrottle",
    "ResponseCache",
    "Throttle",
    "client_from_settings",
    "configured",
    "prompt_version",
    "run_concurrently",
    "uses_vertex",
]
