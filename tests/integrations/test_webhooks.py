"""Webhooks: events from real workflows reach a local receiver, signed, retried with backoff,
logged; through inline jobs and through Redis with real RQ worker processes."""

from __future__ import annotations

import base64
import json
import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from standardwebhooks import Webhook, WebhookVerificationError

from benchmarks.pdfgen import text_pdf
from core import jobs
from core.events import Event
from documents.services import document_create
from integrations import services, signing
from integrations.models import WebhookDelivery, WebhookEndpoint
from review.services.decisions import review_submit
from tests.conftest import run_burst_worker
from tests.integrations.receiver import ALLOW_LOOPBACK, Receiver
from tests.review.conftest import make_packet

# The receivers listen on 127.0.0.1: allowed here explicitly (tests/conftest.py); what is
# refused is tested in test_webhook_destinations.py.
pytestmark = pytest.mark.usefixtures("loopback_webhooks")

REPORT = [
    [
        "SURGICAL PATHOLOGY REPORT",
        "FINAL DIAGNOSIS",
        "Left breast, core biopsy: invasive ductal carcinoma, Nottingham grade 2.",
        "Estrogen receptor (ER): positive, 95%.",
    ]
]
FILENAME = "Jane_Roe_1961-02-03_pathology.pdf"  # filenames may name the patient


def endpoint_for(receiver: Receiver, *events: str) -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(name="LIS", url=receiver.url, events=list(events))


def bodies(receiver: Receiver) -> list[dict]:
    return [json.loads(r.body) for r in receiver.received]


def sweep() -> int:
    """One recovery pass (cron's ``manage.py recover``): how many deliveries it sent (inline:
    sent now), whether due retries, lost jobs or deliveries whose worker died mid-send."""
    counts = jobs.recover()["webhook"]
    return sum(counts[step] for step in ("requeued", "resumed", "lost", "due"))


@pytest.mark.django_db(transaction=True)
def test_a_real_workflow_sends_each_event_signed_with_ids_and_never_text_or_filename(settings):
    settings.AUDIT_DAILY_MINIMUM = False  # not drawn for a blind audit: its labels are final
    settings.AUDIT_SAMPLE_RATE = 0.0
    with Receiver() as receiver:
        endpoint = endpoint_for(receiver, *[e for e in Event.values if e != Event.PING])
        document = document_create(filename=FILENAME, content=text_pdf(REPORT), user=None)

    received = bodies(receiver)
    kinds = [b["type"] for b in received]
    assert kinds[0] == "document.ready" and "run.decided" in kinds
    ready = received[0]["data"]
    assert ready == {"document_id": str(document.pk), "page_count": 1, "quality": "ok"}
    decided = received[kinds.index("run.decided")]["data"]
    assert decided["document_id"] == str(document.pk)
    assert decided["decision"] in {"AUTO_ACCEPT", "ESCALATE_TO_SME"}
    assert decided["dominant_type"] == "pathology"
    log = WebhookDelivery.objects.filter(endpoint=endpoint)
    for request in receiver.received:
        text = request.body.decode()
        assert "Jane" not in text and "carcinoma" not in text and "Nottingham" not in text
        # Standard Webhooks, verified by its own library with the secret the admin shows; the
        # delivery id receivers de-duplicate on is signed.
        assert Webhook(endpoint.secret).verify(request.body, request.headers) == json.loads(text)
        assert request.headers["webhook-id"] in {str(pk) for pk in log.values_list("pk", flat=True)}
        # The first scheme's headers, for one more release.
        assert request.headers[signing.EVENT_HEADER] == json.loads(text)["type"]
        assert request.headers[signing.DELIVERY_HEADER] == request.headers["webhook-id"]
        assert signing.verify_legacy(
            key=signing.secret_key(endpoint.secret),
            body=request.body,
            timestamp=request.headers[signing.TIMESTAMP_HEADER],
            signature=request.headers[signing.SIGNATURE_HEADER],
        )
    assert log.count() == len(received)
    assert set(log.values_list("status", "attempts", "response_code", "last_error")) == {
        ("succeeded", 1, 200, "")
    }
    assert all(ms is not None and ms >= 0 for ms in log.values_list("duration_ms", flat=True))


