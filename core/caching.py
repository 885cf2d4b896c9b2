"""Derived figures kept in Django's cache (Redis when REDIS_URL is set, else in-process).

The cache is an optimisation only: when it cannot be read or written the figure is computed
and the page still answers."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache import cache

logger = logging.getLogger(__name__)
T = TypeVar("T")
_MISSING = object()


def cache_get(key: str, default: Any = None) -> Any:
    try:
        return cache.get(key, default)
    except Exception:
        logger.warning("cache: %s could not be read", key, exc_info=True)
        return default


def cache_set(key: str, value: Any, *, timeout: float | None) -> None:
    try:
        cache.set(key, value, timeout=timeout)
    except Exception:
        logger.warning("cache: %s could not be written", key, exc_info=True)


def cached(key: str, compute: Callable[[], T], *, timeout: float) -> T:
    """``compute()`` kept under ``key`` for ``timeout`` seconds (0: computed every time)."""
    if timeout <= 0:
        return compute()
    value = cache_get(key, _MISSING)
    if value is not _MISSING:
        return value  # type: ignore[no-any-return]
    value = compute()
    cache_set(key, value, timeout=timeout)
    return value
