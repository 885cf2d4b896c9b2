"""Events the apps announce (a document is ready, a run or a packet is decided, ground truth
changed). An app publishes inside the transaction of the change it reports; the receivers
that config.wiring connects (the webhooks) record what they need in that same transaction, so
an event exists if and only if its change committed.

Payloads carry ids, types and decisions only, never document text or filenames."""

from __future__ import annotations

from typing import Any

from django.db import models

from core.wiring import Hook


class Event(models.TextChoices):
    DOCUMENT_READY = "document.ready", "Document ready (ingested)"
    RUN_DECIDED = "run.decided", "Run decided (accepted or escalated)"
    PACKET_DECIDED = "packet.decided", "Packet decided by a clinician"
    GROUND_TRUTH_CHANGED = "ground_truth.changed", "Ground truth changed (new version)"
    PING = "ping", "Test event sent from the admin"


published: Hook[[str, dict[str, Any]], object] = Hook("event published")


def publish(kind: Event, data: dict[str, Any]) -> None:
    published(str(kind), data)
