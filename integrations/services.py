"""Webhooks: record an event for every endpoint that wants it, deliver it signed, retry with
exponential backoff, and keep the log (status, attempts, response code, last error).

Upstream apps (documents, reliability, review) call ``event_emit`` inside the transaction
that makes the change: the deliveries are written with it (an event exists if and only if
its change committed) and their jobs are queued once it commits.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

import requests
from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone
from redis.exceptions import RedisError

from core.events import Event
from core.jobs import enqueue, enqueue_on_commit, get_queue, jobs_run_inline
from integrations import signing
from integrations.models import WebhookDelivery, WebhookEndpoint

logger = logging.getLogger(__name__)

DELIVER_JOB = "integrations.tasks.deliver_webhook"
USER_AGENT = "Vetted-Webhooks/1"
# Payloads carry ids, types and decisions. Document text and filenames (which may hold
# patient names) never leave in a webhook: a key outside this list is a programming error.
PAYLOAD_KEYS = frozenset(
    {
        "document_id",
        "run_id",
        "packet_id",
        "review_id",
        "ground_truth_id",
        "supersedes_id",
        "version",
        "page_count",
        "quality",
        "decision",
        "dominant_type",
        "source",
        "outcome",
        "attempts",
        "endpoint_id",
        "state",  # provisional (a blind check is open: no type, source or outcome) or final
        "standing_kept",  # a re-run compared with a clinician's standing decision
    }
)
PAYLOAD_TYPES = (str, int, float, bool, type(None))


def _payload(*, event_id: uuid.UUID, kind: str, data: dict[str, Any], at: datetime) -> str:
    unknown = set(data) - PAYLOAD_KEYS
    if unknown:
        raise ValueError(f"webhook payloads carry ids and types only; not {sorted(unknown)}")
    if not all(isinstance(v, PAYLOAD_TYPES) for v in data.values()):
        raise ValueError("webhook payload values must be plain ids, codes or numbers")
    return json.dumps(
        {"id": str(event_id), "type": kind, "created_at": at.isoformat(), "data": data},
        sort_keys=True,
        separators=(",", ":"),
    )


def _queue_unreachable() -> None:
    # The delivery stays due in the database; `manage.py send_webhooks` picks it up.
    logger.warning("webhook delivery left for send_webhooks: the job queue is unreachable")


def _queue_delivery(delivery_id: uuid.UUID, *, attempt: int) -> None:
    enqueue_on_commit(
        DELIVER_JOB,
        str(delivery_id),
        job_id=f"webhook-{delivery_id}-{attempt}",
        on_queue_error=_queue_unreachable,
    )


def event_emit(*, kind: str, data: dict[str, Any]) -> list[WebhookDelivery]:
    """Record one event for every active endpoint subscribed to ``kind``; each delivery is
    queued when the surrounding transaction commits. ``data``: ids, types and decisions."""
    if kind not in Event.values:
        raise ValueError(f"unknown webhook event {kind!r}")
    endpoints = [e for e in WebhookEndpoint.objects.filter(active=True) if e.wants(kind)]
    if not endpoints:
        return []
    now = timezone.now()
    event_id = uuid.uuid4()
    body = _payload(event_id=event_id, kind=kind, data=data, at=now)
    deliveries = WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(
                endpoint=endpoint, event_id=event_id, event=kind, body=body, next_attempt_at=now
            )
            for endpoint in endpoints
        ]
    )
    for delivery in deliveries:
        _queue_delivery(delivery.pk, attempt=1)
    logger.info("webhook event %s %s: %s delivery(ies)", kind, event_id, len(deliveries))
    return deliveries


def endpoint_ping(*, endpoint: WebhookEndpoint) -> WebhookDelivery:
    """A test event for one endpoint (the admin's "Send a test event")."""
    now = timezone.now()
    event_id = uuid.uuid4()
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint,
        event_id=event_id,
        event=Event.PING,
        body=_payload(
            event_id=event_id, kind=Event.PING, data={"endpoint_id": endpoint.pk}, at=now
        ),
        next_attempt_at=now,
    )
    _queue_delivery(delivery.pk, attempt=1)
    return delivery


def backoff_seconds(attempts: int) -> float:
    """Wait before the next try after ``attempts`` failed ones: base * 2^(n-1), capped, with
    +-20% jitter so that endpoints recovering from an outage are not hit all at once."""
    delay = min(
        settings.WEBHOOK_BACKOFF_SECONDS * 2 ** max(attempts - 1, 0),
        settings.WEBHOOK_MAX_BACKOFF_SECONDS,
    )
    return float(delay * random.uniform(0.8, 1.2))


def _lease_expired_before(now: datetime) -> datetime:
    # A delivery "sending" longer than a request can take lost its worker.
    return now - timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS + 60)


def _due(now: datetime) -> Q:
    return Q(
        status__in=[WebhookDelivery.Status.PENDING, WebhookDelivery.Status.RETRYING],
        next_attempt_at__lte=now,
    ) | Q(status=WebhookDelivery.Status.SENDING, claimed_at__lt=_lease_expired_before(now))


