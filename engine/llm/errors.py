"""Errors of the LLM layer: a call that failed for good, after its own retries.

Which kind decides what happens to a run: ``LLMUnavailable`` (429, 5xx, timeouts, dropped
connections, an open circuit, the run's time budget spent) is transient, so the run waits and
resumes by itself; ``LLMRefused`` (400, 401, 403, 404) and ``LLMBlocked`` (a safety block, an
empty answer) are permanent for this request, so retrying cannot help; ``LLMSchemaError`` is an
answer that still did not fit the schema after one re-ask.
"""

from __future__ import annotations


class LLMError(Exception):
    """An LLM call failed for good (after its retries)."""


class LLMTransportError(LLMError):
    """The request did not get an answer."""


class LLMRefused(LLMTransportError):
    """The API refused the request (400, 401, 403, 404): permanent, never retried."""

    def __init__(self, message: str, *, code: int) -> None:
        super().__init__(message)
        self.code = code


class LLMUnavailable(LLMTransportError):
    """Transient: the API is overloaded, rate limited, slow or unreachable. ``retry_at`` (epoch
    seconds) is the earliest moment worth trying again; ``hinted`` says whether that moment is
    known (the server's Retry-After, an open circuit, a rate-limit slot) or only a guess."""

    def __init__(self, message: str, *, retry_at: float, hinted: bool = False) -> None:
        super().__init__(message)
        self.retry_at = retry_at
        self.hinted = hinted


class LLMBlocked(LLMError):
    """The model answered with a block (safety, prohibited content, ...) or no candidate at all.
    Re-asking the same content gives the same block, so it is reported, not re-asked."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class LLMSchemaError(LLMError):
    pass
