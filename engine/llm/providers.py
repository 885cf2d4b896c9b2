"""Which language model the settings choose, and its client: Gemini (engine.llm.client) or an
OpenAI-compatible API (engine.llm.openai_client), by LLM_PROVIDER. Pure: settings come in as an
object with the attributes config.settings defines."""

from __future__ import annotations

from typing import Any

from engine.llm.client import GeminiClient, LLMClientBase, Price
from engine.llm.openai_client import OpenAIClient


def uses_vertex(settings: Any) -> bool:
    return bool(settings.GOOGLE_GENAI_USE_VERTEXAI and settings.GOOGLE_CLOUD_PROJECT)


def provider(settings: Any) -> str:
    """The configured provider: ``gemini`` (the default) or ``openai`` (LLM_PROVIDER)."""
    return "openai" if getattr(settings, "LLM_PROVIDER", "gemini") == "openai" else "gemini"


def model_name(settings: Any) -> str:
    """The configured provider's model: GEMINI_MODEL or OPENAI_MODEL."""
    if provider(settings) == "openai":
        return str(getattr(settings, "OPENAI_MODEL", "") or "")
    return str(settings.GEMINI_MODEL)


def not_configured_reason(settings: Any) -> str:
    """What is missing for the configured provider, in words (for error messages)."""
    if provider(settings) == "openai":
        return "LLM_PROVIDER is openai but OPENAI_MODEL is not set"
    return (
        "set GEMINI_API_KEY (or the Vertex AI settings), or LLM_PROVIDER=openai with OPENAI_MODEL"
    )


def configured(settings: Any) -> bool:
    """A language model is the primary classifier: with LLM_PROVIDER=openai, a model name
    (OPENAI_MODEL; a local server needs no key); with Gemini, an API key or Vertex AI
    settings."""
    if provider(settings) == "openai":
        return bool(getattr(settings, "OPENAI_MODEL", ""))
    return bool(settings.GEMINI_API_KEY) or uses_vertex(settings)


def client_from_settings(settings: Any, **overrides: Any) -> LLMClientBase | None:
    """The configured provider's client, or None when none is configured."""
    if not configured(settings):
        return None
    model = model_name(settings)
    prices = getattr(settings, "LLM_PRICES", {}) or {}
    entry = prices.get(model)
    options: dict[str, Any] = dict(
        model=model,
        timeout_seconds=settings.LLM_TIMEOUT_SECONDS,
        max_transport_retries=settings.LLM_MAX_TRANSPORT_RETRIES,
        backoff_base_seconds=settings.LLM_BACKOFF_BASE_SECONDS,
        max_inline_wait_seconds=getattr(settings, "LLM_MAX_INLINE_WAIT_SECONDS", 5.0),
        max_concurrency=settings.LLM_MAX_CONCURRENCY,
        thinking_budget=getattr(settings, "LLM_THINKING_BUDGET", None),
        price=Price(float(entry["input"]), float(entry["output"])) if entry else None,
    )
    if provider(settings) == "openai":
        options.update(
            base_url=getattr(settings, "OPENAI_BASE_URL", "") or None,
            api_key=getattr(settings, "OPENAI_API_KEY", "") or None,
            response_format=getattr(settings, "OPENAI_RESPONSE_FORMAT", "json_schema"),
            token_limit_field=getattr(
                settings, "OPENAI_TOKEN_LIMIT_FIELD", "max_completion_tokens"
            ),
        )
        options.update(overrides)
        return OpenAIClient(**options)
    options.update(
        api_key=settings.GEMINI_API_KEY or None,
        vertexai=uses_vertex(settings),
        project=settings.GOOGLE_CLOUD_PROJECT or None,
        location=settings.GOOGLE_CLOUD_LOCATION,
        base_url=settings.GEMINI_BASE_URL or None,
    )
    options.update(overrides)
    return GeminiClient(**options)
