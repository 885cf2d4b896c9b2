"""The JSON API end to end through HTTP (a live server and a real HTTP client)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid

import pytest

from api.urls import openapi_schema
from benchmarks.pdfgen import text_pdf
from documents.models import Document
from reliability.services import api_token_create

pytestmark = pytest.mark.django_db(transaction=True)

REPORT = [
    [
        "SURGICAL PATHOLOGY REPORT",
        "FINAL DIAGNOSIS",
        "Left breast, core biopsy: invasive ductal carcinoma, Nottingham grade 2.",
        "Estrogen receptor (ER): positive, 95%.",
        "Ki-67: 20%.",
        "Date of report: 03/14/2025",
    ]
]


def call(url, *, token=None, method="GET", fields=None, file=None):
    boundary = uuid.uuid4().hex
    data = None
    headers = {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if method == "POST":
        parts = []
        for name, value in (fields or {}).items():
            parts.append(
                f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                f"{value}\r\n".encode()
            )
        if file is not None:
            filename, content = file
            parts.append(
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                f'filename="{filename}"\r\nContent-Type: application/pdf\r\n\r\n'.encode()
                + content
                + b"\r\n"
            )
        data = b"".join(parts) + f"--{boundary}--\r\n".encode()
        headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as failure:
        return failure.code, json.loads(failure.read())


def lab_user(django_user_model, username):
    """An API client's user: tokens need a role, as the browser does."""
    from review.roles import REVIEWERS, ensure_roles

    user = django_user_model.objects.create_user(username=username, password="x")
    user.groups.add(ensure_roles()[REVIEWERS])
    return user


@pytest.fixture
def token(django_user_model):
    return api_token_create(user=lab_user(django_user_model, "lims"), name="lims")[1]


def test_without_a_token_the_api_refuses(live_server):
    status, body = call(
        f"{live_server.url}/api/v1/documents/", method="POST", file=("a.pdf", text_pdf(REPORT))
    )
    assert status == 401
    assert body["error"] == "Authentication required: send 'Authorization: Bearer <token>'."
    status, body = call(f"{live_server.url}/api/v1/documents/{uuid.uuid4()}/", token="vt_nope")
    assert status == 401 and "not valid" in body["error"]
    assert not Document.objects.exists()


@pytest.mark.parametrize(
    "fields,message",
    [
        (
            {"quality_threshold": "1.5"},
            "quality_threshold: Input should be less than or equal to 1",
        ),
        ({"max_iterations": "0"}, "max_iterations: Input should be greater than or equal to 1"),
        ({"preset": "turbo"}, "preset must be one of real-time, batch, clinical"),
        ({"type_override": "xray"}, "type_override: Input should be"),
        ({"colour": "blue"}, "colour: Extra inputs are not permitted"),
        ({"options": "{not json"}, "The 'options' field is not valid JSON."),
    ],
)
def test_bad_options_are_refused_with_a_clear_message(live_server, token, fields, message):
    status, body = call(
        f"{live_server.url}/api/v1/documents/",
        token=token,
        method="POST",
        fields=fields,
        file=("a.pdf", text_pdf(REPORT)),
    )
    assert status == 400
    assert message in body["error"]
    assert not Document.objects.exists()


def test_a_missing_file_and_a_bad_file_are_refused(live_server, token):
    status, body = call(f"{live_server.url}/api/v1/documents/", token=token, method="POST")
    assert (status, body["error"]) == (400, "Attach the document as the multipart field 'file'.")
    status, body = call(
        f"{live_server.url}/api/v1/documents/",
        token=token,
        method="POST",
        file=("scan.pdf", b"not a pdf"),
    )
    # Any bytes are a file the schema allows: a file that is not a document fails as its own
    # document, and its status says why.
    assert status == 202 and body["status"] == "failed"
    status, polled = call(live_server.url + body["status_url"], token=token)
    assert status == 200 and polled["status"] == "failed" and "PDF" in polled["error"]
    assert Document.objects.get(pk=body["id"]).error_code == "not_pdf"


