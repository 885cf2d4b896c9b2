"""Django admin: every engine and review model is there, history is read-only, audit filters."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from review.models import AuditEvent
from tests.review.conftest import make_packet

pytestmark = pytest.mark.django_db

MODELS = [
    "reliability_run",
    "reliability_attempt",
    "reliability_issue",
    "review_reviewpacket",
    "review_review",
    "review_groundtruth",
    "review_auditevent",
    "reliability_extraction",
    "reliability_extractiontemplate",
    "reliability_apitoken",
]
READ_ONLY = [
    "reliability_run",
    "reliability_attempt",
    "reliability_issue",
    "review_review",
    "review_groundtruth",
    "review_auditevent",
]


@pytest.fixture
def superuser_client(superuser):
    client = Client()
    client.force_login(superuser)
    return client


@pytest.mark.parametrize("model", MODELS)
def test_every_model_is_listed_in_the_admin(superuser_client, model):
    make_packet()
    assert superuser_client.get(reverse(f"admin:{model}_changelist")).status_code == 200


@pytest.mark.parametrize("model", READ_ONLY)
def test_history_cannot_be_added_or_deleted_in_the_admin(superuser_client, model):
    assert superuser_client.get(reverse(f"admin:{model}_add")).status_code == 403


def test_admins_filter_the_audit_log(superuser_client, reviewer):
    packet = make_packet()
    viewer = Client()
    viewer.force_login(reviewer)
    viewer.get(reverse("review:packet", args=[packet.pk]))
    viewer.post(reverse("review:validate", args=[packet.pk]))
    url = reverse("admin:review_auditevent_changelist")
    decided = superuser_client.get(url, {"action__exact": "decided"})
    assert decided.status_code == 200
    assert decided.context["cl"].result_count == 1
    assert AuditEvent.objects.count() == 2
