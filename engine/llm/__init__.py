"""The LLM layer: the clients (transport, generate, accounting; Gemini, and an OpenAI-compatible
API in engine.llm.openai_client) and the evaluation operations every LLM client offers. Only
``engine.llm.client`` imports google.genai, only ``engine.llm.openai_client`` imports openai."""

from engine.llm.client import (
    CONFIDENCE_RUBRIC,
    CallRecord,
    GeminiClient,
    LLMClientBase,
    Price,
    ResponseCache,
    prompt_version,
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
from engine.llm.providers import (
    client_from_settings,
    configured,
    model_name,
    not_configured_reason,
    provider,
    uses_vertex,
)
from engine.llm.throttle import LocalThrottle, RedisThrottle, Throttle

__all__ = [
    "CONFIDENCE_RUBRIC",
    "CallRecord",
    "EvalResult",
    "EvaluationOperations",
    "GeminiClient",
    "LLMBlocked",
    "LLMClientBase",
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
    "model_name",
    "not_configured_reason",
    "prompt_version",
    "provider",
    "run_concurrently",
    "uses_vertex",
]