def test_submit_poll_and_fetch_the_result_with_loop_history(live_server, token, settings):
    settings.AUDIT_DAILY_MINIMUM = False  # not drawn for a blind audit: the result is shown
    settings.AUDIT_SAMPLE_RATE = 0.0
    status, body = call(
        f"{live_server.url}/api/v1/documents/",
        token=token,
        method="POST",
        fields={
            "options": json.dumps(
                {
                    "enable_reliability_loop": True,
                    "quality_threshold": 0.9,
                    "max_iterations": 2,
                    "preset": "batch",
                }
            )
        },
        file=("path.pdf", text_pdf(REPORT)),
    )
    assert status == 202, body
    document_id = body["id"]
    status, polled = call(live_server.url + body["status_url"], token=token)
    assert status == 200 and polled["status"] == "completed"  # inline jobs: already done
    assert polled["options"]["max_iterations"] == 2

    status, result = call(live_server.url + body["result_url"] + "?history=true", token=token)
    assert status == 200
    assert result["type"] == "pathology"
    [segment] = result["fields"]
    fields = segment["fields"]
    assert fields["grade"]["value"] == "Nottingham grade 2" and fields["grade"]["status"] == "found"
    assert fields["ki67"]["value"] == "20%"
    assert fields["report_date"]["value"] == "03/14/2025"
    loop = segment["loop"]
    assert loop["iterations"] == len(loop["history"]) <= 2
    assert loop["final_score"] >= loop["history"][0]["score"]
    assert isinstance(result["processing_time_seconds"], float)

    status, again = call(
        f"{live_server.url}/api/v1/documents/",
        token=token,
        method="POST",
        file=("copy.pdf", text_pdf(REPORT)),
    )
    # The same client sending the same file again gets its document back, not a refusal.
    assert status == 200 and again["duplicate"] is True and again["id"] == document_id
    assert again["status"] == "completed"
    assert Document.objects.get(pk=document_id).uploaded_by.username == "lims"


def test_a_client_sees_only_its_own_documents(live_server, token, django_user_model):
    status, body = call(
        f"{live_server.url}/api/v1/documents/",
        token=token,
        method="POST",
        file=("path.pdf", text_pdf(REPORT)),
    )
    other = api_token_create(user=lab_user(django_user_model, "other"), name="other")[1]
    status, refused = call(live_server.url + body["status_url"], token=other)
    assert (status, refused["error"]) == (404, "No such document for this token.")


def test_a_duplicate_from_another_client_reveals_nothing_about_the_first_upload(
    live_server, token, django_user_model
):
    status, first = call(
        f"{live_server.url}/api/v1/documents/",
        token=token,
        method="POST",
        file=("Smith_John_DOB_1960-01-02_pathology.pdf", text_pdf(REPORT)),
    )
    assert status == 202
    other = api_token_create(user=lab_user(django_user_model, "other"), name="other")[1]
    status, refused = call(
        f"{live_server.url}/api/v1/documents/",
        token=other,
        method="POST",
        file=("mine.pdf", text_pdf(REPORT)),
    )
    assert status == 409 and refused["code"] == "duplicate"
    text = json.dumps(refused)
    assert "Smith" not in text and "DOB" not in text and first["id"] not in text
    assert "another account" in refused["error"]
    assert Document.objects.count() == 1


def test_a_token_whose_user_has_no_role_is_refused_everywhere(
    live_server, token, django_user_model
):
    status, body = call(
        f"{live_server.url}/api/v1/documents/",
        token=token,
        method="POST",
        file=("path.pdf", text_pdf(REPORT)),
    )
    document = Document.objects.get(pk=body["id"])
    nobody = django_user_model.objects.create_user("nobody", password="x")
    Document.objects.filter(pk=document.pk).update(uploaded_by=nobody)
    key = api_token_create(user=nobody, name="no role")[1]
    status, refused = call(
        f"{live_server.url}/api/v1/documents/",
        token=key,
        method="POST",
        file=("other.pdf", text_pdf([["A different report."]])),
    )
    assert status == 403 and "no role" in refused["error"]
    for url in (body["status_url"], body["result_url"], "/api/v1/ground-truth/"):
        status, refused = call(live_server.url + url, token=key)
        assert status == 403, url
    assert Document.objects.count() == 1


