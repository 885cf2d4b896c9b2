"""Errors of the LLM layer: a call that failed for good, after its own retries."""

from __future__ import annotations


class LLMError(Exception):
    """An LLM call failed for good (after its retries)."""


class LLMTransportError(LLMError):
    pass


class LLMSchemaError(LLMError):
    pass
