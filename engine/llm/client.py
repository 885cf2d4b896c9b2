"""The language-model clients: transport, structured generation and call accounting, shared by
every provider (``LLMClientBase``), and the Gemini client, the only module that imports
google.genai. The OpenAI-compatible client (vLLM, Ollama, llama.cpp's server, Azure OpenAI) is
in engine.llm.openai_client; both differ only in how one request is sent, how its answer is
read and how a failure is classified. engine.llm.providers builds the one the settings choose.

Three retry layers with separate budgets (see CONVENTIONS.md): transport errors (429, 5xx,
timeouts, connection errors) retry here with exponential backoff and jitter, honouring the
server's Retry-After header and google.rpc.RetryInfo, bounded by the number of tries, by the
longest wait worth holding a worker for and by the run's deadline; past those the call raises
``LLMUnavailable`` with the moment worth trying again, and the run waits. A response that does
not fit the schema is re-asked once with the validation error; an empty answer is asked once
more; an answer cut off at the output limit (``max_output_tokens``, set from the schema and the
thinking budget) is asked once more with twice the limit, and then reported as truncated; a
safety block is reported as a block, never re-asked. Verification retries belong to the
orchestrator.

Every call is accounted (tokens in, out and thinking, cost, tries, latency, prompt version,
outcome). Answers are cached by (prompt with the page texts, prompt version, model, schema,
generation settings): the same text asked the same way costs no second call.
"""

from __future__ import annotations

import copy
import email.utils
import hashlib
import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from engine.llm.errors import (
    LLMBlocked,
    LLMError,
    LLMRefused,
    LLMSchemaError,
    LLMTransportError,
    LLMTruncated,
    LLMUnavailable,
)
from engine.llm.operations import EvaluationOperations
from engine.llm.throttle import LocalThrottle, Throttle

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

CONFIDENCE_RUBRIC = (
    "Confidence rubric (use it for every confidence you give): 0.9-1.0 the source states it "
    "explicitly; 0.7-0.89 strong inference from the source; 0.4-0.69 weak inference; below "
    "0.4 the source does not give enough to say."
)
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
OVERLOAD_STATUS = frozenset({429, 503})  # the server says "not now": pause every caller
PERMANENT_MEANING = {
    400: "the request was rejected as invalid",
    401: "the API key or credentials were not accepted",
    403: "the API key or project is not allowed to use this model",
    404: "the model or endpoint was not found",
}
BLOCKING_FINISH = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "LANGUAGE", "OTHER"}
)
EMPTY_ANSWER = frozenset({"NO_CANDIDATE", "EMPTY"})  # asked once more before it is a block
TRUNCATED = "MAX_TOKENS"
# An answer's output limit: the schema's ``OUTPUT_TOKENS`` (a ClassVar) or this, plus what the
# model may think (Gemini counts thinking tokens against max_output_tokens): the thinking
# budget, or DYNAMIC_THINKING_TOKENS when the model chooses (-1). A truncated answer is asked
# once more with twice the limit, at most MAX_OUTPUT_TOKENS.
OUTPUT_TOKENS = 8192
DYNAMIC_THINKING_TOKENS = 8192
MAX_OUTPUT_TOKENS = 65536
MAX_HINT_SECONDS = 3600.0  # a longer Retry-After is taken as an hour
MIN_CALL_SECONDS = 5.0  # a try with less time than this left before the deadline is not made


def output_limit(schema: type[BaseModel], thinking_budget: int | None) -> int:
    """max_output_tokens for an answer of ``schema``: its own answer budget and the thinking."""
    answer = int(getattr(schema, "OUTPUT_TOKENS", OUTPUT_TOKENS))
    if thinking_budget is None or thinking_budget < 0:
        thinking = DYNAMIC_THINKING_TOKENS
    else:
        thinking = thinking_budget
    return min(MAX_OUTPUT_TOKENS, answer + thinking)