def test_the_openapi_schema_is_served_and_describes_every_path(live_server, settings):
    settings.GEMINI_API_KEY = "configured"  # /evaluate/ is served only with a model
    with urllib.request.urlopen(f"{live_server.url}/api/v1/openapi.json") as response:
        schema = json.loads(response.read())
    assert schema == json.loads(json.dumps(openapi_schema()))
    assert set(schema["paths"]) == {
        "/api/v1/documents/",
        "/api/v1/documents/{document_id}/",
        "/api/v1/documents/{document_id}/result/",
        "/api/v1/documents/{document_id}/fhir/",
        "/api/v1/evaluate/",
        "/api/v1/ground-truth/",
    }
    settings.GEMINI_API_KEY = ""
    assert "/api/v1/evaluate/" not in openapi_schema()["paths"]
    export = schema["paths"]["/api/v1/ground-truth/"]["get"]
    assert "application/fhir+json" in export["responses"]["200"]["content"]
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def test_the_schema_of_the_upload_is_generated_from_the_processing_options():
    from engine.schemas import DOC_TYPES
    from reliability.fields import ProcessingOptions

    body = openapi_schema()["paths"]["/api/v1/documents/"]["post"]["requestBody"]
    schema = body["content"]["multipart/form-data"]["schema"]
    assert set(schema["properties"]) == set(ProcessingOptions.model_fields) | {"file"}
    assert schema["required"] == ["file"]
    assert schema["properties"]["file"]["format"] == "binary"
    assert schema["properties"]["type_override"]["enum"] == [t.value for t in DOC_TYPES]
    # A form field is a string or absent: nothing the schema allows is a null the server refuses.
    assert '"null"' not in json.dumps(schema)
    assert "$defs" not in json.dumps(schema)


def test_a_malformed_query_parameter_is_a_json_error(live_server, token):
    status, body = call(
        f"{live_server.url}/api/v1/documents/",
        token=token,
        method="POST",
        file=("path.pdf", text_pdf(REPORT)),
    )
    status, refused = call(live_server.url + body["result_url"] + "?history=maybe", token=token)
    assert status == 400 and refused["error"].startswith("Invalid request: history:")
    assert refused["code"] == "invalid_request"


def test_staff_status_adds_no_api_reads_beyond_the_role(django_user_model):
    """Staff status is for Django admin: a staff Reviewer's token reads only what it submitted;
    every document takes the Admins role (api.access.may_read_all)."""
    from django.db import transaction
    from django.test import Client

    from review.roles import ADMINS, ensure_roles
    from tests.review.test_exports import accepted

    staff = lab_user(django_user_model, "sam")
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    admin = django_user_model.objects.create_user(username="ada", password="x")
    admin.groups.add(ensure_roles()[ADMINS])
    with transaction.atomic():  # as the services record ground truth
        mine = accepted("pathology", sha="a").document
        theirs = accepted("radiology", sha="b").document
    Document.objects.filter(pk=mine.pk).update(uploaded_by=staff)

    def reads(user, document):
        client = Client(HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=user, name='t')[1]}")
        paths = ["/", "/result/", "/fhir/"]
        return [client.get(f"/api/v1/documents/{document.pk}{p}").status_code for p in paths]

    def exported(user):
        client = Client(HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=user, name='t')[1]}")
        lines = client.get("/api/v1/ground-truth/", {"format": "jsonl"}).getvalue().splitlines()
        return sorted(json.loads(line)["document_id"] for line in lines)

    assert reads(staff, mine) == [200, 200, 200]
    assert reads(staff, theirs) == [404, 404, 404]
    assert exported(staff) == [str(mine.pk)]
    assert reads(admin, theirs) == [200, 200, 200]
    assert exported(admin) == sorted([str(mine.pk), str(theirs.pk)])


