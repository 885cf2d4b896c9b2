"""QUEUE_ORDER=learning: within a severity, the packets whose labels teach the model most come
first; pages still go by cursor, and "Next" follows the same order."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from review.models import ReviewPacket
from review.selectors import next_packet_for
from tests.review.conftest import make_packet

pytestmark = pytest.mark.django_db


def login(user):
    client = Client()
    client.force_login(user)
    return client


def test_within_a_severity_the_most_instructive_packets_come_first(reviewer, settings):
    settings.QUEUE_ORDER = "learning"
    settings.REVIEW_PAGE_SIZE = 3
    packets = [make_packet(sha=f"{i}") for i in range(7)]
    hour_ago = timezone.now() - timedelta(hours=1)
    ReviewPacket.objects.update(priority=1, created_at=hour_ago)
    ranks = [900, 100, 500, 100, 50, 700, 300]
    for packet, rank in zip(packets, ranks, strict=True):
        ReviewPacket.objects.filter(pk=packet.pk).update(learning_rank=rank)
    # A BLOCKER that teaches little still comes before every MAJOR.
    blocker = make_packet(sha="b")
    ReviewPacket.objects.filter(pk=blocker.pk).update(priority=0, learning_rank=999)
    expected = [blocker.pk] + [
        p.pk for p, _ in sorted(zip(packets, ranks, strict=True), key=lambda x: (x[1], x[0].pk))
    ]
    client = login(reviewer)
    seen, page = [], client.get(reverse("review:queue")).context["page"]
    seen += [p.pk for p in page.packets]
    while page.after:
        page = client.get(reverse("review:queue"), {"after": page.after}).context["page"]
        seen += [p.pk for p in page.packets]
    assert seen == expected
    back = client.get(reverse("review:queue"), {"before": page.before}).context["page"]
    assert [p.pk for p in back.packets] == expected[3:6]
    assert next_packet_for(reviewer).pk == blocker.pk
    # Arrival order (the default): the same packets oldest first, ranks ignored.
    settings.QUEUE_ORDER = "arrival"
    arrival = client.get(reverse("review:queue")).context["page"]
    assert [p.pk for p in arrival.packets] == [blocker.pk, packets[0].pk, packets[1].pk]
