"""The Gemini path through the real google-genai client, aimed at a local stub server."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from engine import llm
from engine.classifiers.gemini import GeminiClassifier
from reliability import services
from reliability.models import Run
from review.models import GroundTruth, ReviewPacket
from tests.conftest import pathology_field_names, ready_document
from tests.reliability.gemini_stub import GeminiStub


@pytest.fixture
def stub():
    with GeminiStub() as server:
        yield server


def make_client(stub, **options):
    delays = []
    client = llm.GeminiClient(
        model="gemini-2.5-flash",
        api_key="test-key",
        base_url=stub.url,
        timeout_seconds=10,
        max_transport_retries=3,
        backoff_base_seconds=0.5,
        sleep=delays.append,
        **options,
    )
    client.delays = delays
    return client


def test_structured_output_is_parsed_into_the_schema(stub, clean, pages):
    stub.reply(clean.model_dump_json())
    client = make_client(stub)
    output = GeminiClassifier(client).classify(pages)

    assert output == clean
    request = stub.requests[0]
    assert stub.paths[0].endswith("/models/gemini-2.5-flash:generateContent")
    assert request["generationConfig"]["responseMimeType"] == "application/json"
    assert "responseSchema" in request["generationConfig"]
    assert "=== PAGE 2 ===" in stub.prompt(0)
    assert "Confidence rubric" in json.dumps(request["systemInstruction"])
    usage = client.usage()
    assert (usage["calls"], usage["tokens_in"], usage["tokens_out"]) == (1, 120, 80)


def test_a_429_is_retried_with_backoff_then_succeeds(stub, clean, pages):
    stub.fail(429)
    stub.fail(503)
    stub.reply(clean.model_dump_json())
    client = make_client(stub)
    assert GeminiClassifier(client).classify(pages) == clean
    assert len(stub.requests) == 3
    assert len(client.delays) == 2
    assert 0.25 <= client.delays[0] <= 0.5 and 0.5 <= client.delays[1] <= 1.0  # jittered
    assert client.calls[0].tries == 3 and client.calls[0].ok


def test_persistent_5xx_gives_up_after_the_bounded_retries(stub, pages):
    stub.fail(500, times=10)
    client = make_client(stub)
    with pytest.raises(llm.LLMTransportError, match="HTTP 500 after 4 attempt"):
        GeminiClassifier(client).classify(pages)
    assert len(stub.requests) == 4  # 1 + 3 retries
    assert client.calls[-1].ok is False


def test_a_client_error_is_not_retried(stub, pages):
    stub.script.append((400, {"error": {"code": 400, "message": "bad", "status": "INVALID"}}))
    with pytest.raises(llm.LLMTransportError, match="HTTP 400 after 1 attempt"):
        GeminiClassifier(make_client(stub)).classify(pages)


def test_a_schema_invalid_response_is_re_asked_once_with_the_error(stub, clean, pages):
    stub.reply(json.dumps({"dominant_type_overall": "pathology"}))
    stub.reply(clean.model_dump_json())
    client = make_client(stub)
    assert GeminiClassifier(client).classify(pages) == clean
    assert "--- YOUR PREVIOUS RESPONSE WAS INVALID ---" in stub.prompt(1)
    assert "segments" in stub.prompt(1)
    assert client.calls[0].reasked


def test_a_second_invalid_response_is_a_schema_failure(stub, pages):
    stub.reply("not json")
    stub.reply("{}")
    with pytest.raises(llm.LLMSchemaError, match="after one re-ask"):
        GeminiClassifier(make_client(stub)).classify(pages)
    assert len(stub.requests) == 2


def test_evaluation_operations_carry_value_confidence_and_error(stub):
    stub.reply(json.dumps({"value": True, "confidence": 0.92, "reasoning": "says so"}))
    stub.reply(json.dumps({"value": None, "confidence": 0.2, "reasoning": "absent"}))
    client = make_client(stub, max_concurrency=1)
    first = client.filter(question="Is this a pathology report?", text="FINAL DIAGNOSIS")
    assert (first.value, first.confidence, first.error) == (True, 0.92, None)
    missing = client.extract(question="Tumour grade?", text="no grade", kind="number")
    assert missing.value is None and missing.error is None  # not present in the source
    stub.fail(500, times=4)
    failed = client.filter(question="?", text="x")
    assert failed.value is None and failed.error


def test_batches_keep_input_order(stub):
    for value in (True, False, True):
        stub.reply(json.dumps({"value": value, "confidence": 0.9}))
    client = make_client(stub, max_concurrency=1)
    results = client.filter_batch([{"question": f"q{i}", "text": "t"} for i in range(3)])
    assert [r.value for r in results] == [True, False, True]


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_llm_keeps_failing_is_recorded_as_failed(stub, settings, pages):
    settings.GEMINI_API_KEY = "test-key"
    settings.GEMINI_BASE_URL = stub.url
    settings.LLM_BACKOFF_BASE_SECONDS = 0.01
    settings.LLM_MAX_TRANSPORT_RETRIES = 2
    stub.fail(503, times=10)
    document = ready_document(*pages, sha="a")

    run = services.run_start(document=document)  # inline: executes after commit
    run.refresh_from_db()

    assert run.classifier == "gemini"
    assert run.status == Run.Status.FAILED
    assert run.final_decision == ""
    assert run.error.startswith("The language model call failed: HTTP 503 after 3 attempt")
    assert run.llm_calls == 1 and run.llm_log[0]["ok"] is False
    assert not GroundTruth.objects.exists() and not ReviewPacket.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_gemini_run_is_compared_with_the_offline_classifier(
    stub, settings, clean, pages, reviewer_client
):
    settings.GEMINI_API_KEY = "test-key"
    settings.GEMINI_BASE_URL = stub.url
    clean.segments[0].assessment("pathology").confidence = 0.5  # low: escalates
    stub.reply(clean.model_dump_json())
    stub.reply(json.dumps({"value": True, "confidence": 0.9}))  # V2 LLM check
    stub.reply(json.dumps({"value": False, "confidence": 0.9}))  # V3 LLM check
    stub.reply(clean.model_dump_json())  # the re-ask
    stub.reply(json.dumps({"value": True, "confidence": 0.9}))
    stub.reply(json.dumps({"value": False, "confidence": 0.9}))
    fields = pathology_field_names()
    stub.reply(json.dumps({name: {"status": "not_present"} for name in fields}))
    document = ready_document(*pages, sha="b", options={"enable_reliability_loop": False})

    run = services.run_start(document=document)
    run.refresh_from_db()

    assert run.final_decision == "ESCALATE_TO_SME"
    assert run.llm_calls == 7 and run.tokens_in == 840  # the extraction's call is counted
    assert [c["operation"] for c in run.llm_log][-1] == "extract_fields"
    assert run.attempts.count() == 2
    assert run.attempts.get(number=1).feedback.startswith("--- FEEDBACK FROM PREVIOUS")
    packet = ReviewPacket.objects.get(run=run)
    assert packet.comparison["available"] and packet.comparison["classifier"] == "offline"
    assert packet.comparison_agrees is (packet.comparison["dominant_type"] == "pathology")
    page = reviewer_client.get(reverse("reliability:run", args=[run.pk]))
    assert page.status_code == 200
    assert "classify" in page.content.decode() and "low_confidence" in page.content.decode()
