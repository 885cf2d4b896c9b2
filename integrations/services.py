"""Webhooks: record an event for every endpoint that wants it, deliver it signed, retry with
exponential backoff, and keep the log (status, attempts, response code, last error).

Upstream apps (documents, reliability, review) call ``event_emit`` inside the transaction
that makes the change: the deliveries are written with it (an event exists if and only if
its change committed) and their jobs are queued once it commits. Deliveries are background
work of core.jobs (integrations.jobs): a retry waits in the database until it is due, and the
recovery pass sends it then.
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
from django.utils import timezone

from core import jobs
from core.events import Event
from integrations import signing
from integrations.jobs import DELIVERY
from integrations.models import WebhookDelivery, WebhookEndpoint

logger = logging.getLogger(__name__)

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
    jobs.submit(DELIVERY, [delivery.pk for delivery in deliveries])
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
    jobs.submit(DELIVERY, [delivery.pk])
    return delivery


def backoff_seconds(attempts: int) -> float:
    """Wait before the next try after ``attempts`` failed ones: base * 2^(n-1), capped, with
    +-20% jitter so that endpoints recovering from an outage are not hit all at once."""
    delay = min(
        settings.WEBHOOK_BACKOFF_SECONDS * 2 ** max(attempts - 1, 0),
        settings.WEBHOOK_MAX_BACKOFF_SECONDS,
    )
    return float(delay * random.uniform(0.8, 1.2))


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


def delivery_attempt(*, delivery_id: str) -> WebhookDelivery | None:
    """Send one due delivery and record the outcome: delivered, failed after
    WEBHOOK_MAX_ATTEMPTS tries, or retrying after a backoff (the recovery pass sends it again
    when that has passed). None if it was not claimable (already sent, not yet due, or being
    sent by a live worker elsewhere): running a job twice sends once."""
    claim = jobs.claim(DELIVERY, delivery_id)
    if claim is None:
        return None
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    with claim.heartbeat():
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
        delivery.status = WebhookDelivery.Status.RETRYING
        delivery.next_attempt_at = now + timedelta(seconds=backoff_seconds(delivery.attempts))
    fields = ("status", "response_code", "last_error", "claimed_at", "delivered_at")
    outcome = {name: getattr(delivery, name) for name in (*fields, "next_attempt_at")}
    if not claim.rows().update(**outcome):
        # Its heartbeat went stale and another job took it over: that one's outcome stands.
        logger.warning("webhook delivery %s: outcome dropped, taken over", delivery.pk)
        delivery.refresh_from_db()
        return delivery
    logger.info(
        "webhook delivery %s %s: %s after %s attempt(s) (code %s)",
        delivery.pk,
        delivery.event,
        delivery.status,
        delivery.attempts,
        code,
    )
    return delivery


def delivery_retry_now(*, delivery: WebhookDelivery) -> bool:
    """Give a failed or waiting delivery one more attempt now (the admin's "Send again")."""
    updated = WebhookDelivery.objects.filter(
        pk=delivery.pk,
        status__in=[WebhookDelivery.Status.FAILED, WebhookDelivery.Status.RETRYING],
    ).update(status=WebhookDelivery.Status.PENDING, next_attempt_at=timezone.now(), error_code="")
    if updated:
        jobs.submit(DELIVERY, [delivery.pk])
    return bool(updated)
