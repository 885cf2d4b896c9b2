from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.reliability.gemini_stub import GeminiStub


@pytest.fixture
def stub(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The stub server of the test module's PROVIDER (tests/reliability/llm_providers.py)."""
    with request.module.PROVIDER.stub_class() as server:
        yield server


@pytest.fixture
def gemini(settings: Any) -> Iterator[GeminiStub]:
    """A Gemini stub that runs call: the settings aimed at it, transport retries quick."""
    with GeminiStub() as server:
        settings.GEMINI_API_KEY = "test-key"
        settings.GEMINI_BASE_URL = server.url
        settings.LLM_BACKOFF_BASE_SECONDS = 0.01
        settings.LLM_MAX_TRANSPORT_RETRIES = 2
        yield server
