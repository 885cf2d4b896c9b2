"""The Gemini stub server for tests (it lives with the benchmark tooling, which uses it too)."""

from benchmarks.gemini_stub import (
    GeminiStub,
    Reply,
    candidate,
    error,
    error_reply,
    prompt_pages,
)

__all__ = ["GeminiStub", "Reply", "candidate", "error", "error_reply", "prompt_pages"]
