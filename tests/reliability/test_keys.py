"""Keys: no serving with DEBUG off and the public or an empty SECRET_KEY; stored models are
signed with a key of their own derived from SECRET_KEY, keep loading through a rotation
(SECRET_KEY_FALLBACKS) and are re-signed then; a model that fails its signature is shown as
refused in the admin and on the metrics page, and never used."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from config.env import DEFAULT_SECRET_KEY, secret_key_refusal
from engine.classifiers import trained
from engine.pipeline import PRESETS
from reliability import training
from reliability.deid import deid_key
from reliability.models import TrainedClassifierModel
from tests.reliability.test_trained_classifier import records

ROOT = Path(__file__).resolve().parents[2]
OLD = "an-old-key-that-was-in-service-for-a-year-0123456789"
NEW = "the-new-key-after-the-rotation-of-this-month-9876543210"


def test_the_public_empty_or_short_key_is_refused_only_with_debug_off():
    for key in (DEFAULT_SECRET_KEY, "", "   "):
        assert "SECRET_KEY is not set" in (secret_key_refusal(key, debug=False) or "")
        assert secret_key_refusal(key, debug=True) is None  # the quick start
    assert "shorter" in (secret_key_refusal("short", debug=False) or "")
    assert secret_key_refusal(NEW, debug=False) is None
    refused = secret_key_refusal(NEW, debug=False, fallbacks=[DEFAULT_SECRET_KEY])
    assert "FALLBACKS" in (refused or "")


def _start_wsgi(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG")}
    return subprocess.run(
        [sys.executable, "-c", "import config.wsgi"],
        cwd=ROOT,
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_the_wsgi_application_refuses_to_start_in_production_with_the_default_key():
    refused = _start_wsgi(DEBUG="0")
    assert refused.returncode != 0
    assert "SECRET_KEY is not set" in refused.stderr
    assert _start_wsgi(DEBUG="0", SECRET_KEY=NEW).returncode == 0
    assert _start_wsgi(DEBUG="1").returncode == 0  # the quick start, with the default


def test_deidentification_and_model_signing_keys_are_derived_and_differ(settings):
    settings.SECRET_KEY, settings.DEID_KEY = NEW, ""
    keys = {deid_key(), training.signing_key(), NEW.encode()}
    assert len(keys) == 3  # neither is SECRET_KEY itself, nor each other


@pytest.fixture
def stored(settings) -> TrainedClassifierModel:
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = OLD, []
    training._cache.clear()
    training.train(records(12), source="test", preset=PRESETS["clinical"])
    row = TrainedClassifierModel.objects.get(active=True)
    training._cache.clear()
    return row


@pytest.mark.django_db
def test_a_rotated_key_keeps_the_active_model_and_re_signs_it(settings, stored):
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = NEW, [OLD]
    assert training.model_check(stored).code == training.MODEL_TRUSTED
    model = training.active_model()
    assert model is not None and model.version == stored.version
    stored.refresh_from_db()
    blob = bytes(stored.blob)
    assert trained.signed_with(blob, training.signing_keys()) == 0  # now the current key's
    assert hashlib.sha256(blob).hexdigest() == stored.blob_sha256
    # The old key can go: the model still loads.
    settings.SECRET_KEY_FALLBACKS = []
    training._cache.clear()
    assert training.active_model() is not None


@pytest.mark.django_db
def test_without_the_old_key_the_model_is_refused_and_the_pages_say_so(
    settings, stored, admin_user
):
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = NEW, []
    assert training.active_model() is None  # never used
    check = training.model_check(stored)
    assert check.code == training.MODEL_REFUSED and "SECRET_KEY_FALLBACKS" in check.message

    client = Client()
    client.force_login(admin_user)
    change = client.get(
        reverse("admin:reliability_trainedclassifiermodel_change", args=[stored.pk])
    )
    assert "Refused: its signature matches neither" in change.content.decode()
    listing = client.get(reverse("admin:reliability_trainedclassifiermodel_changelist"))
    assert "Refused: its signature matches neither" in listing.content.decode()
    metrics = client.get(reverse("review:metrics")).content.decode()
    assert "data-model-refused" in metrics


@pytest.mark.django_db
def test_a_tampered_model_re_signed_with_a_key_we_do_not_hold_is_refused(settings, stored):
    blob = bytes(stored.blob)
    forged = trained.resign(blob[:-10] + bytes(10), training._derived(DEFAULT_SECRET_KEY))
    TrainedClassifierModel.objects.filter(pk=stored.pk).update(
        blob=forged, blob_sha256=hashlib.sha256(forged).hexdigest()
    )
    stored.refresh_from_db()
    assert training.model_check(stored).code == training.MODEL_REFUSED
    assert training.active_model() is None