def prompt_version(name: str, *texts: str) -> str:
    """A prompt's version: its name and a hash of its text. A changed prompt is a new version."""
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:12]
    return f"{name}-{digest}"


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens; thinking tokens are billed as output."""

    input_per_million: float
    output_per_million: float

    def cost(self, tokens_in: int, tokens_out: int, tokens_thinking: int) -> float:
        return (
            tokens_in * self.input_per_million
            + (tokens_out + tokens_thinking) * self.output_per_million
        ) / 1_000_000


class ResponseCache(Protocol):
    """Validated answers by key. ``get`` returns the answer's JSON or None."""

    def get(self, key: str) -> str | None: ...

    def put(
        self, key: str, *, value: str, operation: str, model: str, prompt_version: str
    ) -> None: ...


@dataclass
class CallRecord:
    operation: str
    model: str
    ok: bool
    tries: int  # HTTP requests made (0: answered from the cache, or never sent)
    reasked: bool
    tokens_in: int
    tokens_out: int
    seconds: float
    error: str = ""
    tokens_thinking: int = 0
    cost_usd: float = 0.0
    prompt_version: str = ""
    outcome: str = "ok"  # ok, cached, unavailable, refused, blocked, truncated, schema, failed
    retried: int = 0  # answers asked again because they were empty or cut off


@dataclass
class _Progress:
    tries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_thinking: int = 0


@dataclass(frozen=True)
class Answer:
    """One response, as every provider's is read: the answer's text, the tokens it used and,
    when it is not a usable answer, why (``problem``: (reason, message); reason TRUNCATED for
    an answer cut off at the output limit, one of EMPTY_ANSWER for none, any other a block)."""

    text: str = ""
    tokens_in: int = 0
    tokens_out: int = 0  # the answer's tokens, thinking not included
    tokens_thinking: int = 0
    problem: tuple[str, str] | None = None


@dataclass(frozen=True)
class Failure:
    """A request that raised, as every provider's is classified. ``code`` is the HTTP status
    (None: no answer at all); ``transient`` says whether trying again may help (429, 5xx,
    timeouts, dropped connections); ``hint`` is the wait the server asked for, in seconds."""

    kind: str  # "HTTP 503", or the exception's name (ReadTimeout)
    code: int | None = None
    status: str = ""  # the server's name for the status (UNAVAILABLE), in short descriptions
    message: str = ""
    hint: float | None = None
    transient: bool = False

    def describe(self, tries: int, *, brief: bool = False) -> str:
        if brief:
            return f"{self.kind}{f' {self.status}' if self.status and self.code else ''}"
        return f"{self.kind} after {tries} attempt(s)"

    def refusal(self, tries: int) -> str:
        meaning = PERMANENT_MEANING.get(self.code or 0, "the request was refused")
        message = self.message.strip()
        return f"HTTP {self.code} after {tries} attempt(s): {meaning}" + (
            f" ({message[:200]})" if message else ""
        )


