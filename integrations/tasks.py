"""RQ entry points for webhooks. Jobs take ids; PostgreSQL is the source of truth."""

from __future__ import annotations

import logging

from integrations import services

logger = logging.getLogger(__name__)


def deliver_webhook(delivery_id: str) -> str:
    """POST one delivery. Safe to run twice: only a due delivery is claimed and sent."""
    delivery = services.delivery_attempt(delivery_id=delivery_id)
    return "skipped" if delivery is None else delivery.status
