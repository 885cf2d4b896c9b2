"""A rate limiter and circuit breaker for LLM calls, shared by every worker through Redis.

* Circuit: a 429 or 503 (with its Retry-After / RetryInfo delay), or a run of consecutive
  transient failures, pauses every caller until a moment in the future. While the circuit is
  open nobody calls: runs wait instead of hammering an API that has said it is overloaded.
* Rate limit: with ``requests_per_minute`` set, each call reserves the next free slot, so the
  workers together never exceed it.

``RedisThrottle`` shares this state across processes and machines (wall-clock time, so workers
on several machines agree); ``LocalThrottle`` keeps it in one process (inline mode, tests).
Pure: the Redis client is passed in.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

FAILURES_TO_OPEN = 5  # consecutive transient failures (without a server hint) that open it
OPEN_SECONDS_AFTER_FAILURES = 30.0


@dataclass(frozen=True)
class CircuitState:
    paused_until: float  # epoch seconds; 0 when closed
    reason: str

    def remaining(self, now: float | None = None) -> float:
        return max(0.0, self.paused_until - (time.time() if now is None else now))


class Throttle(Protocol):
    def state(self) -> CircuitState: ...

    def pause(self, seconds: float, reason: str) -> None: ...

    def reserve(self) -> float:
        """Reserve a request slot; returns the seconds to wait before using it."""
        ...

    def failure(self) -> None: ...

    def success(self) -> None: ...


class LocalThrottle:
    def __init__(self, *, requests_per_minute: int = 0) -> None:
        self.requests_per_minute = requests_per_minute
        self._lock = threading.Lock()
        self._paused_until = 0.0
        self._reason = ""
        self._next_slot = 0.0
        self._failures = 0

    def state(self) -> CircuitState:
        with self._lock:
            return CircuitState(self._paused_until, self._reason)

    def pause(self, seconds: float, reason: str) -> None:
        until = time.time() + seconds
        with self._lock:
            if until > self._paused_until:
                self._paused_until, self._reason = until, reason

    def reserve(self) -> float:
        if self.requests_per_minute <= 0:
            return 0.0
        interval = 60.0 / self.requests_per_minute
        now = time.time()
        with self._lock:
            slot = max(self._next_slot, now)
            self._next_slot = slot + interval
        return slot - now

    def failure(self) -> None:
        with self._lock:
            self._failures += 1
            count = self._failures
        if count >= FAILURES_TO_OPEN:
            self.pause(OPEN_SECONDS_AFTER_FAILURES, f"{count} transient failures in a row")

    def success(self) -> None:
        with self._lock:
            self._failures = 0


# KEYS[1] the slot key. ARGV: now, interval. Returns the reserved slot (epoch seconds).
_RESERVE = """
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local slot = tonumber(redis.call('GET', KEYS[1]) or '0')
if slot < now then slot = now end
redis.call('SET', KEYS[1], tostring(slot + interval), 'EX', 3600)
return tostring(slot)
"""
# KEYS[1] the pause key. ARGV: until, reason, ttl. Keeps the later of the two pauses.
_PAUSE = """
local current = redis.call('HGET', KEYS[1], 'until')
if current and tonumber(current) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'until', ARGV[1], 'reason', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""


class RedisThrottle:
    """The same throttle, its state in Redis: one circuit and one rate for all workers."""

    def __init__(
        self, redis: Any, *, requests_per_minute: int = 0, prefix: str = "vetted:llm"
    ) -> None:
        self.redis = redis
        self.requests_per_minute = requests_per_minute
        self.key_pause = f"{prefix}:pause"
        self.key_slot = f"{prefix}:slot"
        self.key_failures = f"{prefix}:failures"

    def state(self) -> CircuitState:
        data = self.redis.hgetall(self.key_pause) or {}
        until = float(data.get(b"until", 0) or 0)
        return CircuitState(until, (data.get(b"reason") or b"").decode())

    def pause(self, seconds: float, reason: str) -> None:
        until = time.time() + seconds
        self.redis.eval(_PAUSE, 1, self.key_pause, repr(until), reason, int(seconds) + 60)

    def reserve(self) -> float:
        if self.requests_per_minute <= 0:
            return 0.0
        now = time.time()
        slot = float(
            self.redis.eval(
                _RESERVE, 1, self.key_slot, repr(now), repr(60.0 / self.requests_per_minute)
            )
        )
        return max(0.0, slot - now)

    def failure(self) -> None:
        count = int(self.redis.incr(self.key_failures))
        self.redis.expire(self.key_failures, 300)
        if count >= FAILURES_TO_OPEN:
            self.pause(OPEN_SECONDS_AFTER_FAILURES, f"{count} transient failures in a row")

    def success(self) -> None:
        self.redis.delete(self.key_failures)