class LLMClientBase(EvaluationOperations):
    """Structured generation over one provider's API, with what every provider shares: the
    transport retries (backoff with jitter, the server's retry hints, the shared throttle and
    circuit, the run's deadline), the response cache, the accounting, and the answers asked
    again (empty once, cut off once with twice the limit, schema-invalid once with the error).

    A provider subclass gives ``provider`` (the name runs record) and four methods: ``_request``
    (send one request), ``_answer`` (read its response), ``_failure`` (classify what it
    raised) and ``_key_settings`` (the generation settings in the cache key).
    ``deadline`` (a ``time.monotonic()`` value) bounds every try and wait of the run using it.
    """

    provider = "llm"

    def __init__(
        self,
        *,
        model: str,
        timeout_seconds: float = 60.0,
        max_transport_retries: int = 4,
        backoff_base_seconds: float = 1.0,
        backoff_max_seconds: float = 30.0,
        max_inline_wait_seconds: float = 5.0,
        max_concurrency: int = 4,
        thinking_budget: int | None = None,
        price: Price | None = None,
        cache: ResponseCache | None = None,
        throttle: Throttle | None = None,
        deadline: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.max_transport_retries = max_transport_retries
        self.backoff_base = backoff_base_seconds
        self.backoff_max = backoff_max_seconds
        self.max_inline_wait = max_inline_wait_seconds
        self.max_concurrency = max_concurrency
        self.thinking_budget = thinking_budget
        self.price = price
        self.cache = cache
        self.throttle: Throttle = throttle if throttle is not None else LocalThrottle()
        self.deadline = deadline
        self._sleep = sleep
        self._lock = threading.Lock()
        self._local = threading.local()
        self.calls: list[CallRecord] = []

    # -- the provider's part ------------------------------------------------------------------

    def _request(
        self,
        *,
        prompt: str,
        schema: type[BaseModel],
        system: str,
        timeout: float,
        max_output_tokens: int,
    ) -> Any:
        """Send one request; return the provider's response (read by ``_answer``)."""
        raise NotImplementedError

    def _answer(self, response: Any) -> Answer:
        raise NotImplementedError

    def _failure(self, exc: Exception) -> Failure:
        raise NotImplementedError

    def _key_settings(self) -> list[Any]:
        """The generation settings that change an answer, for the cache key."""
        raise NotImplementedError

    # -- accounting ---------------------------------------------------------------------------

    def _record(self, record: CallRecord) -> None:
        with self._lock:
            self.calls.append(record)

    def usage(self) -> dict[str, Any]:
        with self._lock:
            calls = list(self.calls)
        return {
            "calls": sum(1 for c in calls if c.tries > 0),
            "requests": sum(c.tries for c in calls),
            "cache_hits": sum(1 for c in calls if c.outcome == "cached"),
            "tokens_in": sum(c.tokens_in for c in calls),
            "tokens_out": sum(c.tokens_out for c in calls),
            "tokens_thinking": sum(c.tokens_thinking for c in calls),
            "cost_usd": round(sum(c.cost_usd for c in calls), 6),
            "seconds": round(sum(c.seconds for c in calls), 3),
            "log": [asdict(c) for c in calls],
        }

    # -- time: the deadline, waits and the shared circuit -------------------------------------

    def _now(self) -> float:
        # With an injected sleep (tests) time does not pass; the time slept so far does.
        return max(time.time(), getattr(self._local, "slept_until", 0.0))

    def _wait(self, seconds: float) -> None:
        self._local.slept_until = self._now() + seconds
        self._sleep(seconds)

    def _time_left(self) -> float | None:
        if self.deadline is None:
            return None
        return self.deadline - time.monotonic()

    def _may_wait(self, seconds: float) -> bool:
        left = self._time_left()
        fits = left is None or seconds + MIN_CALL_SECONDS <= left
        return seconds <= self.max_inline_wait and fits

    def _await_turn(self) -> None:
        """Wait out an open circuit and the rate limit, or give up with LLMUnavailable."""
        state = self.throttle.state()
        now = self._now()
        wait = state.remaining(now)
        if wait > 0:
            if not self._may_wait(wait):
                raise LLMUnavailable(
                    f"the language model asked to wait ({state.reason})",
                    retry_at=state.paused_until,
                    hinted=True,
                )
            self._wait(wait)
        slot = self.throttle.reserve()
        if slot > 0.001:
            if not self._may_wait(slot):
                raise LLMUnavailable(
                    "the request rate limit is reached", retry_at=now + slot, hinted=True
                )
            self._wait(slot)

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self.backoff_max, self.backoff_base * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)  # exponential, with jitter

    # -- transport ----------------------------------------------------------------------------

    def _send(
        self,
        *,
        prompt: str,
        schema: type[BaseModel],
        system: str,
        progress: _Progress,
        max_output_tokens: int,
    ) -> Any:
        failures = 0
        while True:
            self._await_turn()
            timeout = self.timeout_seconds
            left = self._time_left()
            if left is not None:
                if left < MIN_CALL_SECONDS:
                    raise LLMUnavailable(
                        "the run's time for language-model calls is spent",
                        retry_at=self._now() + self._backoff(0),
                    )
                timeout = min(timeout, left)
            progress.tries += 1
            try:
                response = self._request(
                    prompt=prompt,
                    schema=schema,
                    system=system,
                    timeout=timeout,
                    max_output_tokens=max_output_tokens,
                )
            except Exception as exc:
                failure = self._failure(exc)
                code = failure.code
                if code is not None and code not in RETRYABLE_STATUS:
                    raise LLMRefused(failure.refusal(progress.tries), code=code) from exc
                if not failure.transient:
                    raise LLMTransportError(failure.describe(progress.tries)) from exc
                failures += 1
                hint = failure.hint
                if code in OVERLOAD_STATUS and hint is not None:
                    self.throttle.pause(hint, failure.describe(progress.tries, brief=True))
                else:
                    self.throttle.failure()
                delay = max(self._backoff(failures - 1), hint or 0.0)
                stop = ""
                if failures > self.max_transport_retries:
                    stop = "tries exhausted"
                elif delay > self.max_inline_wait:
                    stop = f"the next try is in {delay:.0f} s"
                elif not self._may_wait(delay):
                    stop = "no time left in this run for another try"
                if stop:
                    raise LLMUnavailable(
                        f"{failure.describe(progress.tries)}; {stop}",
                        retry_at=self._now() + delay,
                        hinted=hint is not None,
                    ) from exc
                logger.warning(
                    "LLM transport error (%s); retry %s in %.1fs",
                    failure.describe(progress.tries, brief=True),
                    failures,
                    delay,
                )
                self._wait(delay)
                continue
            self.throttle.success()
            return response

    # -- structured generation ----------------------------------------------------------------

    def _cache_key(self, *, system: str, prompt: str, schema: type[BaseModel]) -> str:
        shape = _schema_shape(schema)
        payload = json.dumps(
            [self.model, system, prompt, shape, *self._key_settings()], ensure_ascii=False
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    def generate(
        self,
        *,
        prompt: str,
        schema: type[T],
        system: str = "",
        operation: str = "generate",
        version: str = "",
    ) -> T:
        """One structured call. Raises LLMUnavailable (transient), LLMRefused, LLMBlocked or
        LLMSchemaError when it fails."""
        system = f"{system}\n\n{CONFIDENCE_RUBRIC}".strip()
        version = version or prompt_version(operation, system)
        key = self._cache_key(system=system, prompt=prompt, schema=schema)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    result = schema.model_validate_json(hit)
                except ValidationError:
                    pass  # an entry from an older schema: ask again
                else:
                    self._record(
                        CallRecord(
                            operation=operation,
                            model=self.model,
                            ok=True,
                            tries=0,
                            reasked=False,
                            tokens_in=0,
                            tokens_out=0,
                            seconds=0.0,
                            prompt_version=version,
                            outcome="cached",
                        )
                    )
                    return result
        started = time.perf_counter()
        progress = _Progress()
        reasked = False
        retried = 0
        current_prompt = prompt
        limit = output_limit(schema, self.thinking_budget)

        def record(ok: bool, error: str = "", outcome: str = "ok") -> None:
            cost = (
                self.price.cost(progress.tokens_in, progress.tokens_out, progress.tokens_thinking)
                if self.price
                else 0.0
            )
            self._record(
                CallRecord(
                    operation=operation,
                    model=self.model,
                    ok=ok,
                    tries=progress.tries,
                    reasked=reasked,
                    tokens_in=progress.tokens_in,
                    tokens_out=progress.tokens_out,
                    seconds=round(time.perf_counter() - started, 3),
                    error=error,
                    tokens_thinking=progress.tokens_thinking,
                    cost_usd=round(cost, 6),
                    prompt_version=version,
                    outcome=outcome,
                    retried=retried,
                )
            )

        empty_left = truncated_left = 1
        try:
            while True:
                response = self._send(
                    prompt=current_prompt,
                    schema=schema,
                    system=system,
                    progress=progress,
                    max_output_tokens=limit,
                )
                answer = self._answer(response)
                progress.tokens_in += answer.tokens_in
                progress.tokens_out += answer.tokens_out
                progress.tokens_thinking += answer.tokens_thinking
                problem = answer.problem
                if problem is not None:
                    reason, message = problem
                    if reason == TRUNCATED:
                        if truncated_left and limit < MAX_OUTPUT_TOKENS:
                            truncated_left -= 1
                            retried += 1
                            limit = min(MAX_OUTPUT_TOKENS, limit * 2)
                            continue
                        raise LLMTruncated(
                            f"the language model's answer was cut off: {message}",
                            max_output_tokens=limit,
                        )
                    if reason in EMPTY_ANSWER and empty_left:
                        empty_left -= 1
                        retried += 1
                        continue
                    if reason in EMPTY_ANSWER:
                        message = f"{message}, twice"
                    raise LLMBlocked(
                        f"the language model blocked the request: {message}", reason=reason
                    )
                text = answer.text
                try:
                    result = schema.model_validate_json(text)
                except ValidationError as exc:
                    if reasked:
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
                record(True)
                if self.cache is not None:
                    self.cache.put(
                        key,
                        value=result.model_dump_json(),
                        operation=operation,
                        model=self.model,
                        prompt_version=version,
                    )
                return result
        except LLMError as exc:
            record(False, str(exc), _outcome(exc))
            raise


class GeminiClient(LLMClientBase):
    """Gemini through google-genai with structured output (response_schema = a pydantic model).

    API-key mode by default; Vertex AI mode with ``vertexai=True`` and project/location.
    ``base_url`` points the real client at a proxy or, in tests, at a local stub server.
    ``deadline`` (a ``time.monotonic()`` value) bounds every try and wait of the run using it.
    """

    name = "gemini"
    provider = "gemini"

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
        **options: Any,
    ) -> None:
        from google.genai import types

        self._client = _genai_client(
            api_key=api_key,
            vertexai=vertexai,
            project=project,
            location=location,
            base_url=base_url,
            timeout_ms=int(timeout_seconds * 1000),
        )
        self._types = types
        super().__init__(model=model, timeout_seconds=timeout_seconds, **options)

    def _config(
        self, *, system: str, schema: type[BaseModel], timeout: float, max_output_tokens: int
    ) -> Any:
        types = self._types
        options: dict[str, Any] = dict(
            system_instruction=system,
            response_mime_type="application/json",
            response_schema=copy.deepcopy(_schema_json(schema)),  # the SDK edits it in place
            temperature=0.0,
            max_output_tokens=max_output_tokens,
            http_options=types.HttpOptions(timeout=max(1, int(timeout * 1000))),
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        if self.thinking_budget is not None:
            options["thinking_config"] = types.ThinkingConfig(thinking_budget=self.thinking_budget)
        return types.GenerateContentConfig(**options)

    def _request(
        self,
        *,
        prompt: str,
        schema: type[BaseModel],
        system: str,
        timeout: float,
        max_output_tokens: int,
    ) -> Any:
        return self._client.models.generate_content(
            model=self.model,
            contents=prompt,
            config=self._config(
                system=system, schema=schema, timeout=timeout, max_output_tokens=max_output_tokens
            ),
        )

    def _answer(self, response: Any) -> Answer:
        usage = getattr(response, "usage_metadata", None)
        problem = blocked_reason(response)
        return Answer(
            text=(response.text or "") if problem is None else "",
            tokens_in=getattr(usage, "prompt_token_count", 0) or 0,
            tokens_out=getattr(usage, "candidates_token_count", 0) or 0,
            tokens_thinking=getattr(usage, "thoughts_token_count", 0) or 0,
            problem=problem,
        )

    def _failure(self, exc: Exception) -> Failure:
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            return Failure(
                kind=f"HTTP {exc.code}" if exc.code else type(exc).__name__,
                code=exc.code,
                status=str(exc.status or ""),
                message=str(exc.message or ""),
                hint=retry_hint(exc),
                transient=exc.code in RETRYABLE_STATUS,
            )
        return Failure(
            kind=type(exc).__name__, hint=retry_hint(exc), transient=_is_transport_failure(exc)
        )

    def _key_settings(self) -> list[Any]:
        return [self.thinking_budget, 0.0]


@lru_cache(maxsize=16)
def _genai_client(
    *,
    api_key: str | None,
    vertexai: bool,
    project: str | None,
    location: str | None,
    base_url: str | None,
    timeout_ms: int,
) -> Any:
    """One SDK client per configuration and process: building one loads the TLS trust store
    (about 80 ms), and a worker that builds it before forking hands it to every job."""
    from google import genai
    from google.genai import types

    http_options = types.HttpOptions(
        base_url=base_url or None,
        timeout=timeout_ms,
        retry_options=types.HttpRetryOptions(attempts=1),  # retries are ours (GeminiClient)
    )
    if vertexai:
        return genai.Client(
            vertexai=True, project=project, location=location, http_options=http_options
        )
    if not api_key:
        raise LLMError("GEMINI_API_KEY is not set.")
    return genai.Client(api_key=api_key, http_options=http_options)


@lru_cache(maxsize=64)
def _schema_json(schema: type[BaseModel]) -> dict[str, Any]:
    """The schema's JSON Schema, built once (the SDK would build it again on every call)."""
    return schema.model_json_schema()


@lru_cache(maxsize=64)
def _schema_shape(schema: type[BaseModel]) -> str:
    return json.dumps(_schema_json(schema), sort_keys=True)


def _outcome(exc: LLMError) -> str:
    for kind, name in (
        (LLMUnavailable, "unavailable"),
        (LLMRefused, "refused"),
        (LLMBlocked, "blocked"),
        (LLMTruncated, "truncated"),
        (LLMSchemaError, "schema"),
    ):
        if isinstance(exc, kind):
            return name
    return "failed"


def _is_transport_failure(exc: Exception) -> bool:
    # Timeouts and dropped connections from whichever HTTP library the SDK uses (httpx,
    # httpx2, aiohttp): their transport errors share these names across versions.
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(
        names
        & {"TimeoutException", "TransportError", "ConnectError", "ConnectionError", "TimeoutError"}
    )


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def retry_hint(exc: Exception) -> float | None:
    """Seconds the server asked us to wait: the Retry-After header (seconds or an HTTP date)
    or google.rpc.RetryInfo's retryDelay in the error details; the longer of the two."""
    hints: list[float] = []
    headers = getattr(getattr(exc, "response", None), "headers", None)
    raw = headers.get("retry-after") if headers is not None else None
    if raw:
        raw = str(raw).strip()
        if raw.replace(".", "", 1).isdigit():
            hints.append(float(raw))
        else:
            try:
                when = email.utils.parsedate_to_datetime(raw)
            except (TypeError, ValueError):
                when = None
            if when is not None:
                hints.append(when.timestamp() - time.time())
    details = getattr(exc, "details", None)
    error = details.get("error", details) if isinstance(details, dict) else {}
    for item in error.get("details", []) if isinstance(error, dict) else []:
        if not isinstance(item, dict) or not str(item.get("@type", "")).endswith("RetryInfo"):
            continue
        delay = item.get("retryDelay")
        if isinstance(delay, str) and (match := _DURATION.match(delay)):
            hints.append(float(match.group(1)))
        elif isinstance(delay, dict):
            hints.append(float(delay.get("seconds", 0)) + float(delay.get("nanos", 0)) / 1e9)
    if not hints:
        return None
    return min(MAX_HINT_SECONDS, max(0.0, max(hints)))


def blocked_reason(response: Any) -> tuple[str, str] | None:
    """(reason, message) when the answer is a block, cut off at the output limit (MAX_TOKENS)
    or empty (NO_CANDIDATE, EMPTY); None for a usable answer."""
    feedback = getattr(response, "prompt_feedback", None)
    reason = getattr(feedback, "block_reason", None)
    if reason:
        name = getattr(reason, "value", str(reason))
        detail = getattr(feedback, "block_reason_message", None)
        return name, f"the prompt was blocked ({name}{': ' + detail if detail else ''})"
    candidates = getattr(response, "candidates", None) or []
    if not candidates:
        return "NO_CANDIDATE", "the model returned no answer (no candidate)"
    candidate = candidates[0]
    finish = getattr(candidate, "finish_reason", None)
    finish_name = getattr(finish, "value", str(finish)) if finish else ""
    if finish_name in BLOCKING_FINISH:
        flagged = [
            getattr(r.category, "value", str(r.category))
            for r in getattr(candidate, "safety_ratings", None) or []
            if getattr(r, "blocked", False)
        ]
        extra = f"; flagged: {', '.join(flagged)}" if flagged else ""
        return finish_name, f"the answer was blocked ({finish_name}{extra})"
    if finish_name == TRUNCATED:
        return TRUNCATED, "the answer reached the output limit (finish reason MAX_TOKENS)"
    content = getattr(candidate, "content", None)
    if not content or not getattr(content, "parts", None):
        return (
            "EMPTY",
            f"the model returned an empty answer (finish reason {finish_name or 'none'})",
        )
    return None


def _brief(exc: ValidationError) -> str:
    return "\n".join(f"- {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:10])
