"""The reviewer sees why a bundle was cut where it was: each boundary's cues, with the text."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from engine.classifiers.offline import OfflineClassifier
from tests.conftest import ready_document
from tests.review.conftest import escalate

pytestmark = pytest.mark.django_db

REPORT = (
    "Northwind Regional Hospital Laboratory\nSURGICAL PATHOLOGY REPORT\n"
    "Patient: {patient}   Accession #: {accession}\n\nFINAL DIAGNOSIS:\n"
    "Left breast, core biopsy: invasive ductal carcinoma.\n\nPage {page} of 2"
)


def test_the_packet_page_shows_each_cut_and_its_evidence(reviewer):
    pages = [
        REPORT.format(patient="Quill, Avery", accession="S24-10231", page=1),
        REPORT.format(patient="Quill, Avery", accession="S24-10231", page=2),
        REPORT.format(patient="Marsh, Robin", accession="S24-11872", page=1),
        REPORT.format(patient="Marsh, Robin", accession="S24-11872", page=2),
    ]
    output = OfflineClassifier().classify(pages)
    packet = escalate(ready_document(*pages, sha="e"), pages, output)
    client = Client()
    client.force_login(reviewer)
    page = client.get(reverse("review:packet", args=[packet.pk])).content.decode()
    assert 'id="boundaries"' in page
    assert "Page 3</a>: <strong>a new document starts</strong>" in page
    assert "the page counter starts again" in page and "S24-11872" in page
