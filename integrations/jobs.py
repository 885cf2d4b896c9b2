"""Webhook deliveries as background work (core.jobs): a delivery is queued while pending,
running while a worker sends it, waiting while it retries after a failure (until
``next_attempt_at``), and given up when its workers keep being lost."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings

from core.jobs import Work
from integrations.models import WebhookDelivery

DELIVERY_LOST = (
    "The worker sending it was lost (killed or stopped) on attempt {n}; it is not tried "
    "again. Use \u201cSend again now\u201d to send it."
)


def _given_up(delivery: WebhookDelivery, now: datetime) -> dict[str, Any]:
    return {
        "last_error": DELIVERY_LOST.format(n=delivery.attempts),
        "next_attempt_at": None,
        "claimed_at": None,
    }


DELIVERY = Work(
    name="webhook",
    label="webhook delivery(ies)",
    func="integrations.tasks.deliver_webhook",
    model=WebhookDelivery,
    queued=WebhookDelivery.Status.PENDING,
    running=WebhookDelivery.Status.SENDING,
    failed=WebhookDelivery.Status.FAILED,
    waiting=WebhookDelivery.Status.RETRYING,
    due="next_attempt_at",
    queued_since="next_attempt_at",
    attempts="attempts",
    heartbeat="claimed_at",
    max_attempts=lambda: int(settings.WEBHOOK_MAX_ATTEMPTS),
    give_up=_given_up,
    # Not queued, but not failed either: it stays pending and is sent when Redis is back.
    unreachable=lambda now: {},
    unreachable_fails=False,
    on_claim=lambda now: {"last_attempt_at": now},
)