@pytest.mark.django_db(transaction=True)
def test_a_clinicians_decision_emits_packet_decided_and_ground_truth_changed(reviewer):
    packet = make_packet()
    with Receiver() as receiver:
        endpoint_for(receiver, Event.PACKET_DECIDED, Event.GROUND_TRUTH_CHANGED)
        review = review_submit(packet_id=packet.pk, reviewer=reviewer, correction=None, notes="")

    by_kind = {b["type"]: b["data"] for b in bodies(receiver)}
    assert set(by_kind) == {"packet.decided", "ground_truth.changed"}
    assert by_kind["packet.decided"] == {
        "packet_id": packet.pk,
        "review_id": review.pk,
        "run_id": packet.run_id,
        "document_id": str(packet.document_id),
        "outcome": "validated",
        "dominant_type": "pathology",
        "ground_truth_id": review.ground_truth_id,
        "state": "final",
    }
    assert by_kind["ground_truth.changed"] == {
        "ground_truth_id": review.ground_truth_id,
        "document_id": str(packet.document_id),
        "version": 1,
        "state": "final",
        "source": "SME_VALIDATED",
        "dominant_type": "pathology",
        "supersedes_id": None,
    }


@pytest.mark.django_db(transaction=True)
def test_an_endpoint_receives_only_the_events_it_subscribed_to_and_nothing_when_inactive(
    reviewer,
):
    packet = make_packet()
    with Receiver() as receiver:
        endpoint_for(receiver, Event.DOCUMENT_READY)
        WebhookEndpoint.objects.create(
            name="off", url=receiver.url, events=[Event.PACKET_DECIDED], active=False
        )
        review_submit(packet_id=packet.pk, reviewer=reviewer, correction=None, notes="")
    assert receiver.received == []
    assert WebhookDelivery.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_change_sends_no_event():
    with Receiver() as receiver:
        endpoint_for(receiver, Event.DOCUMENT_READY)
        with pytest.raises(RuntimeError), transaction.atomic():
            services.event_emit(kind=Event.DOCUMENT_READY, data={"document_id": "x"})
            raise RuntimeError("the change failed")
    assert receiver.received == [] and WebhookDelivery.objects.count() == 0


@pytest.mark.django_db
def test_a_payload_key_outside_the_ids_and_types_is_refused():
    WebhookEndpoint.objects.create(name="a", url="http://127.0.0.1:9/", events=["run.decided"])
    with pytest.raises(ValueError, match="ids and types only"):
        services.event_emit(kind=Event.RUN_DECIDED, data={"filename": FILENAME})
    with pytest.raises(ValueError, match="plain ids"):
        services.event_emit(kind=Event.RUN_DECIDED, data={"decision": {"text": "..."}})


@pytest.mark.django_db(transaction=True)
def test_a_failing_endpoint_is_retried_with_growing_backoff_then_given_up(settings):
    settings.WEBHOOK_MAX_ATTEMPTS = 3
    settings.WEBHOOK_BACKOFF_SECONDS = 30
    with Receiver(500, 502, 503) as receiver:
        endpoint_for(receiver, Event.DOCUMENT_READY)
        with transaction.atomic():
            [delivery] = services.event_emit(kind=Event.DOCUMENT_READY, data={"document_id": "d1"})
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.response_code) == ("retrying", 1, 500)
        # The code and a reason of our own; never the receiver's answer.
        assert (delivery.error_code, delivery.last_error) == (
            "http_status",
            "HTTP 500 Internal Server Error",
        )
        assert delivery.duration_ms is not None
        wait = (delivery.next_attempt_at - delivery.last_attempt_at).total_seconds()
        assert 24 <= wait <= 36  # 30 s +-20%

        # Not due yet: a sweep sends nothing.
        assert sweep() == 0
        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
        assert sweep() == 1  # inline: sent now
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.response_code) == ("retrying", 2, 502)
        wait = (delivery.next_attempt_at - delivery.last_attempt_at).total_seconds()
        assert 48 <= wait <= 72  # doubled

        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
        sweep()
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.response_code) == ("failed", 3, 503)
        assert delivery.next_attempt_at is None
        assert sweep() == 0

    # Every retry sent the same body under the same delivery id, freshly signed.
    assert len({r.body for r in receiver.received}) == 1
    assert len({r.headers[signing.DELIVERY_HEADER] for r in receiver.received}) == 1


