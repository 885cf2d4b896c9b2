"""LLM_DEIDENTIFY=1 through the real google-genai client and the local stub server, on the
document of every leak a privacy review found (tests/deid_leaks.py): no request the model
receives holds any of them."""

from __future__ import annotations

import json

import pytest

from benchmarks.gemini_stub import Reply, candidate, prompt_text
from benchmarks.llm_answers import answer_json, classification
from engine.fields.library import load_packs
from reliability import services
from tests.conftest import ready_document
from tests.deid_leaks import KEPT, LEAKS, PAGES
from tests.reliability.gemini_stub import GeminiStub, prompt_pages

pytestmark = pytest.mark.django_db(transaction=True)

TEMPLATES = load_packs(("clinical",))["clinical"].templates


def answer(path: str, body: dict) -> Reply:
    schema = body["generationConfig"].get("responseSchema") or {}
    if schema.get("title") == "ExtractedFields":
        return Reply(200, candidate(json.dumps({name: {} for name in schema["properties"]})))
    pages = prompt_pages(prompt_text(body))
    return Reply(
        200, candidate(answer_json(classification(pages, "clinical_note"), pages, TEMPLATES))
    )


def test_the_model_receives_none_of_the_listed_leaks(settings):
    with GeminiStub(responder=answer) as stub:
        settings.GEMINI_API_KEY = "test-key"
        settings.GEMINI_BASE_URL = stub.url
        settings.LLM_BACKOFF_BASE_SECONDS = 0.01
        settings.LLM_MAX_TRANSPORT_RETRIES = 2
        settings.LLM_DEIDENTIFY = True
        services.run_start(document=ready_document(*PAGES, sha="k"))
    assert stub.requests, "the run asked the model"
    sent = "\n".join(json.dumps(body, ensure_ascii=False) for body in stub.requests)
    leaked = [value for value in LEAKS if value in sent]
    assert not leaked
    assert any(value in sent for value in KEPT)
