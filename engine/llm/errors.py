"""Errors of the LLM layer: a call that failed for good, after its own retries.

Which kind decides what happens to a run: ``LLMUnavailable`` (429, 5xx, timeouts, dropped
connections, an open circuit, the run's time budget spent) is transient, so the run waits and
resumes by itself; ``LLMRefused`` (400, 401, 403, 404) is permanent for this request, so
retrying cannot help. The model answered, but gave nothing usable (``LLMNoAnswer``): a block
(``LLMBlocked``: a safety block, a blocked prompt, an answer still empty after one more try),
an answer cut off at the output limit twice (``LLMTruncated``) or one that still did not fit
the schema after one re-ask (``LLMSchemaError``). A run whose model gives no usable answer goes
to a clinician with the reason (engine.pipeline), never into a failed run.
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


class LLMNoAnswer(LLMError):
    """The model answered without a usable answer. ``reason`` is the machine's name for why
    (a finish or block reason such as SAFETY or MAX_TOKENS, EMPTY, NO_CANDIDATE, SCHEMA)."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class LLMBlocked(LLMNoAnswer):
    """The model answered with a block (safety, prohibited content, a blocked prompt), or gave
    no answer twice. Re-asking the same content gives the same block, so a block is reported,
    not re-asked; an empty answer is asked once more first."""


class LLMTruncated(LLMNoAnswer):
    """The answer was cut off at the output limit (finish reason MAX_TOKENS), again after one
    more try with twice the limit."""

    def __init__(self, message: str, *, max_output_tokens: int) -> None:
        super().__init__(message, reason="MAX_TOKENS")
        self.max_output_tokens = max_output_tokens


class LLMSchemaError(LLMNoAnswer):
    """The answer still did not fit the schema after one re-ask with the validation error."""

    def __init__(self, message: str, *, reason: str = "SCHEMA") -> None:
        super().__init__(message, reason=reason)
