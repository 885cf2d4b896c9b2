"""The Gemini client: transport, structured generation and call accounting. The only module
that imports google.genai.

Three retry layers with separate budgets (see CONVENTIONS.md): transport errors (429, 5xx,
timeouts, connection errors) retry here with exponential backoff and jitter, bounded; a response
that does not fit the schema is re-asked once with the validation error; verification retries
belong to the orchestrator. Every call is accounted (tokens, latency, outcome). The evaluation
operations (filter, score, extract, extract_fields) come from ``EvaluationOperations``.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from engine.llm.errors import LLMError, LLMSchemaError, LLMTransportError
from engine.llm.operations import EvaluationOperations

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

CONFIDENCE_RUBRIC = (
    "Confidence rubric (use it for every confidence you give): 0.9-1.0 the source states it "
    "explicitly; 0.7-0.89 strong inference from the source; 0.4-0.69 weak inference; below "
    "0.4 the source does not give enough to say."
)
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


@dataclass
class CallRecord:
    operation: str
    model: str
    ok: bool
    tries: int
    reasked: bool
    tokens_in: int
    tokens_out: int
    seconds: float
    error: str = ""


class GeminiClient(EvaluationOperations):
    """Gemini through google-genai with structured output (response_schema = a pydantic model).

    API-key mode by default; Vertex AI mode with ``vertexai=True`` and project/location.
    ``base_url`` points the real client at a proxy or, in tests, at a local stub server.
    """

    name = "gemini"

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        vertexai: bool = False,
        project: str | None = None,
        location: str | None = None,
        base_url: str | None = None,
        timeout_seconds: float = 60.0,
        max_transport_retries: int = 4,
        backoff_base_seconds: float = 1.0,
        backoff_max_seconds: float = 30.0,
        max_concurrency: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        from google import genai
        from google.genai import types

        http_options = types.HttpOptions(
            base_url=base_url or None,
            timeout=int(timeout_seconds * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),  # retries are ours, below
        )
        if vertexai:
            self._client = genai.Client(
                vertexai=True, project=project, location=location, http_options=http_options
            )
        else:
            if not api_key:
                raise LLMError("GEMINI_API_KEY is not set.")
            self._client = genai.Client(api_key=api_key, http_options=http_options)
        self._types = types
        self.model = model
        self.max_transport_retries = max_transport_retries
        self.backoff_base = backoff_base_seconds
        self.backoff_max = backoff_max_seconds
        self.max_concurrency = max_concurrency
        self._sleep = sleep
        self._lock = threading.Lock()
        self.calls: list[CallRecord] = []

    # -- accounting ---------------------------------------------------------------------------

    def _record(self, record: CallRecord) -> None:
        with self._lock:
            self.calls.append(record)

    def usage(self) -> dict[str, Any]:
        with self._lock:
            calls = list(self.calls)
        return {
            "calls": len(calls),
            "tokens_in": sum(c.tokens_in for c in calls),
            "tokens_out": sum(c.tokens_out for c in calls),
            "seconds": round(sum(c.seconds for c in calls), 3),
            "log": [asdict(c) for c in calls],
        }

    # -- transport ----------------------------------------------------------------------------

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self.backoff_max, self.backoff_base * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)  # exponential, with jitter

    def _is_retryable(self, exc: Exception) -> bool:
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            return exc.code in RETRYABLE_STATUS
        # Timeouts and dropped connections from whichever HTTP library the SDK uses (httpx,
        # httpx2, aiohttp): their transport errors share these names across versions.
        names = {cls.__name__ for cls in type(exc).__mro__}
        return bool(
            names
            & {
                "TimeoutException",
                "TransportError",
                "ConnectError",
                "ConnectionError",
                "TimeoutError",
            }
        )

    def _send(self, *, prompt: str, schema: type[BaseModel], system: str) -> tuple[Any, int]:
        config = self._types.GenerateContentConfig(
            system_instruction=system,
            response_mime_type="application/json",
            response_schema=schema,
            temperature=0.0,
        )
        tries = 0
        while True:
            tries += 1
            try:
                response = self._client.models.generate_content(
                    model=self.model, contents=prompt, config=config
                )
                return response, tries
            except Exception as exc:
                if not self._is_retryable(exc) or tries > self.max_transport_retries:
                    raise LLMTransportError(_describe(exc, tries)) from exc
                delay = self._backoff(tries - 1)
                logger.warning(
                    "LLM transport error (%s); retry %s in %.1fs", type(exc).__name__, tries, delay
                )
                self._sleep(delay)

    # -- structured generation ----------------------------------------------------------------

    def generate(
        self, *, prompt: str, schema: type[T], system: str = "", operation: str = "generate"
    ) -> T:
        """One structured call. Raises LLMTransportError or LLMSchemaError when it fails."""
        system = f"{system}\n\n{CONFIDENCE_RUBRIC}".strip()
        started = time.perf_counter()
        tokens_in = tokens_out = tries = 0
        reasked = False
        current_prompt = prompt
        try:
            for round_ in range(2):
                response, used = self._send(prompt=current_prompt, schema=schema, system=system)
                tries += used
                usage = getattr(response, "usage_metadata", None)
                tokens_in += getattr(usage, "prompt_token_count", 0) or 0
                tokens_out += getattr(usage, "candidates_token_count", 0) or 0
                text = response.text or ""
                try:
                    result = schema.model_validate_json(text)
                except ValidationError as exc:
                    if round_ == 1:
                        raise LLMSchemaError(
                            f"the response did not fit the {schema.__name__} schema after one "
                            f"re-ask ({exc.error_count()} error(s))"
                        ) from exc
                    reasked = True
                    current_prompt = (
                        f"{prompt}\n\n--- YOUR PREVIOUS RESPONSE WAS INVALID ---\n"
                        f"It did not match the required JSON schema:\n{_brief(exc)}\n"
                        "Answer again with JSON that matches the schema exactly."
                    )
                    continue
                self._record(
                    CallRecord(
                        operation,
                        self.model,
                        True,
                        tries,
                        reasked,
                        tokens_in,
                        tokens_out,
                        round(time.perf_counter() - started, 3),
                    )
                )
                return result
        except LLMError as exc:
            self._record(
                CallRecord(
                    operation,
                    self.model,
                    False,
                    tries,
                    reasked,
                    tokens_in,
                    tokens_out,
                    round(time.perf_counter() - started, 3),
                    str(exc),
                )
            )
            raise
        raise AssertionError("unreachable")


def _brief(exc: ValidationError) -> str:
    return "\n".join(f"- {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:10])


def _describe(exc: Exception, tries: int) -> str:
    code = getattr(exc, "code", None)
    kind = f"HTTP {code}" if code else type(exc).__name__
    return f"{kind} after {tries} attempt(s)"


def uses_vertex(settings: Any) -> bool:
    return bool(settings.GOOGLE_GENAI_USE_VERTEXAI and settings.GOOGLE_CLOUD_PROJECT)


def configured(settings: Any) -> bool:
    """An API key or Vertex AI settings are present: Gemini is the primary classifier."""
    return bool(settings.GEMINI_API_KEY) or uses_vertex(settings)


def client_from_settings(settings: Any, **overrides: Any) -> GeminiClient | None:
    """The configured client, or None when no key (nor Vertex settings) is configured."""
    if not configured(settings):
        return None
    vertex = uses_vertex(settings)
    options: dict[str, Any] = dict(
        model=settings.GEMINI_MODEL,
        api_key=settings.GEMINI_API_KEY or None,
        vertexai=vertex,
        project=settings.GOOGLE_CLOUD_PROJECT or None,
        location=settings.GOOGLE_CLOUD_LOCATION,
        base_url=settings.GEMINI_BASE_URL or None,
        timeout_seconds=settings.LLM_TIMEOUT_SECONDS,
        max_transport_retries=settings.LLM_MAX_TRANSPORT_RETRIES,
        backoff_base_seconds=settings.LLM_BACKOFF_BASE_SECONDS,
        max_concurrency=settings.LLM_MAX_CONCURRENCY,
    )
    options.update(overrides)
    return GeminiClient(**options)
