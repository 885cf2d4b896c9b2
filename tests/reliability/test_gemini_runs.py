"""Runs with Gemini as the primary, through the real google-genai client and a local stub
server: the clean path in one call, the response cache, the independent gate, prompt injection,
waiting and resuming on transient errors (with a real Redis and a real worker), permanent errors
and blocks, a failed re-ask, the deadline, the daily budget and the accounting."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from benchmarks.llm_answers import answer_json, classification
from engine.classifiers.offline import OfflineClassifier
from reliability import services
from reliability.models import Extraction, LLMResponse, Run
from review.models import GroundTruth, ReviewPacket
from tests.conftest import ROOT, pathology_field_names, ready_document, worker_env
from tests.reliability.gemini_stub import GeminiStub, Reply, error_reply, prompt_pages
from tests.reliability.llm_providers import INJECTION, PT_NOTE, TEMPLATES, clean_answer

pytestmark = pytest.mark.django_db(transaction=True)

INJECTED_NOTE = PT_NOTE + INJECTION  # a note that asks to be classified as pathology


def operations(run):
    return [call["operation"] for call in run.llm_log]


def test_the_clean_path_is_one_call_with_the_fields_in_it(gemini, pages):
    gemini.reply(clean_answer(pages), tokens_in=3000, tokens_out=900, thoughts=400)
    run = services.run_start(document=ready_document(*pages, sha="a"))
    run.refresh_from_db()

    assert run.final_decision == "AUTO_ACCEPT"
    assert (run.llm_calls, run.llm_requests, operations(run)) == (1, 1, ["classify"])
    assert (run.tokens_in, run.tokens_out, run.tokens_thinking) == (3000, 900, 400)
    assert run.cost_usd == Decimal("0.004150")  # 3000 x 0.30 + 1300 x 2.50 per million
    assert "Fill segment_fields" in gemini.prompt(0)
    extraction = Extraction.objects.get(run=run)
    assert (extraction.status, extraction.extractor) == ("completed", "gemini")
    assert extraction.fields["grade"]["value"] == "Nottingham grade 2"  # the answer's value
    assert extraction.iterations_count == 1
    assert run.gate == {
        "classifier": "offline",
        "version": OfflineClassifier().model,
        "dominant_type": "pathology",
        "confidence": 1.0,
        "agrees": True,
        "confirmed": True,
    }
    assert (
        "V2 label/text consistency (LLM): the independent classifier confirms the labels"
        in run.skipped_checks
    )
    assert run.prompt_version.startswith("classify-")
    assert run.llm_log[0]["prompt_version"] == run.prompt_version
    assert GroundTruth.objects.get(run=run).source == "AUTO_ACCEPTED"


def test_a_rerun_of_unchanged_text_costs_no_call_even_in_other_bytes(gemini, pages):
    gemini.reply(clean_answer(pages))
    first = services.run_start(document=ready_document(*pages, sha="a"))
    again = services.run_start(document=first.document)
    other_bytes = services.run_start(document=ready_document(*pages, sha="b"))
    for run in (first, again, other_bytes):
        run.refresh_from_db()
        assert run.final_decision == "AUTO_ACCEPT"
    assert len(gemini.requests) == 1 and LLMResponse.objects.count() == 1
    assert (again.llm_calls, again.llm_cache_hits, again.cost_usd) == (0, 1, 0)
    assert other_bytes.llm_calls == 0 and other_bytes.llm_log[0]["outcome"] == "cached"


def test_an_obeyed_injection_is_caught_by_the_gate_and_never_accepted(gemini, settings):
    pages = [INJECTED_NOTE]
    obeyed = classification(pages, "pathology")
    obeyed.segments[0].assessment("pathology").confidence = 1.0
    gemini.reply(answer_json(obeyed, pages, TEMPLATES))
    run = services.run_start(document=ready_document(*pages, sha="i"))
    run.refresh_from_db()

    assert run.final_decision == "ESCALATE_TO_SME"
    assert not GroundTruth.objects.filter(document=run.document).exists()
    packet = ReviewPacket.objects.get(run=run)
    codes = {(i["agent"], i["code"]) for i in packet.issues}
    assert ("GATE", "independent_disagreement") in codes
    assert ("V3", "instruction_in_text") in codes
    gate = next(i for i in packet.issues if i["agent"] == "GATE")
    assert gate["severity"] == "MAJOR" and not gate["auto_fixable"] and not gate["llm_fixable"]
    assert "reads this document as Clinical Note" in gate["message"]
    assert packet.comparison_agrees is False
    assert operations(run) == ["classify"]  # no re-ask: nothing here a model should fix
    assert run.gate["agrees"] is False and run.gate["dominant_type"] == "clinical_note"


def test_the_gate_and_the_structure_escalate_a_wrong_type_with_verbatim_evidence(gemini, pages):
    wrong = classification(pages, "radiology")  # evidence copied from the pathology report
    gemini.reply(answer_json(wrong, pages, TEMPLATES))
    gemini.reply(answer_json(wrong, pages, TEMPLATES))  # the re-ask: the same answer
    run = services.run_start(document=ready_document(*pages, sha="w"))
    run.refresh_from_db()
    assert run.final_decision == "ESCALATE_TO_SME"
    best = run.attempts.get(number=run.best_attempt_number)
    # Changed on purpose (issue 25): the pages show none of a radiology report's structure,
    # which a model may fix (a re-ask); the gate's disagreement is not shown to it.
    assert sorted((i.agent, i.code) for i in best.issues.all()) == [
        ("GATE", "independent_disagreement"),
        ("V3", "report_without_structure"),
    ]
    assert operations(run) == ["classify", "classify"]
    assert "independent" not in run.attempts.get(number=1).feedback


def test_llm_checks_run_only_where_they_can_change_the_outcome_and_once_per_labels(
    gemini, settings, pages
):
    # Changed on purpose (issue 25): in the clinical preset an independent gate either
    # confirms the labels (itself, or through the document's structure when it abstains) or
    # escalates, so the same-model checks never run there. In the batch preset they still run
    # when the gate abstains and the structure does not confirm: here a pathology report
    # with a radiologic correlation whose own findings and impression make a mixture.
    settings.RELIABILITY_PRESET = "batch"
    settings.GATE_CONFIRM_CONFIDENCE = 1.1  # the gate agrees but never vouches
    pages[0] += (
        "\n\nRadiologic-pathologic correlation\nFindings: irregular mass at 2 o'clock, 1.4 cm."
        "\nImpression: concordant with the biopsy."
    )
    answer = json.loads(clean_answer(pages))
    answer["segments"][0]["types"][1]["segment_share"] = 0.9  # shares sum to 1.9: auto-fixable
    gemini.reply(json.dumps(answer))
    # Asked at once, so each question has its own script: V2 "is it a ...?", V3 "paperwork?".
    gemini.on("taken as a whole").reply(json.dumps({"value": True, "confidence": 0.9}), delay=0.3)
    gemini.on("paperwork").reply(json.dumps({"value": False, "confidence": 0.9}), delay=0.3)
    run = services.run_start(document=ready_document(*pages, sha="c"))
    run.refresh_from_db()

    assert run.final_decision == "AUTO_ACCEPT"
    assert run.attempts_count == 2  # the auto-fix; its labels did not change
    assert sorted(operations(run)) == ["classify", "filter", "filter"]  # checked once
    assert gemini.max_in_flight == 2  # the V2 and V3 checks went out at once
    first = run.attempts.get(number=0)
    assert first.decision == "AUTO_RETRY" and first.llm_calls == 1


def test_a_gemini_run_is_compared_with_the_offline_classifier(
    gemini, clean, pages, reviewer_client
):
    # Changed on purpose (issue 9): the deterministic checks escalate this answer (low
    # confidence), so no same-model LLM check runs; the fields come with the classification.
    # Two calls (classify, re-ask) where there were seven; the comparison is on the packet.
    clean.segments[0].assessment("pathology").confidence = 0.5  # low: escalates
    gemini.reply(answer_json(clean, pages, TEMPLATES))
    gemini.reply(answer_json(clean, pages, TEMPLATES))  # the re-ask
    document = ready_document(*pages, sha="b", options={"enable_reliability_loop": False})

    run = services.run_start(document=document)
    run.refresh_from_db()

    assert run.final_decision == "ESCALATE_TO_SME"
    assert run.llm_calls == 2 and run.tokens_in == 240
    assert operations(run) == ["classify", "classify"]
    assert run.attempts.count() == 2
    assert run.attempts.get(number=1).feedback.startswith("--- FEEDBACK FROM PREVIOUS")
    packet = ReviewPacket.objects.get(run=run)
    assert packet.comparison["available"] and packet.comparison["classifier"] == "offline"
    assert packet.comparison_agrees is (packet.comparison["dominant_type"] == "pathology")
    page = reviewer_client.get(reverse("reliability:run", args=[run.pk]))
    assert page.status_code == 200
    assert "classify" in page.content.decode() and "low_confidence" in page.content.decode()


def test_a_failed_re_ask_keeps_the_first_attempt_and_escalates_with_the_failure(
    gemini, clean, pages, reviewer_client
):
    fabricated = clean.model_copy(deep=True)
    fabricated.segments[0].assessment("pathology").top_evidence[
        0
    ].snippet = "Metastatic melanoma in four of nine lymph nodes"
    gemini.reply(answer_json(fabricated, pages, TEMPLATES))
    gemini.fail(503, times=5)  # the re-ask meets a 503 storm
    run = services.run_start(document=ready_document(*pages, sha="f"))
    run.refresh_from_db()

    assert run.status == "completed" and run.final_decision == "ESCALATE_TO_SME"
    assert run.attempts_count == 1
    assert run.stopped_reason.startswith("re-ask unavailable (HTTP 503 after 3 attempt(s)")
    assert run.attempts.get(number=0).note.startswith("re-ask unavailable: HTTP 503")
    assert (run.llm_calls, run.llm_requests) == (2, 4)
    packet = ReviewPacket.objects.get(run=run)
    page = reviewer_client.get(reverse("review:packet", args=[packet.pk])).content.decode()
    # In words: the reasons, the failed re-ask among them (its code is for Admins).
    assert "the language model could not be asked a second time" in page
    assert "Evidence not in the document" in page and 'data-code="fabricated_evidence"' in page


def test_a_run_whose_llm_keeps_failing_waits_and_is_not_failed(gemini, settings, pages):
    # Changed on purpose (issue 9): a 503 storm is transient, so the run waits and resumes
    # by itself instead of failing; what it spent and how long it took are kept.
    gemini.fail(503, times=10)
    document = ready_document(*pages, sha="a")

    run = services.run_start(document=document)  # inline: executes after commit
    run.refresh_from_db()

    assert run.classifier == "gemini"
    assert run.status == Run.Status.WAITING and run.final_decision == ""
    assert run.wait_reason.startswith("waiting for the language model: HTTP 503 after 3 attempt")
    assert run.retry_at > timezone.now() and run.waits == 1
    assert (run.llm_calls, run.llm_requests) == (1, 3)
    assert run.llm_log[0]["ok"] is False and run.llm_log[0]["tries"] == 3
    assert run.duration_seconds is not None and run.duration_seconds > 0
    assert not GroundTruth.objects.exists() and not ReviewPacket.objects.exists()


def test_a_waiting_run_shows_when_it_tries_again_and_can_be_tried_now(
    gemini, pages, reviewer_client
):
    gemini.fail(429, retry_after=120)
    run = services.run_start(document=ready_document(*pages, sha="a"))
    run.refresh_from_db()
    assert run.status == "waiting" and run.llm_requests == 1
    assert 115 <= (run.retry_at - timezone.now()).total_seconds() <= 160  # Retry-After + jitter

    page = reviewer_client.get(reverse("reliability:run", args=[run.pk])).content.decode()
    assert "Waiting for the language model" in page and "Next try at" in page
    assert "The API has asked every worker to pause (HTTP 429 RESOURCE_EXHAUSTED)" in page

    from reliability import llm_runtime

    llm_runtime._local_throttle = None  # the pause is over
    gemini.reply(clean_answer(pages))
    response = reviewer_client.post(reverse("reliability:resume", args=[run.pk]))
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == "completed" and run.final_decision == "AUTO_ACCEPT"
    assert (run.llm_calls, run.llm_requests, run.waits) == (2, 2, 1)  # both executions count
    assert reviewer_client.get(reverse("reliability:resume", args=[run.pk])).status_code == 405


def test_the_api_reports_a_waiting_run_and_its_next_try(gemini, pages, django_user_model):
    from django.test import Client

    from reliability.services import api_token_create
    from review.roles import REVIEWERS, ensure_roles

    user = django_user_model.objects.create_user("lims")
    user.groups.add(ensure_roles()[REVIEWERS])  # tokens need a role, as the browser does
    _token, key = api_token_create(user=user, name="lims")
    gemini.fail(429, retry_after=300)
    document = ready_document(*pages, sha="a", uploaded_by=user)
    run = services.run_start(document=document)
    run.refresh_from_db()
    body = (
        Client()
        .get(reverse("api:status", args=[document.pk]), HTTP_AUTHORIZATION=f"Bearer {key}")
        .json()
    )
    assert body["status"] == "waiting"
    assert body["run"]["retry_at"] == run.retry_at.isoformat()
    assert body["run"]["wait_reason"].startswith("waiting for the language model: HTTP 429")


def test_a_refused_key_fails_the_run_with_the_reason_for_the_operator(gemini, pages):
    gemini.fail(403, message="API key not valid")
    run = services.run_start(document=ready_document(*pages, sha="p"))
    run.refresh_from_db()
    assert run.status == "failed" and run.error == (
        "The language model call failed: HTTP 403 after 1 attempt(s): the API key or project "
        "is not allowed to use this model (API key not valid)"
    )
    assert (run.llm_calls, run.llm_requests) == (1, 1)  # never retried
    assert run.duration_seconds is not None and run.finished_at is not None
    assert not ReviewPacket.objects.exists() and not GroundTruth.objects.exists()


@pytest.mark.parametrize(
    ("script", "requests", "reason"),
    [
        (lambda s: s.block("SAFETY", where="prompt"), 1, "the prompt was blocked (SAFETY)"),
        (lambda s: s.block("SAFETY"), 1, "the answer was blocked (SAFETY"),
        (lambda s: s.empty().empty(), 2, "no answer (no candidate), twice"),
        (lambda s: s.truncated().truncated(), 2, "cut off"),
        (lambda s: s.reply("not json").reply("{}"), 2, "did not fit the"),
        (lambda s: s.fail(400, message="Request payload size exceeds the limit"), 1, "HTTP 400"),
    ],
)
def test_a_model_without_a_usable_answer_sends_the_document_to_a_clinician(
    gemini, pages, admin_user, client, script, requests, reason
):
    script(gemini)
    document = ready_document(*pages, sha="b")
    run = services.run_start(document=document)
    run.refresh_from_db()

    assert (run.status, run.final_decision) == ("completed", "ESCALATE_TO_SME")
    assert run.llm_requests == requests
    attempt = run.attempts.get()
    assert attempt.source == "fallback"
    issue = attempt.issues.get(code="model_no_answer")
    assert issue.severity == "BLOCKER" and reason in issue.message
    packet = ReviewPacket.objects.get(run=run)
    assert " model_no_answer " in packet.issue_codes
    assert not GroundTruth.objects.filter(document=document).exists()  # a clinician decides

    client.force_login(admin_user)
    page = client.get(reverse("review:packet", args=[packet.pk])).content.decode()
    assert "The AI model gave no answer" in page


def test_a_hung_model_never_outlives_the_runs_deadline(gemini, settings, pages):
    settings.RUN_DEADLINE_SECONDS = 6
    gemini.hang(20)
    started = time.monotonic()
    run = services.run_start(document=ready_document(*pages, sha="h"))
    run.refresh_from_db()
    assert time.monotonic() - started < 10
    assert run.status == "waiting" and "no time left in this run" in run.wait_reason
    assert run.llm_requests == 1


def test_beyond_the_daily_budget_runs_wait_for_the_next_day_and_admins_see_why(
    gemini, settings, pages, admin_user, client
):
    settings.LLM_DAILY_BUDGET_USD = 0.01
    spent = ready_document(*pages, sha="s")
    Run.objects.create(
        document=spent,
        preset="clinical",
        classifier="gemini",
        model="gemini-2.5-flash",
        status=Run.Status.COMPLETED,
        final_decision="AUTO_ACCEPT",
        started_at=timezone.now(),
        llm_calls=3,
        cost_usd=Decimal("0.012"),
    )
    run = services.run_start(document=ready_document(*pages, sha="n"))
    run.refresh_from_db()
    assert run.status == "waiting" and run.llm_calls == 0 and gemini.requests == []
    assert run.wait_reason.startswith("the daily language-model budget ($0.01) is spent")
    tomorrow = (timezone.now() + timedelta(days=1)).date()
    assert run.retry_at.date() == tomorrow and (run.retry_at.hour, run.retry_at.minute) == (0, 0)

    client.force_login(admin_user)
    page = client.get(reverse("review:metrics")).content.decode()
    assert 'id="budget-spent"' in page and "1 waiting now" in page
    assert "$0.0120 of a $0.01 daily budget" in page


def test_the_metrics_page_shows_calls_tokens_and_cost(gemini, pages, admin_user, client):
    gemini.reply(clean_answer(pages), tokens_in=1000, tokens_out=200, thoughts=300)
    services.run_start(document=ready_document(*pages, sha="m"))
    client.force_login(admin_user)
    page = client.get(reverse("review:metrics")).content.decode()
    assert 'id="llm-metrics"' in page
    assert "1 / 1 / 0" in page  # calls / requests / cache hits
    assert "1000 / 200 / 300" in page  # tokens in / out / thinking
    assert "$0.0016" in page  # 1000 x 0.30 + 500 x 2.50 per million


def test_extraction_for_each_segment_runs_at_once(gemini, settings):
    from tests.reliability.test_fields import PATHOLOGY, RADIOLOGY

    pages = [PATHOLOGY, RADIOLOGY]
    answer = json.loads(answer_json(classification(pages), pages, TEMPLATES))
    answer["segment_fields"] = []  # the model left the fields out: extraction asks for them
    gemini.reply(json.dumps(answer))
    names = {"pathology": pathology_field_names(), "radiology": None}
    not_present = {"status": "not_present", "confidence": 0.9}
    for _ in range(2):
        gemini.on("You extract fields").replies.append(
            Reply(200, _fields_body({n: not_present for n in names["pathology"]}), delay=0.3)
        )
    document = ready_document(*pages, sha="x", options={"enable_reliability_loop": False})
    run = services.run_start(document=document)
    run.refresh_from_db()
    assert operations(run).count("extract_fields") == 2
    assert gemini.max_in_flight == 2


def _fields_body(values):
    from tests.reliability.gemini_stub import candidate

    return candidate(json.dumps(values))


# -- a 429 storm, a real Redis and a real worker ------------------------------------------------


def test_runs_hit_by_a_429_storm_wait_and_resume_by_themselves(redis_url, settings):
    settings.GEMINI_API_KEY = "test-key"
    # The storm starts with the first request, not with the test: a worker that is slow to
    # start on a loaded machine must still meet it.
    storm: dict[str, float] = {}

    def responder(path, body):
        storm_until = storm.setdefault("until", time.time() + 6)
        if time.time() < storm_until:
            return error_reply(429, "quota", retry_after=2, retry_delay=2)
        pages = prompt_pages(body["contents"][0]["parts"][0]["text"])
        return Reply(200, _fields_body_text(answer_json(classification(pages), pages, TEMPLATES)))

    with GeminiStub(responder=responder) as stub:
        settings.GEMINI_BASE_URL = stub.url
        runs = [
            services.run_start(document=ready_document(text, sha=sha))
            for text, sha in (
                (PT_NOTE, "1"),
                ("CT CHEST WITH CONTRAST\n\nFINDINGS\n\nNo nodule.\n\nIMPRESSION\n\nNormal.", "2"),
                ("SURGICAL PATHOLOGY REPORT\n\nFINAL DIAGNOSIS\n\nBenign breast tissue.", "3"),
            )
        ]
        env = worker_env(redis_url)
        env.update(
            GEMINI_API_KEY="test-key",
            GEMINI_BASE_URL=stub.url,
            LLM_MAX_INLINE_WAIT_SECONDS="0.5",  # a 2 s Retry-After frees the worker
            LLM_BACKOFF_BASE_SECONDS="0.05",
        )
        worker = subprocess.Popen(
            [sys.executable, "manage.py", "rqworker", "default"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            seen_waiting = False
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                statuses = set(Run.objects.values_list("status", flat=True))
                seen_waiting |= "waiting" in statuses
                if statuses <= {"completed", "failed"}:
                    break
                time.sleep(0.3)
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.communicate()
        throttled = sum(1 for t in stub.times if t < storm["until"])
        answered = len(stub.times) - throttled

    assert seen_waiting
    for run in runs:
        run.refresh_from_db()
        assert run.status == "completed", (run.status, run.wait_reason, run.error)
        assert run.waits >= 1 and run.retry_at is None
        assert run.final_decision in {"AUTO_ACCEPT", "ESCALATE_TO_SME"}
    assert answered == 3  # one call per document once the storm was over
    assert throttled < 3 * 3  # the shared circuit kept waiting runs from hammering the API


def _fields_body_text(text):
    from tests.reliability.gemini_stub import candidate

    return candidate(text)


def test_a_fresh_rerun_asks_the_model_again(gemini, pages):
    from io import StringIO

    from django.core.management import call_command

    gemini.reply(clean_answer(pages))
    gemini.reply(clean_answer(pages))
    first = services.run_start(document=ready_document(*pages, sha="a"))
    out = StringIO()
    call_command("rerun", str(first.document.pk), "--fresh", stdout=out)
    fresh = Run.objects.exclude(pk=first.pk).get()
    assert "completed, AUTO_ACCEPT" in out.getvalue()
    assert (fresh.llm_calls, fresh.llm_cache_hits, len(gemini.requests)) == (1, 0, 2)