def delivery_claim(*, delivery_id: str) -> bool:
    """Atomically take a due delivery; False if it is not due or another worker has it."""
    now = timezone.now()
    return (
        WebhookDelivery.objects.filter(pk=delivery_id)
        .filter(_due(now))
        .update(
            status=WebhookDelivery.Status.SENDING,
            claimed_at=now,
            attempts=F("attempts") + 1,
            last_attempt_at=now,
        )
        == 1
    )


def _post(delivery: WebhookDelivery) -> tuple[int | None, str]:
    """(HTTP status or None, error or ""). Redirects are not followed: a receiver that moved
    must be updated in the admin, not silently chased."""
    body = delivery.body.encode()
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        signing.EVENT_HEADER: delivery.event,
        signing.DELIVERY_HEADER: str(delivery.pk),
        signing.TIMESTAMP_HEADER: str(timestamp),
        signing.SIGNATURE_HEADER: signing.sign(
            secret=delivery.endpoint.secret, timestamp=timestamp, body=body
        ),
    }
    try:
        with requests.post(
            delivery.endpoint.url,
            data=body,
            headers=headers,
            timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
            allow_redirects=False,
            stream=True,
        ) as response:
            if 200 <= response.status_code < 300:
                return response.status_code, ""
            # Keep a little of the receiver's answer for the log, never a whole page.
            excerpt = next(response.iter_content(300), b"").decode("utf-8", "replace")
            reason = f"HTTP {response.status_code} {response.reason or ''}".strip()
            return response.status_code, f"{reason}: {excerpt}".strip(": ")[:500]
    except requests.RequestException as exc:
        return None, f"{type(exc).__name__}: {exc}"[:500]


def _schedule_retry(delivery: WebhookDelivery, delay: float) -> None:
    if jobs_run_inline():
        return  # without workers, `manage.py send_webhooks` (cron) sends what is due
    try:
        get_queue().enqueue_in(
            timedelta(seconds=delay),
            DELIVER_JOB,
            str(delivery.pk),
            job_id=f"webhook-{delivery.pk}-{delivery.attempts + 1}",
            result_ttl=settings.JOB_RESULT_TTL,
            failure_ttl=7 * 86400,
        )
    except RedisError:
        logger.exception("could not schedule webhook retry %s", delivery.pk)


def delivery_attempt(*, delivery_id: str) -> WebhookDelivery | None:
    """Send one due delivery and record the outcome. None if it was not due (already sent,
    waiting, or being sent elsewhere): running a job twice sends once."""
    if not delivery_claim(delivery_id=delivery_id):
        return None
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    if not delivery.endpoint.active:
        code, error = None, "The endpoint is switched off."
        final = True
    else:
        code, error = _post(delivery)
        final = delivery.attempts >= settings.WEBHOOK_MAX_ATTEMPTS
    now = timezone.now()
    delivery.response_code = code
    delivery.last_error = error
    delivery.claimed_at = None
    if not error:
        delivery.status = WebhookDelivery.Status.SUCCEEDED
        delivery.delivered_at = now
        delivery.next_attempt_at = None
    elif final:
        delivery.status = WebhookDelivery.Status.FAILED
        delivery.next_attempt_at = None
    else:
        delay = backoff_seconds(delivery.attempts)
        delivery.status = WebhookDelivery.Status.RETRYING
        delivery.next_attempt_at = now + timedelta(seconds=delay)
    delivery.save(
        update_fields=[
            "status",
            "response_code",
            "last_error",
            "claimed_at",
            "delivered_at",
            "next_attempt_at",
        ]
    )
    if delivery.status == WebhookDelivery.Status.RETRYING:
        _schedule_retry(delivery, (delivery.next_attempt_at - now).total_seconds())  # type: ignore[operator]
    logger.info(
        "webhook delivery %s %s: %s after %s attempt(s) (code %s)",
        delivery.pk,
        delivery.event,
        delivery.status,
        delivery.attempts,
        code,
    )
    return delivery


def deliveries_resume() -> int:
    """Queue every delivery that is due: retries in inline mode, jobs lost with Redis or
    never queued (queue unreachable), or a worker that died mid-send. Safe at any time: the
    claim makes a duplicate job a no-op. Run it from cron with `manage.py send_webhooks`."""
    now = timezone.now()
    due = list(WebhookDelivery.objects.filter(_due(now)).values_list("pk", flat=True))
    for pk in due:
        enqueue(DELIVER_JOB, str(pk), job_id=f"webhook-{pk}-resume-{int(now.timestamp())}")
    return len(due)


def delivery_retry_now(*, delivery: WebhookDelivery) -> bool:
    """Give a failed or waiting delivery one more attempt now (the admin's "Send again")."""
    updated = WebhookDelivery.objects.filter(
        pk=delivery.pk,
        status__in=[WebhookDelivery.Status.FAILED, WebhookDelivery.Status.RETRYING],
    ).update(status=WebhookDelivery.Status.PENDING, next_attempt_at=timezone.now())
    if updated:
        _queue_delivery(delivery.pk, attempt=delivery.attempts + 1)
    return bool(updated)
