"""The circuit and the rate limit, in one process and shared through a real Redis."""

from __future__ import annotations

import time

import pytest
from redis import Redis

from engine.llm.throttle import FAILURES_TO_OPEN, LocalThrottle, RedisThrottle


@pytest.fixture(params=["local", "redis"])
def make(request, redis_url):
    def build(**options):
        if request.param == "local":
            return LocalThrottle(**options)
        return RedisThrottle(Redis.from_url(redis_url), **options)

    return build


def test_a_pause_keeps_the_later_moment_and_says_why(make):
    throttle = make()
    assert throttle.state().remaining() == 0
    throttle.pause(30, "HTTP 429")
    throttle.pause(5, "HTTP 503")  # shorter: does not shorten the pause
    state = throttle.state()
    assert 28 < state.remaining() <= 30 and state.reason == "HTTP 429"


def test_consecutive_failures_open_the_circuit_and_a_success_resets_them(make):
    throttle = make()
    for _ in range(FAILURES_TO_OPEN - 1):
        throttle.failure()
    throttle.success()
    throttle.failure()
    assert throttle.state().remaining() == 0
    for _ in range(FAILURES_TO_OPEN):
        throttle.failure()
    assert throttle.state().remaining() > 25


def test_the_rate_limit_hands_out_evenly_spaced_slots(make):
    free = make()
    assert [free.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    limited = make(requests_per_minute=120)
    waits = [limited.reserve() for _ in range(3)]
    assert waits[0] < 0.05 and 0.4 < waits[1] <= 0.5 and 0.9 < waits[2] <= 1.0


def test_workers_share_one_circuit_through_redis(redis_url):
    RedisThrottle(Redis.from_url(redis_url)).pause(60, "HTTP 429 RESOURCE_EXHAUSTED")
    other = RedisThrottle(Redis.from_url(redis_url))
    assert other.state().reason == "HTTP 429 RESOURCE_EXHAUSTED"
    assert other.state().paused_until > time.time() + 55