# -- access that ends: expiry, deactivation, a lost role -------------------------------------------


UNKNOWN = "/api/v1/documents/00000000-0000-0000-0000-000000000000/"


def api_get(key, path=UNKNOWN):
    from django.test import Client

    response = Client(HTTP_AUTHORIZATION=f"Bearer {key}").get(path)
    return response.status_code, response.json()


def test_a_token_expires_after_api_token_days_with_a_clear_401(django_user_model, settings):
    from datetime import timedelta

    from django.utils import timezone

    from reliability.models import ApiToken

    settings.API_TOKEN_DAYS = 30
    user = lab_user(django_user_model, "lims")
    token, key = api_token_create(user=user, name="lims")
    assert timedelta(days=29, hours=23) < token.expires_at - timezone.now() <= timedelta(days=30)
    status, _ = api_get(key)
    assert status == 404  # live: the document is unknown, not the token

    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now())
    status, refused = api_get(key)
    assert status == 401 and refused["code"] == "token_expired"
    assert refused["error"].startswith(f"The API token {token.prefix}\u2026 expired on ")
    assert "new one" in refused["error"]


def test_a_token_lasts_at_most_api_token_days(django_user_model, settings):
    settings.API_TOKEN_DAYS = 30
    user = lab_user(django_user_model, "lims")
    assert api_token_create(user=user, name="short", days=7)[0].expires_at
    for days in (0, 31):
        with pytest.raises(ValueError, match="1 to 30 days"):
            api_token_create(user=user, name="long", days=days)


def test_a_deactivated_users_token_is_refused_at_once(django_user_model):
    user = lab_user(django_user_model, "lims")
    key = api_token_create(user=user, name="lims")[1]
    assert api_get(key)[0] == 404  # live
    user.is_active = False
    user.save(update_fields=["is_active"])
    status, refused = api_get(key)
    assert (status, refused["code"]) == (401, "user_inactive")


def test_a_token_stops_at_once_when_its_user_loses_the_role(django_user_model):
    from review.roles import REVIEWERS, ensure_roles

    user = lab_user(django_user_model, "lims")
    key = api_token_create(user=user, name="lims")[1]
    assert api_get(key)[0] == 404
    user.groups.remove(ensure_roles()[REVIEWERS])
    status, refused = api_get(key)
    assert (status, refused["code"]) == (403, "no_role")
    user.groups.add(ensure_roles()[REVIEWERS])  # the role back: the same token works again
    assert api_get(key)[0] == 404


def test_a_revoked_token_is_refused(django_user_model):
    from reliability.services import api_tokens_revoke

    user = lab_user(django_user_model, "lims")
    key = api_token_create(user=user, name="lims")[1]
    assert api_tokens_revoke(user=user) == 1
    status, refused = api_get(key)
    assert (status, refused["code"]) == (401, "token_invalid")


def test_create_api_token_prints_the_expiry_and_admin_shows_it(django_user_model, settings):
    import io

    from django.core.management import call_command
    from django.core.management.base import CommandError
    from django.test import Client

    from reliability.models import ApiToken
    from review.roles import ADMINS, ensure_roles

    settings.API_TOKEN_DAYS = 90
    lab_user(django_user_model, "lims")
    out = io.StringIO()
    call_command("create_api_token", "lims", "--days", "10", stdout=out)
    token = ApiToken.objects.get()
    assert f"expires {token.expires_at:%Y-%m-%d %H:%M} UTC" in out.getvalue()
    with pytest.raises(CommandError, match="1 to 90 days"):
        call_command("create_api_token", "lims", "--days", "91", stdout=io.StringIO())

    admin = django_user_model.objects.create_user("ada", password="x", is_staff=True)
    admin.groups.add(ensure_roles()[ADMINS])
    client = Client()
    client.force_login(admin)
    page = client.get("/admin/reliability/apitoken/").content.decode()
    assert "Expires at" in page and "live" in page
