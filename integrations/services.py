"""Webhooks: record an event for every endpoint that wants it, deliver it signed (Standard
Webhooks) to an allowed destination, retry with exponential backoff, and keep the log (status,
attempts, response code, time taken, and a code and reason of our own when a try failed: never
the receiver's answer, which could be an internal page the admin is not meant to read).

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
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from http import HTTPStatus
from typing import Any

import requests
from django.conf import settings
from django.utils import timezone

from core import jobs
from core.events import Event
from integrations import destinations, signing
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


@dataclass(frozen=True)
class Outcome:
    """What one try gave: the receiver's status code (its body is never kept), how long it
    took, and a code and a short reason of our own when it failed."""

    response_code: int | None = None
    error_code: str = ""
    error: str = ""
    duration_ms: int | None = None
    final: bool = False  # not worth trying again (a refused destination)


def _failed_status(code: int) -> str:
    try:
        return f"HTTP {code} {HTTPStatus(code).phrase}"
    except ValueError:
        return f"HTTP {code}"


def _post(delivery: WebhookDelivery) -> Outcome:
    """POST one delivery, signed, to the address its URL resolves to now (checked, then
    connected to: integrations.destinations). Redirects are not followed: a receiver that
    moved must be updated in the admin, not silently chased."""
    endpoint = delivery.endpoint
    try:
        destination = destinations.resolve(endpoint.url)
    except destinations.DestinationRefused as refused:
        final = refused.code == destinations.REFUSED
        return Outcome(error_code=refused.code, error=refused.message, final=final)
    body = delivery.body.encode()
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Host": destination.host_header,
        **signing.standard_headers(
            secret=endpoint.secret, msg_id=str(delivery.pk), timestamp=timestamp, body=body
        ),
    }
    if settings.WEBHOOK_LEGACY_HEADERS:
        headers.update(
            signing.legacy_headers(
                secret=endpoint.secret,
                event=delivery.event,
                delivery_id=str(delivery.pk),
                timestamp=timestamp,
                body=body,
            )
        )
    started = time.monotonic()
    outcome = Outcome(error_code="connection_failed", error="No address to connect to.")
    with destinations.pinned_session(destination) as session:
        for address in destination.addresses:  # the next one only if this one cannot connect
            outcome = _send(session, destination.url_at(address), body, headers)
            if outcome.error_code not in ("connection_failed", "connect_timeout"):
                break
    return replace(outcome, duration_ms=round((time.monotonic() - started) * 1000))


def _send(session: requests.Session, url: str, body: bytes, headers: dict[str, str]) -> Outcome:
    seconds = settings.WEBHOOK_TIMEOUT_SECONDS
    try:
        with session.post(
            url,
            data=body,
            headers=headers,
            timeout=seconds,
            allow_redirects=False,
            stream=True,  # the answer's body is never read
            verify=settings.WEBHOOK_CA_BUNDLE or True,
        ) as response:
            code = response.status_code
            if 200 <= code < 300:
                return Outcome(response_code=code)
            return Outcome(response_code=code, error_code="http_status", error=_failed_status(code))
    except requests.exceptions.SSLError:
        reason = "The TLS handshake or the receiver's certificate failed."
        return Outcome(error_code="tls_failed", error=reason)
    except requests.exceptions.ConnectTimeout:
        reason = f"No connection within {seconds:g} s."
        return Outcome(error_code="connect_timeout", error=reason)
    except requests.exceptions.Timeout:
        reason = f"No answer within {seconds:g} s."
        return Outcome(error_code="timeout", error=reason)
    except requests.exceptions.ConnectionError:
        reason = "The connection was refused or dropped."
        return Outcome(error_code="connection_failed", error=reason)
    except requests.RequestException as exc:
        return Outcome(
            error_code="request_failed", error=f"The request failed ({type(exc).__name__})."
        )


def delivery_attempt(*, delivery_id: str) -> WebhookDelivery | None:
    """Send one due delivery and record the outcome: delivered, failed (after
    WEBHOOK_MAX_ATTEMPTS tries, or at once when its destination is refused), or retrying
    after a backoff (the recovery pass sends it again when that has passed). None if it was
    not claimable (already sent, not yet due, or being sent by a live worker elsewhere):
    running a job twice sends once."""
    claim = jobs.claim(DELIVERY, delivery_id)
    if claim is None:
        return None
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    with claim.heartbeat():
        if not delivery.endpoint.active:
            outcome = Outcome(
                error_code="endpoint_off", error="The endpoint is switched off.", final=True
            )
        else:
            outcome = _post(delivery)
    final = outcome.final or delivery.attempts >= settings.WEBHOOK_MAX_ATTEMPTS
    now = timezone.now()
    delivery.response_code = outcome.response_code
    delivery.last_error = outcome.error
    delivery.error_code = outcome.error_code
    delivery.duration_ms = outcome.duration_ms
    delivery.claimed_at = None
    if not outcome.error_code:
        delivery.status = WebhookDelivery.Status.SUCCEEDED
        delivery.delivered_at = now
        delivery.next_attempt_at = None
    elif final:
        delivery.status = WebhookDelivery.Status.FAILED
        delivery.next_attempt_at = None
    else:
        delivery.status = WebhookDelivery.Status.RETRYING
        delivery.next_attempt_at = now + timedelta(seconds=backoff_seconds(delivery.attempts))
    fields = (
        "status",
        "response_code",
        "last_error",
        "error_code",
        "duration_ms",
        "claimed_at",
        "delivered_at",
        "next_attempt_at",
    )
    if not claim.rows().update(**{name: getattr(delivery, name) for name in fields}):
        # Its heartbeat went stale and another job took it over: that one's outcome stands.
        logger.warning("webhook delivery %s: outcome dropped, taken over", delivery.pk)
        delivery.refresh_from_db()
        return delivery
    logger.info(
        "webhook delivery %s %s: %s after %s attempt(s) (code %s %s, %s ms)",
        delivery.pk,
        delivery.event,
        delivery.status,
        delivery.attempts,
        outcome.response_code,
        outcome.error_code,
        outcome.duration_ms,
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