def test_backoff_doubles_and_is_capped(settings):
    settings.WEBHOOK_BACKOFF_SECONDS = 10
    settings.WEBHOOK_MAX_BACKOFF_SECONDS = 60
    waits = [services.backoff_seconds(n) for n in range(1, 8)]
    assert 8 <= waits[0] <= 12 and 16 <= waits[1] <= 24 and 32 <= waits[2] <= 48
    assert all(48 <= w <= 72 for w in waits[3:])


@pytest.mark.django_db(transaction=True)
def test_an_unreachable_endpoint_records_the_connection_error():
    WebhookEndpoint.objects.create(
        name="down", url="http://127.0.0.1:9/hooks", events=[Event.DOCUMENT_READY]
    )
    with transaction.atomic():
        [delivery] = services.event_emit(kind=Event.DOCUMENT_READY, data={"document_id": "d1"})
    delivery.refresh_from_db()
    assert delivery.status == "retrying" and delivery.response_code is None
    assert delivery.error_code == "connection_failed"
    assert delivery.last_error == "The connection was refused or dropped."


@pytest.mark.django_db
def test_a_delivery_whose_worker_died_mid_send_is_sent_again(settings):
    with Receiver() as receiver:
        endpoint = endpoint_for(receiver, Event.DOCUMENT_READY)
        delivery = WebhookDelivery.objects.create(
            endpoint=endpoint,
            event_id="00000000-0000-0000-0000-000000000001",
            event=Event.DOCUMENT_READY,
            body='{"type":"document.ready"}',
            status=WebhookDelivery.Status.SENDING,
            attempts=1,
            claimed_at=timezone.now() - timedelta(seconds=settings.JOB_STALE_SECONDS + 1),
        )
        assert sweep() == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("succeeded", 2)
    assert len(receiver.received) == 1


def test_signatures_follow_standard_webhooks_and_the_old_scheme_verifies_with_the_old_secret():
    body = b'{"id":"1"}'
    now = int(time.time())
    secret = signing.new_secret()
    assert secret.startswith("whsec_") and len(signing.secret_key(secret)) == 32
    headers = signing.standard_headers(secret=secret, msg_id="d-1", timestamp=now, body=body)
    assert headers["webhook-signature"].startswith("v1,")
    assert Webhook(secret).verify(body, headers) == {"id": "1"}
    with pytest.raises(WebhookVerificationError):
        Webhook(signing.new_secret()).verify(body, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(b'{"id":"2"}', headers)
    with pytest.raises(WebhookVerificationError):  # the id is signed: a replay under another
        Webhook(secret).verify(body, {**headers, "webhook-id": "d-2"})
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body, {**headers, "webhook-timestamp": str(now - 301)})

    # An endpoint made before Standard Webhooks: its old secret became whsec_ + base64(old), so
    # a receiver still checking the old headers with the old secret keeps working.
    old = "whsec_Xq3-legacy_token"
    migrated = "whsec_" + base64.b64encode(old.encode()).decode()
    legacy = signing.legacy_headers(
        secret=migrated, event="ping", delivery_id="d-1", timestamp=now, body=body
    )
    ok = {
        "body": body,
        "timestamp": str(now),
        "signature": legacy["Vetted-Signature"],
        "now": now + 10,
    }
    assert signing.verify_legacy(key=old.encode(), **ok)
    assert not signing.verify_legacy(key=b"other", **ok)
    assert not signing.verify_legacy(key=old.encode(), **{**ok, "body": b'{"id":"2"}'})
    assert not signing.verify_legacy(key=old.encode(), **{**ok, "now": now + 301})
    assert not signing.verify_legacy(key=old.encode(), **{**ok, "timestamp": "soon"})
    assert Webhook(migrated).verify(
        body, signing.standard_headers(secret=migrated, msg_id="d-1", timestamp=now, body=body)
    )


@pytest.mark.django_db(transaction=True)
def test_the_old_headers_can_be_switched_off(settings):
    settings.WEBHOOK_LEGACY_HEADERS = False
    with Receiver() as receiver:
        endpoint = endpoint_for(receiver, Event.DOCUMENT_READY)
        services.endpoint_ping(endpoint=endpoint)
    [request] = receiver.received
    assert (
        "webhook-signature" in request.headers and signing.SIGNATURE_HEADER not in request.headers
    )


