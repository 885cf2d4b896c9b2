"""A fixed-window request counter in Django's cache: at most ``limit`` hits per key in each
``window`` seconds. With Redis (REDIS_URL) the cache, and so the count, is shared by every web
process; without it each process counts alone (the embedded, one-process default).

Used for the API (per token) and SCIM (per provider token): a client over its budget gets a
429 with the seconds until its window ends. A fixed window lets a burst of up to twice the
limit straddle a boundary; that is enough to stop a runaway script or a stolen token's
flood, which is the point, and it costs one cache round trip per request.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from django.core.cache import cache

from core.errors import Refused

RATE_LIMITED = "rate_limited"  # Refused.code


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    count: int  # hits in this window, this one included
    retry_after: int  # seconds until the window ends


def rate_hit(*, scope: str, key: str, limit: int, window: int, now: float | None = None) -> Verdict:
    """Count one hit of ``key`` in ``scope``; allowed while the window's count is within
    ``limit``. The key is hashed: a token never appears in the cache's keys."""
    now = time.time() if now is None else now
    slot = int(now // window)
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    name = f"ratelimit:{scope}:{digest}:{slot}"
    # add() creates the counter only if absent (atomic in Redis and in locmem); incr() then
    # counts atomically, so concurrent requests never lose a hit.
    cache.add(name, 0, timeout=window + 1)
    try:
        count = cache.incr(name)
    except ValueError:  # expired between add and incr: this hit starts the window
        cache.add(name, 1, timeout=window + 1)
        count = 1
    retry_after = max(1, int((slot + 1) * window - now + 0.999))
    return Verdict(allowed=count <= limit, count=count, retry_after=retry_after)


def rate_check(*, scope: str, key: str, limit: int, window: int, what: str) -> None:
    """``rate_hit``, raising Refused (429, code ``rate_limited``, ``retry_after`` seconds)
    when over the limit; ``limit`` 0 turns the check off."""
    if limit <= 0:
        return
    verdict = rate_hit(scope=scope, key=key, limit=limit, window=window)
    if not verdict.allowed:
        raise Refused(
            f"Too many requests for {what}: at most {limit} every {window} seconds. "
            f"Try again in {verdict.retry_after} s.",
            status=429,
            code=RATE_LIMITED,
            extra={"retry_after": verdict.retry_after},
        )
