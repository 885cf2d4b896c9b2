"""What the Gemini and the OpenAI-compatible clients share, tested once over both: each through
its real SDK (google-genai, openai) aimed at a local stub server (benchmarks/gemini_stub.py,
openai_stub.py). Transport retries (backoff, Retry-After, the shared circuit, timeouts and the
run's deadline), permanent errors, an empty answer, a cut-off answer, schema re-asks and the
response cache. What only one provider has (its request body, blocks, thinking or reasoning
tokens, delimiting) stays in test_gemini.py and test_openai.py."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from engine import llm
from engine.classifiers.gemini import GeminiClassifier
from engine.llm.client import OUTPUT_TOKENS
from engine.llm.throttle import LocalThrottle, RedisThrottle
from tests.reliability.llm_providers import GEMINI, OPENAI, PROVIDERS, Provider, client_for


@pytest.fixture(params=PROVIDERS, ids=[p.name for p in PROVIDERS])
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def stub(provider: Provider) -> Iterator[Any]:
    with provider.stub_class() as server:
        yield server


@pytest.fixture
def make_client(provider: Provider, stub: Any) -> Callable[..., Any]:
    return functools.partial(client_for, provider, stub)


def test_a_429_then_a_5xx_are_retried_with_backoff_then_succeed(
    provider, stub, make_client, clean, pages
):
    stub.fail(429)
    stub.fail(provider.server_error)
    stub.reply(clean.model_dump_json())
    client = make_client()
    assert GeminiClassifier(client).classify(pages) == clean
    assert len(stub.requests) == 3
    assert len(client.delays) == 2
    assert 0.25 <= client.delays[0] <= 0.5 and 0.5 <= client.delays[1] <= 1.0  # jittered
    assert client.calls[0].tries == 3 and client.calls[0].ok


@pytest.mark.parametrize("status", [500, 503])
def test_persistent_5xx_is_transient_bounded_and_says_when_to_come_back(
    stub, make_client, pages, status
):
    stub.fail(status, times=10)
    client = make_client()
    before = time.time()
    with pytest.raises(
        llm.LLMUnavailable, match=rf"HTTP {status} after 4 attempt\(s\); tries exhausted"
    ) as caught:
        GeminiClassifier(client).classify(pages)
    assert caught.value.retry_at >= before and not caught.value.hinted
    assert len(stub.requests) == 4  # 1 + 3 retries: the SDKs' own retries are off
    record = client.calls[-1]
    assert (record.tries, record.outcome, record.ok) == (4, "unavailable", False)


@pytest.mark.parametrize(
    ("status", "meaning"),
    [
        (400, "the request was rejected as invalid"),
        (401, "the API key or credentials were not accepted"),
        (403, "the API key or project is not allowed to use this model"),
        (404, "the model or endpoint was not found"),
    ],
)
def test_permanent_errors_fail_at_once_with_the_servers_message(
    stub, make_client, pages, status, meaning
):
    stub.fail(status, times=3, message="upstream says no")
    client = make_client()
    with pytest.raises(llm.LLMRefused) as caught:
        GeminiClassifier(client).classify(pages)
    assert str(caught.value) == f"HTTP {status} after 1 attempt(s): {meaning} (upstream says no)"
    assert isinstance(caught.value, llm.LLMTransportError)  # a client error is not retried
    assert caught.value.code == status
    assert len(stub.requests) == 1 and client.delays == []
    assert client.calls[0].outcome == "refused"


def test_retry_after_is_honoured(stub, make_client, clean, pages):
    stub.fail(429, retry_after=7)
    stub.reply(clean.model_dump_json())
    client = make_client(max_inline_wait_seconds=20)
    assert GeminiClassifier(client).classify(pages) == clean
    assert client.delays and client.delays[0] >= 7  # not the 0.25-0.5 s backoff


def test_a_long_retry_after_frees_the_worker_and_opens_the_shared_circuit(
    provider, stub, make_client, pages
):
    stub.fail(429, retry_after=60, **provider.long_hint)
    throttle = LocalThrottle()
    first = make_client(throttle=throttle, max_inline_wait_seconds=20)
    before = time.time()
    with pytest.raises(llm.LLMUnavailable) as caught:
        GeminiClassifier(first).classify(pages)
    assert caught.value.hinted and caught.value.retry_at >= before + 59
    assert first.delays == [] and len(stub.requests) == 1

    other = make_client(throttle=throttle)  # another run, same workers' circuit
    with pytest.raises(llm.LLMUnavailable, match="asked to wait"):
        GeminiClassifier(other).classify(pages)
    assert len(stub.requests) == 1  # nobody called while the circuit was open
    assert other.calls[0].tries == 0


def test_the_circuit_is_shared_by_workers_through_redis(
    provider, stub, make_client, pages, redis_url
):
    from redis import Redis

    status, name = provider.circuit
    stub.fail(status, retry_after=30)
    worker_a = make_client(throttle=RedisThrottle(Redis.from_url(redis_url)))
    with pytest.raises(llm.LLMUnavailable):
        GeminiClassifier(worker_a).classify(pages)
    worker_b = make_client(throttle=RedisThrottle(Redis.from_url(redis_url)))
    with pytest.raises(llm.LLMUnavailable, match=rf"asked to wait \(HTTP {status} {name}\)"):
        GeminiClassifier(worker_b).classify(pages)
    assert len(stub.requests) == 1


def test_a_hung_call_times_out_and_is_retried_within_bounds(stub, make_client, clean, pages):
    stub.hang(5)
    stub.reply(clean.model_dump_json())
    client = make_client(timeout_seconds=1, backoff_base_seconds=0.01)
    started = time.monotonic()
    assert GeminiClassifier(client).classify(pages) == clean
    assert time.monotonic() - started < 4
    assert client.calls[0].tries == 2


def test_no_try_outlives_the_runs_deadline(provider, stub, make_client, pages):
    stub.hang(30)
    client = make_client(timeout_seconds=60, deadline=time.monotonic() + 6)
    started = time.monotonic()
    with pytest.raises(
        llm.LLMUnavailable, match=rf"{provider.timeout_error} after 1 attempt.*no time left"
    ):
        GeminiClassifier(client).classify(pages)
    assert time.monotonic() - started < 8  # the 60 s timeout was cut to the deadline
    assert client.calls[0].tries == 1


def test_an_empty_answer_is_asked_once_more(stub, make_client, clean, pages):
    stub.empty()
    stub.reply(clean.model_dump_json())
    client = make_client()
    assert GeminiClassifier(client).classify(pages) == clean
    assert len(stub.requests) == 2 and stub.prompt(1) == stub.prompt(0)
    call = client.calls[0]
    assert (call.outcome, call.tries, call.retried) == ("ok", 2, 1)


def test_an_answer_empty_twice_is_a_block_that_says_so(provider, stub, make_client, pages):
    method, reason, message = provider.empty_twice
    getattr(stub, method)()
    getattr(stub, method)()
    stub.reply("{}")  # a third request must not be made
    with pytest.raises(llm.LLMBlocked) as caught:
        GeminiClassifier(make_client()).classify(pages)
    assert str(caught.value) == f"the language model blocked the request: {message}, twice"
    assert caught.value.reason == reason and len(stub.requests) == 2


def test_a_truncated_answer_is_asked_again_with_twice_the_limit(
    provider, stub, make_client, clean, pages
):
    stub.truncated()
    stub.reply(clean.model_dump_json())
    client = make_client(thinking_budget=0)
    assert GeminiClassifier(client).classify(pages) == clean
    limits = [provider.output_limit(r) for r in stub.requests]
    assert limits == [OUTPUT_TOKENS, 2 * OUTPUT_TOKENS]
    assert "YOUR PREVIOUS RESPONSE WAS INVALID" not in stub.prompt(1)  # not a schema re-ask


def test_a_schema_invalid_response_is_re_asked_once_with_the_error(stub, make_client, clean, pages):
    stub.reply(json.dumps({"dominant_type_overall": "pathology"}))
    stub.reply(clean.model_dump_json())
    client = make_client()
    assert GeminiClassifier(client).classify(pages) == clean
    assert "--- YOUR PREVIOUS RESPONSE WAS INVALID ---" in stub.prompt(1)
    assert "segments" in stub.prompt(1)
    assert client.calls[0].reasked


def test_a_second_invalid_response_is_a_schema_failure(stub, make_client, pages):
    stub.reply("not json")
    stub.reply("{}")
    with pytest.raises(llm.LLMSchemaError, match="after one re-ask"):
        GeminiClassifier(make_client()).classify(pages)
    assert len(stub.requests) == 2


class MemoryCache:
    def __init__(self) -> None:
        self.entries: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        return self.entries.get(key)

    def put(self, key: str, *, value: Any, operation: str, model: str, prompt_version: str) -> None:
        self.entries[key] = value


def test_the_same_text_asked_the_same_way_is_answered_from_the_cache(
    provider, stub, make_client, clean, pages
):
    stub.reply(clean.model_dump_json())
    cache = MemoryCache()
    assert GeminiClassifier(make_client(cache=cache)).classify(pages) == clean
    second = make_client(cache=cache)
    assert GeminiClassifier(second).classify(pages) == clean
    assert len(stub.requests) == 1
    assert second.usage()["calls"] == 0 and second.usage()["cache_hits"] == 1
    stub.reply(clean.model_dump_json())
    GeminiClassifier(make_client(cache=cache, model=provider.other_model)).classify(pages)
    assert len(stub.requests) == 2  # another model is another key


@pytest.mark.parametrize(
    ("provider", "script", "reason", "message"),
    [
        (
            GEMINI,
            lambda s: s.block("SAFETY", where="prompt"),
            "SAFETY",
            "the prompt was blocked (SAFETY)",
        ),
        (
            GEMINI,
            lambda s: s.block("PROHIBITED_CONTENT"),
            "PROHIBITED_CONTENT",
            "the answer was blocked (PROHIBITED_CONTENT; flagged: HARM_CATEGORY_DANGEROUS_CONTENT)",
        ),
        (
            OPENAI,
            lambda s: s.content_filter(),
            "CONTENT_FILTER",
            "the answer was blocked (finish reason content_filter)",
        ),
        (
            OPENAI,
            lambda s: s.refusal("I can't help with that."),
            "REFUSAL",
            "the model refused to answer (I can't help with that.)",
        ),
    ],
    indirect=["provider"],
    ids=["gemini-prompt", "gemini-answer", "openai-filter", "openai-refusal"],
)
def test_blocks_and_refusals_are_reported_as_blocks_not_re_asked(
    stub, make_client, pages, script, reason, message
):
    script(stub)
    stub.reply("{}")  # would be the re-ask: must not be asked for
    client = make_client()
    with pytest.raises(llm.LLMBlocked) as caught:
        GeminiClassifier(client).classify(pages)
    assert str(caught.value) == f"the language model blocked the request: {message}"
    assert caught.value.reason == reason and len(stub.requests) == 1
    assert (client.calls[0].outcome, client.calls[0].reasked) == ("blocked", False)