@pytest.mark.django_db(transaction=True)
def test_rq_workers_deliver_and_retry_once_the_backoff_has_passed(redis_url, settings):
    """Real Redis and real worker processes: the first POST fails, the retry waits in the
    database for its backoff, and a worker's recovery pass sends it once it is due."""
    with Receiver(503) as receiver:
        endpoint_for(receiver, Event.DOCUMENT_READY)
        document = document_create(filename=FILENAME, content=text_pdf(REPORT), user=None)

        fast = {"WEBHOOK_BACKOFF_SECONDS": "1", "AUTO_CLASSIFY": "0", **ALLOW_LOOPBACK}
        run_burst_worker(redis_url, env=fast)  # ingests, emits, first POST gets 503
        delivery = WebhookDelivery.objects.get()
        assert (delivery.status, delivery.attempts, delivery.response_code) == ("retrying", 1, 503)
        while timezone.now() <= delivery.next_attempt_at:
            time.sleep(0.1)
        run_burst_worker(redis_url, env=fast)

    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("succeeded", 2, 200)
    assert [json.loads(r.body)["data"]["document_id"] for r in receiver.received] == [
        str(document.pk)
    ] * 2


@pytest.mark.django_db
def test_admins_register_an_endpoint_send_a_test_event_and_read_the_log(
    admin_user, django_capture_on_commit_callbacks
):
    client = Client()
    client.force_login(admin_user)
    with Receiver(500) as receiver:
        response = client.post(
            reverse("admin:integrations_webhookendpoint_add"),
            {
                "name": "Pathology LIS",
                "url": receiver.url,
                "secret": "whsec_" + base64.b64encode(b"from the admin, 24 bytes!").decode(),
                "events": ["ground_truth.changed", "packet.decided"],
                "active": "on",
                "deliveries-TOTAL_FORMS": "0",
                "deliveries-INITIAL_FORMS": "0",
            },
        )
        assert response.status_code == 302, response.content.decode()[:2000]
        endpoint = WebhookEndpoint.objects.get()
        assert endpoint.events == ["ground_truth.changed", "packet.decided"]
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                reverse("admin:integrations_webhookendpoint_changelist"),
                {"action": "send_test_event", "_selected_action": [endpoint.pk]},
            )
        assert response.status_code == 302
    [ping] = bodies(receiver)
    assert ping["type"] == "ping" and ping["data"] == {"endpoint_id": endpoint.pk}

    log = client.get(reverse("admin:integrations_webhookdelivery_changelist"))
    assert log.status_code == 200
    page = log.content.decode()
    assert "Waiting to retry" in page and "HTTP 500 Internal Server Error" in page
    assert "maintenance" not in page  # the receiver's answer is not kept
    delivery = WebhookDelivery.objects.get()
    with Receiver() as receiver:
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(url=receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            client.post(
                reverse("admin:integrations_webhookdelivery_changelist"),
                {"action": "send_again", "_selected_action": [delivery.pk]},
            )
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("succeeded", 2)


@pytest.mark.django_db
def test_reviewers_cannot_see_webhooks_in_admin(reviewer):
    client = Client()
    client.force_login(reviewer)
    response = client.get(reverse("admin:integrations_webhookendpoint_changelist"))
    assert response.status_code == 302  # not staff: sent to the admin login


@pytest.mark.django_db(transaction=True)
def test_an_undone_decision_announces_the_new_ground_truth_version(reviewer):
    from review.services.decisions import review_undo

    packet = make_packet()
    with Receiver() as receiver:
        endpoint_for(receiver, Event.GROUND_TRUTH_CHANGED)
        review = review_submit(packet_id=packet.pk, reviewer=reviewer, correction=None, notes="")
        review_undo(reviewer=reviewer)

    changes = [b["data"] for b in bodies(receiver)]
    assert [(c["version"], c["source"]) for c in changes] == [
        (1, "SME_VALIDATED"),
        (2, "WITHDRAWN"),
    ]
    assert changes[1]["supersedes_id"] == review.ground_truth_id
