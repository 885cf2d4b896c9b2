"""Runs with LLM_PROVIDER=openai, through the real openai client and a local stub server that
speaks the Chat Completions API: a clean answer accepted in one call (recorded as the openai
provider's model, with the same prompt version as Gemini's), the response cache, an obeyed
injection and a filtered answer escalated to a clinician, a rate limit that makes the run wait,
and a local model priced at zero under a daily budget, and the /evaluate/ endpoint."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from benchmarks.llm_answers import answer_json, classification
from reliability import services
from reliability.models import Extraction, LLMResponse, Run
from reliability.services import api_token_create
from review.models import GroundTruth, ReviewPacket
from review.roles import REVIEWERS, ensure_roles
from tests.conftest import ready_document
from tests.reliability.gemini_stub import GeminiStub
from tests.reliability.llm_providers import INJECTION, PT_NOTE, TEMPLATES, clean_answer
from tests.reliability.openai_stub import OpenAIStub

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = "llama-3.1-8b-instruct"
INJECTED_NOTE = PT_NOTE + INJECTION  # a note that asks to be classified as pathology


@pytest.fixture
def local_model(settings):
    with OpenAIStub() as stub:
        settings.LLM_PROVIDER = "openai"
        settings.OPENAI_MODEL = MODEL
        settings.OPENAI_BASE_URL = stub.base_url
        settings.OPENAI_API_KEY = ""
        settings.GEMINI_API_KEY = ""  # nothing goes to Gemini
        settings.LLM_PRICES = {**settings.LLM_PRICES, MODEL: {"input": 0.0, "output": 0.0}}
        settings.LLM_BACKOFF_BASE_SECONDS = 0.01
        settings.LLM_MAX_TRANSPORT_RETRIES = 2
        yield stub


def test_a_clean_answer_is_accepted_in_one_call_and_recorded_as_the_local_model(
    local_model, pages, admin_user, client
):
    local_model.reply(clean_answer(pages), tokens_in=3000, tokens_out=900, reasoning=400)
    run = services.run_start(document=ready_document(*pages, sha="a"))
    run.refresh_from_db()

    assert (run.status, run.final_decision) == ("completed", "AUTO_ACCEPT")
    assert (run.classifier, run.model) == ("openai", MODEL)
    assert run.config["llm_provider"] == "openai" and run.config["llm_model"] == MODEL
    assert (run.llm_calls, run.llm_requests) == (1, 1)
    assert (run.tokens_in, run.tokens_out, run.tokens_thinking) == (3000, 900, 400)
    assert run.cost_usd == Decimal(0)  # priced at zero: the hospital's own server
    request = local_model.requests[0]
    assert request["model"] == MODEL and request["response_format"]["type"] == "json_schema"
    assert "Fill segment_fields" in local_model.prompt(0)
    assert run.prompt_version.startswith("classify-")
    assert run.llm_log[0]["prompt_version"] == run.prompt_version
    extraction = Extraction.objects.get(run=run)
    assert (extraction.status, extraction.extractor) == ("completed", "openai")
    assert GroundTruth.objects.get(run=run).source == "AUTO_ACCEPTED"

    client.force_login(admin_user)
    page = client.get(reverse("reliability:run", args=[run.pk])).content.decode()
    assert "OpenAI-compatible" in page and MODEL in page


def test_the_prompt_and_its_version_are_geminis(local_model, settings, pages):
    """Switching provider changes neither the delimited document text nor the prompt version:
    the regression gate and the audit trail compare like with like."""
    local_model.reply(clean_answer(pages))
    document = ready_document(*pages, sha="p")
    local = services.run_start(document=document)
    with GeminiStub() as gemini:
        settings.LLM_PROVIDER = "gemini"
        settings.GEMINI_API_KEY = "test-key"
        settings.GEMINI_BASE_URL = gemini.url
        gemini.reply(clean_answer(pages))
        remote = services.run_start(document=document)
        assert gemini.prompt(0) == local_model.prompt(0)
        assert gemini.system(0) == local_model.system(0)
    local.refresh_from_db()
    remote.refresh_from_db()
    assert (local.classifier, remote.classifier) == ("openai", "gemini")
    assert remote.model == "gemini-2.5-flash" and "gemini_model" in remote.config
    assert local.prompt_version == remote.prompt_version
    assert remote.llm_calls == 1  # another provider is another cache key


def test_a_rerun_of_unchanged_text_is_answered_from_the_cache(local_model, pages):
    local_model.reply(clean_answer(pages))
    first = services.run_start(document=ready_document(*pages, sha="a"))
    again = services.run_start(document=first.document)
    again.refresh_from_db()
    assert again.final_decision == "AUTO_ACCEPT"
    assert len(local_model.requests) == 1 and LLMResponse.objects.get().model == MODEL
    assert (again.llm_calls, again.llm_cache_hits) == (0, 1)


def test_an_obeyed_injection_is_escalated_to_a_clinician(local_model):
    pages = [INJECTED_NOTE]
    obeyed = classification(pages, "pathology")
    obeyed.segments[0].assessment("pathology").confidence = 1.0
    local_model.reply(answer_json(obeyed, pages, TEMPLATES))
    run = services.run_start(document=ready_document(*pages, sha="i"))
    run.refresh_from_db()

    assert run.final_decision == "ESCALATE_TO_SME" and run.classifier == "openai"
    packet = ReviewPacket.objects.get(run=run)
    codes = {(i["agent"], i["code"]) for i in packet.issues}
    assert ("GATE", "independent_disagreement") in codes
    assert not GroundTruth.objects.filter(document=run.document).exists()


@pytest.mark.parametrize(
    ("script", "requests", "reason"),
    [
        (lambda s: s.content_filter(), 1, "finish reason content_filter"),
        (lambda s: s.refusal(), 1, "the model refused to answer"),
        (lambda s: s.truncated().truncated(), 2, "cut off"),
        (lambda s: s.fail(400, message="context length exceeded"), 1, "HTTP 400"),
    ],
)
def test_a_model_without_a_usable_answer_sends_the_document_to_a_clinician(
    local_model, pages, script, requests, reason
):
    script(local_model)
    run = services.run_start(document=ready_document(*pages, sha="b"))
    run.refresh_from_db()

    assert (run.status, run.final_decision) == ("completed", "ESCALATE_TO_SME")
    assert run.llm_requests == requests
    issue = run.attempts.get().issues.get(code="model_no_answer")
    assert issue.severity == "BLOCKER" and reason in issue.message


def test_a_rate_limited_server_makes_the_run_wait_until_its_retry_after(local_model, pages):
    local_model.fail(429, retry_after=120)
    before = timezone.now()
    run = services.run_start(document=ready_document(*pages, sha="w"))
    run.refresh_from_db()
    assert run.status == "waiting" and run.wait_code == Run.WaitCode.LLM_UNAVAILABLE
    assert "HTTP 429" in run.wait_reason
    assert (run.retry_at - before).total_seconds() >= 119
    assert run.llm_requests == 1


def test_a_daily_budget_with_a_local_model_priced_at_zero_never_stops_runs(
    local_model, settings, pages
):
    settings.LLM_DAILY_BUDGET_USD = 0.01
    for _ in range(2):
        local_model.reply(clean_answer(pages), tokens_in=100_000, tokens_out=50_000)
    first = services.run_start(document=ready_document(*pages, sha="1"))
    second = services.run_start(document=ready_document(*pages, sha="2"), fresh=True)
    for run in (first, second):
        run.refresh_from_db()
        assert run.status == "completed" and run.cost_usd == 0
    assert len(local_model.requests) == 2 and second.tokens_in == 100_000


def test_the_evaluate_endpoint_asks_the_configured_local_model(local_model, django_user_model):
    user = django_user_model.objects.create_user("lims", password="x")
    user.groups.add(ensure_roles()[REVIEWERS])
    token = api_token_create(user=user, name="lims")[1]
    document = ready_document("FINAL DIAGNOSIS: Invasive ductal carcinoma.", uploaded_by=user)
    local_model.reply(json.dumps({"value": True, "confidence": 0.95}), tokens_in=50)

    response = Client().post(
        "/api/v1/evaluate/",
        data=json.dumps(
            {"operation": "filter", "documents": [str(document.pk)], "question": "Cancer?"}
        ),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["model"] == MODEL and body["results"][0]["value"] is True
    assert local_model.requests[0]["model"] == MODEL
    assert "carcinoma" in local_model.prompt(0)
