"""The packet page says which required or important fields of an extraction are uncertain,
and when its score does not vouch for its values (issue 37)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from reliability.models import Extraction
from tests.review.conftest import make_packet

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("page_panel")]

SURE = {"status": "found", "confidence": 0.9}


def page(user, packet) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("review:packet", args=[packet.pk]))
    assert response.status_code == 200
    return response.content.decode()


def extraction(packet, fields, score):
    return Extraction.objects.create(
        document=packet.document,
        run=packet.run,
        doc_type="pathology",
        status=Extraction.Status.COMPLETED,
        fields=fields,
        final_score=score,
    )


def test_uncertain_required_and_important_fields_are_named_on_the_packet_page(reviewer):
    packet = make_packet(sha="u")
    extraction(
        packet,
        {
            "histology": {**SURE, "value": "Invasive ductal carcinoma", "confidence": 0.5},
            "er_status": {"value": None, "status": "missing", "confidence": 0.0},
            "pr_status": {
                **SURE,
                "value": "Positive (90%, strong)",
                "canonical": "positive (90%, strong)",
            },
            "ki67": {"value": None, "status": "missing", "confidence": 0.0},  # optional
        },
        0.97,
    )
    body = page(reviewer, packet)
    assert "data-uncertain" in body
    warning = body.split("data-uncertain>", 1)[1].split("</p>", 1)[0]
    assert "Histology" in warning and "ER" in warning
    assert "PR" not in warning and "Ki" not in warning
    assert "reads as positive (90%, strong)" in body


def test_a_vouched_extraction_carries_no_warning_and_a_low_score_says_so(reviewer):
    packet = make_packet(sha="v")
    extraction(packet, {"histology": {**SURE, "value": "Invasive lobular carcinoma"}}, 0.97)
    body = page(reviewer, packet)
    assert "data-uncertain" not in body and "data-unvouched" not in body

    low = make_packet(sha="w")
    extraction(low, {"histology": {**SURE, "value": "Invasive lobular carcinoma"}}, 0.80)
    body = page(reviewer, low)
    assert "data-uncertain" not in body and "data-unvouched" in body
