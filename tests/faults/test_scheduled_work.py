"""Scheduled work with a real Redis (a private one, stopped and started here) and real
`rqworker` processes: webhook retries against a receiver that is down for a while, deliveries
created while Redis is down, and runs waiting for the language model across a Redis restart.
Nothing is handed to RQ's scheduler: every worker's recovery pass sends waiting work when it
is due (core.jobs), so there is no scheduler process to lose."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from benchmarks.llm_answers import answer_json, classification
from core import jobs
from core.events import Event
from engine.fields.library import load_packs
from integrations import services as webhooks
from integrations import signing
from integrations.models import WebhookDelivery, WebhookEndpoint
from reliability import services as runs
from reliability.models import Run
from tests.conftest import ready_document
from tests.faults.conftest import TIMINGS, wait_for
from tests.integrations.receiver import ALLOW_LOOPBACK, Receiver
from tests.reliability.gemini_stub import GeminiStub, Reply, candidate, error_reply, prompt_pages

pytestmark = pytest.mark.django_db(transaction=True)

TEMPLATES = load_packs(("clinical",))["clinical"].templates


def emit(n: int) -> list[WebhookDelivery]:
    deliveries: list[WebhookDelivery] = []
    for i in range(n):
        with transaction.atomic():
            deliveries += webhooks.event_emit(
                kind=Event.DOCUMENT_READY, data={"document_id": f"doc-{i}"}
            )
    return deliveries


def statuses(model: Any, ids: list[Any]) -> dict[str, int]:
    found: dict[str, int] = {}
    for status in model.objects.filter(pk__in=ids).values_list("status", flat=True):
        found[status] = found.get(status, 0) + 1
    return found


def test_a_receiver_down_for_a_while_gets_every_delivery_even_those_made_while_redis_was_down(
    workers, private_redis
):
    fast_retries = {
        "WEBHOOK_BACKOFF_SECONDS": "1",
        "WEBHOOK_MAX_BACKOFF_SECONDS": "4",
        **ALLOW_LOOPBACK,  # the receiver listens on 127.0.0.1
    }
    with Receiver() as receiver:
        receiver.down = True  # 503 to everything
        WebhookEndpoint.objects.create(
            name="LIS", url=receiver.url, secret="whsec_test", events=[Event.DOCUMENT_READY]
        )
        workers.start(**fast_retries)
        workers.start(**fast_retries)
        deliveries = emit(30)
        wait_for(
            lambda: WebhookDelivery.objects.filter(attempts__gte=2).count() >= 10,
            what="retries against the receiver that is down",
        )

        private_redis.stop()
        unqueued = emit(10)  # Redis is down: they wait in the database, marked as such
        assert statuses(WebhookDelivery, [d.pk for d in unqueued]) == {"pending": 10}
        assert set(
            WebhookDelivery.objects.filter(pk__in=[d.pk for d in unqueued]).values_list(
                "error_code", flat=True
            )
        ) == {jobs.QUEUE_UNREACHABLE}
        time.sleep(3)
        private_redis.start()

        ids = [d.pk for d in [*deliveries, *unqueued]]
        wait_for(
            lambda: (
                WebhookDelivery.objects.filter(pk__in=[d.pk for d in unqueued])
                .exclude(attempts=0)
                .count()
                == 10
            ),
            what="the deliveries made while Redis was down to be tried",
        )
        time.sleep(4)  # they meet the receiver down too
        receiver.down = False
        back = time.monotonic()
        wait_for(
            lambda: statuses(WebhookDelivery, ids) == {"succeeded": 40},
            timeout=90,
            what=f"every delivery to succeed (now {statuses(WebhookDelivery, ids)})",
        )
        took = time.monotonic() - back
        print(f"\n[measured] 40 deliveries succeeded {took:.1f} s after the receiver came back")

    ok = [r.headers[signing.DELIVERY_HEADER] for r in receiver.received if r.status == 200]
    assert sorted(ok) == sorted(str(pk) for pk in ids)  # each delivered, and once
    failed_tries = sum(1 for r in receiver.received if r.status == 503)
    assert failed_tries >= 40
    assert max(WebhookDelivery.objects.values_list("attempts", flat=True)) < 10
    print(f"[measured] {failed_tries} failed tries before that; none stuck, none given up")


@pytest.mark.parametrize("fast", TIMINGS)
def test_waiting_runs_and_webhook_retries_resume_within_two_minutes_of_a_redis_restart(
    workers, private_redis, settings, fast
):
    settings.GEMINI_API_KEY = "test-key"
    storm = {"on": True}

    def responder(path: str, body: dict[str, Any]) -> Reply:
        if storm["on"]:
            return error_reply(429, "quota", retry_after=10, retry_delay=10)
        pages = prompt_pages(body["contents"][0]["parts"][0]["text"])
        return Reply(200, candidate(answer_json(classification(pages), pages, TEMPLATES)))

    with GeminiStub(responder=responder) as stub, Receiver() as receiver:
        receiver.down = True
        WebhookEndpoint.objects.create(
            name="LIS", url=receiver.url, secret="whsec_test", events=[Event.DOCUMENT_READY]
        )
        # Default heartbeat, stale and recovery settings (long profile) or short ones (CI);
        # retries 10 s apart.
        workers.start(
            fast=fast,
            GEMINI_API_KEY="test-key",
            GEMINI_BASE_URL=stub.url,
            LLM_MAX_INLINE_WAIT_SECONDS="0.5",
            LLM_BACKOFF_BASE_SECONDS="0.05",
            WEBHOOK_BACKOFF_SECONDS="10",
            **ALLOW_LOOPBACK,  # the receiver listens on 127.0.0.1
        )
        deliveries = [d.pk for d in emit(5)]
        waiting = [
            runs.run_start(document=ready_document(text, sha=sha)).pk
            for text, sha in (
                ("CT CHEST WITH CONTRAST\n\nFINDINGS\n\nNo nodule.\n\nIMPRESSION\n\nNormal.", "1"),
                ("SURGICAL PATHOLOGY REPORT\n\nFINAL DIAGNOSIS\n\nBenign breast tissue.", "2"),
                ("CT ABDOMEN\n\nFINDINGS\n\nNo free fluid.\n\nIMPRESSION\n\nNormal study.", "3"),
            )
        ]
        wait_for(
            lambda: (
                statuses(Run, waiting) == {"waiting": 3}
                and statuses(WebhookDelivery, deliveries) == {"retrying": 5}
            ),
            what="runs waiting for the language model and webhook retries",
        )

        private_redis.stop()  # without persistence: every queued job is lost with it
        storm["on"] = False
        receiver.down = False
        due = max(
            *Run.objects.filter(pk__in=waiting).values_list("retry_at", flat=True),
            *WebhookDelivery.objects.filter(pk__in=deliveries).values_list(
                "next_attempt_at", flat=True
            ),
        )
        while due > timezone.now():  # everything comes due while Redis is away
            time.sleep(0.2)
        time.sleep(5)
        private_redis.start()
        restarted = time.monotonic()

        wait_for(
            lambda: statuses(WebhookDelivery, deliveries) == {"succeeded": 5},
            timeout=150,
            what="the webhook retries after the restart",
        )
        hooks_took = time.monotonic() - restarted
        wait_for(
            lambda: statuses(Run, waiting) == {"completed": 3},
            timeout=150,
            what=f"the waiting runs after the restart (now {statuses(Run, waiting)})",
        )
        runs_took = time.monotonic() - restarted
    print(
        f"\n[measured] after the Redis restart: webhook retries delivered in {hooks_took:.1f} s, "
        f"waiting runs completed in {runs_took:.1f} s (target < 120 s)"
    )
    assert hooks_took < 120 and runs_took < 120
    for run in Run.objects.filter(pk__in=waiting):
        assert run.waits >= 1 and run.final_decision and run.retry_at is None
