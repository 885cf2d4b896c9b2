"""The OpenAI-compatible client: the Chat Completions API through the ``openai`` package, for a
model inside the hospital (vLLM, Ollama, llama.cpp's server) or Azure OpenAI. The only module
that imports openai.

Everything but the request itself is shared with Gemini (engine.llm.client.LLMClientBase): the
transport retries and the server's Retry-After, the throttle and circuit, the run's deadline,
the response cache, the accounting, and the answers asked again (empty, cut off, off-schema).

The schema goes out as ``response_format`` ``json_schema`` (the server constrains its output to
it: vLLM's guided decoding, Ollama's and llama.cpp's grammars), not strict: OpenAI's strict mode
wants every property required and no defaults, which Vetted's schemas have; the answer is
validated here either way. A server without ``json_schema`` takes ``json_object`` with the
schema in the system message (``response_format="json_object"``).
"""

from __future__ import annotations

import contextlib
import json
import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from engine.llm.client import (
    MAX_HINT_SECONDS,
    RETRYABLE_STATUS,
    TRUNCATED,
    Answer,
    Failure,
    LLMClientBase,
    _is_transport_failure,
    _schema_json,
    retry_hint,
)

RESPONSE_FORMATS = ("json_schema", "json_object")
TOKEN_LIMIT_FIELDS = ("max_completion_tokens", "max_tokens")
PLACEHOLDER_KEY = "not-needed"  # local servers ask for no key; the SDK wants one
# Given explicitly: left to the SDK, an empty OPENAI_BASE_URL in the environment would be used.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
SCHEMA_NOTICE = "Answer with one JSON object, and nothing else, that matches this JSON Schema:"
_THINKING = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)
_NAME = re.compile(r"[^A-Za-z0-9_-]")


class OpenAIClient(LLMClientBase):
    """A model behind an OpenAI-compatible Chat Completions API.

    ``base_url`` is the server's API root (``http://vllm:8000/v1``; None: api.openai.com);
    ``api_key`` may be empty for a local server. ``response_format`` is ``json_schema`` or
    ``json_object``; ``token_limit_field`` names the output limit (``max_completion_tokens``,
    the current API, or ``max_tokens`` for servers that know only that one). The output limit
    counts reasoning tokens, as OpenAI's does, so it is the schema's answer budget plus
    ``thinking_budget``, which is not sent: the model or server decides how much it thinks.
    """

    name = "openai"
    provider = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        response_format: str = "json_schema",
        token_limit_field: str = "max_completion_tokens",
        timeout_seconds: float = 60.0,
        **options: Any,
    ) -> None:
        if response_format not in RESPONSE_FORMATS:
            raise ValueError(f"response_format must be one of {', '.join(RESPONSE_FORMATS)}")
        if token_limit_field not in TOKEN_LIMIT_FIELDS:
            raise ValueError(f"token_limit_field must be one of {', '.join(TOKEN_LIMIT_FIELDS)}")
        self._client = _openai_client(
            base_url=base_url or DEFAULT_BASE_URL,
            api_key=api_key or PLACEHOLDER_KEY,
            timeout_seconds=timeout_seconds,
        )
        self.base_url = base_url or ""
        self.response_format = response_format
        self.token_limit_field = token_limit_field
        super().__init__(model=model, timeout_seconds=timeout_seconds, **options)

    def _messages(self, *, system: str, prompt: str, schema: type[BaseModel]) -> list[Any]:
        if self.response_format == "json_object":
            shape = json.dumps(_schema_json(schema), ensure_ascii=False)
            system = f"{system}\n\n{SCHEMA_NOTICE}\n{shape}".strip()
        return [{"role": "system", "content": system}, {"role": "user", "content": prompt}]

    def _format(self, schema: type[BaseModel]) -> dict[str, Any]:
        if self.response_format == "json_object":
            return {"type": "json_object"}
        return {
            "type": "json_schema",
            "json_schema": {
                "name": _NAME.sub("_", schema.__name__)[:64] or "answer",
                "schema": _schema_json(schema),
                "strict": False,
            },
        }

    def _request(
        self,
        *,
        prompt: str,
        schema: type[BaseModel],
        system: str,
        timeout: float,
        max_output_tokens: int,
    ) -> Any:
        limit: dict[str, Any] = {self.token_limit_field: max_output_tokens}
        return self._client.chat.completions.create(
            model=self.model,
            messages=self._messages(system=system, prompt=prompt, schema=schema),
            response_format=self._format(schema),
            temperature=0.0,
            n=1,
            timeout=timeout,
            **limit,
        )

    def _answer(self, response: Any) -> Answer:
        usage = getattr(response, "usage", None)
        completion = getattr(usage, "completion_tokens", 0) or 0
        details = getattr(usage, "completion_tokens_details", None)
        # completion_tokens already count the reasoning: split them so that thinking is not
        # billed twice (Price bills answer and thinking tokens at the output price).
        thinking = min(completion, getattr(details, "reasoning_tokens", 0) or 0)
        text, problem = _read(getattr(response, "choices", None) or [])
        return Answer(
            text=text,
            tokens_in=getattr(usage, "prompt_tokens", 0) or 0,
            tokens_out=completion - thinking,
            tokens_thinking=thinking,
            problem=problem,
        )

    def _failure(self, exc: Exception) -> Failure:
        import openai

        if isinstance(exc, openai.APIStatusError):
            code = exc.status_code
            status, message = _error_parts(exc.body, exc.message)
            return Failure(
                kind=f"HTTP {code}",
                code=code,
                status=status,
                message=message,
                hint=_retry_hint(exc),
                transient=code in RETRYABLE_STATUS,
            )
        transient = isinstance(exc, openai.APIConnectionError) or _is_transport_failure(exc)
        return Failure(kind=type(exc).__name__, transient=transient)

    def _key_settings(self) -> list[Any]:
        # Another provider or format is another key, even for a model of the same name.
        return [self.provider, self.response_format, 0.0]


