"""The OpenAI-compatible stub server for tests (it lives with the benchmark tooling, beside the
Gemini stub)."""

from benchmarks.gemini_stub import prompt_pages
from benchmarks.openai_stub import OpenAIStub, Reply, completion, error_reply

__all__ = ["OpenAIStub", "Reply", "completion", "error_reply", "prompt_pages"]
