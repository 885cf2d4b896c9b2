"""LLM_DEIDENTIFY: a run through the real google-genai client and the local stub server sends
surrogates, never a demo patient's name, record number or date of birth; the model's evidence,
quoted from the de-identified pages, comes back in the original words and grounds on the
original pages; the response cache still answers the same document."""

from __future__ import annotations

import json

import pytest

from benchmarks.gemini_stub import Reply, candidate, prompt_text
from benchmarks.llm_answers import answer_json, classification
from engine.fields.library import load_packs
from engine.schemas import Evidence
from reliability import services
from reliability.models import Issue, LLMResponse
from tests.conftest import ready_document
from tests.reliability.gemini_stub import GeminiStub, prompt_pages

pytestmark = pytest.mark.django_db(transaction=True)

TEMPLATES = load_packs(("clinical",))["clinical"].templates
HEADER = "Riverside Demo Hospital · Patient: DEMO, Alex · MRN DEMO-0001 · DOB 01/01/1970"
PAGES = [
    f"SURGICAL PATHOLOGY REPORT\n{HEADER}\n\nSpecimen received: Left breast, core needle "
    "biopsy (3 cores).\n\nFINAL DIAGNOSIS\nLeft breast, 2 o'clock, core biopsy: invasive "
    "ductal carcinoma, Nottingham grade 2.",
    "MICROSCOPIC DESCRIPTION\nThe cores show infiltrating nests of malignant epithelial cells. "
    "No lymphovascular invasion is identified.\n\nIMMUNOHISTOCHEMISTRY\nEstrogen receptor "
    "(ER): positive, 90% of tumour nuclei, strong.\n\nElectronically signed by: Demo "
    "Pathologist, MD. Date: 03/14/2025. Questions: call Alex's care team.",
]
PHI = ("DEMO", "Alex", "DEMO-0001", "01/01/1970")


def answer_from_what_was_sent(path: str, body: dict) -> Reply:
    """The model's answer, built from the pages it was sent (surrogates and all), with the
    header line of page 1 quoted as evidence: the snippet only exists in the prompt's words.
    A field-extraction call gets every field not present."""
    schema = body["generationConfig"].get("responseSchema") or {}
    if schema.get("title") == "ExtractedFields":
        return Reply(200, candidate(json.dumps({name: {} for name in schema["properties"]})))
    pages = prompt_pages(prompt_text(body))
    output = classification(pages, "pathology")
    header = next(line for line in pages[0].splitlines() if "Patient:" in line).strip()
    assessment = output.segments[0].assessment("pathology")
    assert assessment is not None
    assessment.top_evidence.append(Evidence(snippet=header, page=1))
    return Reply(200, candidate(answer_json(output, pages, TEMPLATES)))


@pytest.fixture
def gemini(settings):
    with GeminiStub(responder=answer_from_what_was_sent) as stub:
        settings.GEMINI_API_KEY = "test-key"
        settings.GEMINI_BASE_URL = stub.url
        settings.LLM_BACKOFF_BASE_SECONDS = 0.01
        settings.LLM_MAX_TRANSPORT_RETRIES = 2
        settings.LLM_DEIDENTIFY = True
        yield stub


def test_the_model_never_receives_a_demo_patients_name_and_evidence_grounds_on_the_originals(
    gemini,
):
    run = services.run_start(document=ready_document(*PAGES, sha="d"))
    run.refresh_from_db()

    assert gemini.requests, "the run asked the model"
    for body in gemini.requests:
        sent = json.dumps(body, ensure_ascii=False)
        for value in PHI:
            assert value not in sent, value
    attempt = run.attempts.get(number=run.best_attempt_number)
    snippets = [
        (evidence["snippet"], evidence["page"])
        for segment in attempt.classification["segments"]
        for assessment in segment["types"]
        for evidence in assessment["top_evidence"]
    ]
    assert (HEADER, 1) in snippets  # quoted in surrogates, stored in the original words
    for snippet, page in snippets:
        assert snippet in PAGES[page - 1]
    assert not Issue.objects.filter(attempt__run=run, code__startswith="fabricated").exists()
    assert not Issue.objects.filter(attempt__run=run, agent="V4").exists()


def test_the_same_document_is_answered_from_the_cache(gemini):
    first = services.run_start(document=ready_document(*PAGES, sha="e"))
    sent = len(gemini.requests)
    again = services.run_start(document=first.document)
    again.refresh_from_db()
    assert len(gemini.requests) == sent
    assert again.llm_cache_hits >= 1 and LLMResponse.objects.count() == sent


def test_without_the_setting_the_prompt_carries_the_text_as_it_is(gemini, settings):
    settings.LLM_DEIDENTIFY = False
    services.run_start(document=ready_document(*PAGES, sha="f"))
    assert "DEMO, Alex" in prompt_text(gemini.requests[0])