@lru_cache(maxsize=16)
def _openai_client(*, base_url: str, api_key: str, timeout_seconds: float) -> Any:
    """One SDK client per configuration and process (its HTTP pool and TLS context are reused
    by every call; a worker that builds it before forking hands it to every job)."""
    import openai

    # Retries are ours (LLMClientBase): the SDK's would double them and ignore the deadline.
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout_seconds)


def _read(choices: list[Any]) -> tuple[str, tuple[str, str] | None]:
    """(the answer's text, None) or ("", (reason, message)) for an answer that is none: a
    refusal or a content filter (blocks), cut off at the limit, or empty."""
    if not choices:
        return "", ("NO_CANDIDATE", "the model returned no answer (no choices)")
    choice = choices[0]
    finish = str(getattr(choice, "finish_reason", "") or "")
    message = getattr(choice, "message", None)
    refusal = getattr(message, "refusal", None)
    if refusal:
        return "", ("REFUSAL", f"the model refused to answer ({str(refusal).strip()[:200]})")
    if finish == "content_filter":
        return "", ("CONTENT_FILTER", "the answer was blocked (finish reason content_filter)")
    if finish == "length":
        return "", (TRUNCATED, "the answer reached the output limit (finish reason length)")
    text = _json_text(str(getattr(message, "content", None) or ""))
    if not text:
        return "", (
            "EMPTY",
            f"the model returned an empty answer (finish reason {finish or 'none'})",
        )
    return text, None


def _json_text(content: str) -> str:
    """The answer's JSON: without a reasoning model's <think> block and a Markdown fence,
    which some local servers leave in the content."""
    content = _THINKING.sub("", content)
    fenced = _FENCE.match(content)
    return (fenced.group(1) if fenced else content).strip()


def _error_parts(body: Any, fallback: str) -> tuple[str, str]:
    """(status name, message) from an error body: OpenAI's ``{"error": {"message", "type",
    "code"}}`` (the SDK hands over the inner object) or a local server's plainer one."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            status = inner.get("code") or inner.get("type") or ""
            return str(status) if isinstance(status, str) else "", str(inner.get("message") or "")
        if isinstance(inner, str):
            return "", inner
    return "", str(body) if isinstance(body, str) else fallback


def _retry_hint(exc: Any) -> float | None:
    """Retry-After (seconds or a date), or OpenAI's retry-after-ms: the longer."""
    hints = [h for h in (retry_hint(exc),) if h is not None]
    headers = getattr(getattr(exc, "response", None), "headers", None)
    raw = headers.get("retry-after-ms") if headers is not None else None
    if raw:
        with contextlib.suppress(ValueError):
            hints.append(min(MAX_HINT_SECONDS, max(0.0, float(raw) / 1000)))
    return max(hints) if hints else None
