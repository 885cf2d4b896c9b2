"""Each way the API broke its contract, as a test: errors that were HTML, plain text or had
no code; a body lost to a redirect; a lower-case scheme; a result read from the latest run;
no way to list documents. Through Django's test client (every middleware, no live server)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from api.urls import openapi_schema
from benchmarks.pdfgen import text_pdf
from documents.models import Document
from reliability.models import Run
from reliability.services import api_token_create
from review.models import AuditSample, GroundTruth
from tests.conftest import ready_document

pytestmark = pytest.mark.django_db

REPORT = [["SURGICAL PATHOLOGY REPORT", "FINAL DIAGNOSIS", "Benign breast tissue."]]


@pytest.fixture
def lims(django_user_model):
    from review.roles import REVIEWERS, ensure_roles

    user = django_user_model.objects.create_user(username="lims", password="x")
    user.groups.add(ensure_roles()[REVIEWERS])
    return user


@pytest.fixture
def auth(lims):
    return {"HTTP_AUTHORIZATION": f"Bearer {api_token_create(user=lims, name='t')[1]}"}


def body(response):
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    return json.loads(response.content)


# -- every error is JSON with a code -----------------------------------------------------------


@pytest.mark.parametrize(
    "method,path,status,code",
    [
        ("get", "/api/v1/documents/not-a-uuid/", 404, "not_found"),
        ("get", "/api/v1/documents/not-a-uuid/result/", 404, "not_found"),
        ("get", "/api/v1/no-such-thing/", 404, "not_found"),
        ("delete", "/api/v1/documents/", 405, "method_not_allowed"),
        ("put", "/api/v1/evaluate/", 405, "method_not_allowed"),
        ("get", f"/api/v1/documents/{'0' * 8}-0000-4000-8000-{'0' * 12}/", 404, "not_found"),
        ("get", "/api/v1/documents/?limit=0", 400, "invalid_request"),
        ("get", "/api/v1/documents/?cursor=garbage", 400, "invalid_request"),
        ("get", "/api/v1/ground-truth/?start=0", 400, "invalid_request"),
        ("get", "/api/v1/ground-truth/?type=letter", 400, "invalid_request"),
        ("get", "/api/v1/ground-truth/?state=maybe", 400, "invalid_request"),
        ("get", "/api/v1/ground-truth/?deidentify=yes", 400, "invalid_request"),
    ],
)
def test_every_error_under_the_api_is_json_with_a_code(client, auth, method, path, status, code):
    response = getattr(client, method)(path, **auth)
    assert response.status_code == status
    answer = body(response)
    assert answer["code"] == code and answer["error"]
    if status == 405:
        assert response["Allow"]


def test_a_missing_or_lower_case_authorization_header(client, auth):
    missing = client.get("/api/v1/documents/")
    assert missing.status_code == 401 and body(missing)["code"] == "unauthenticated"
    key = auth["HTTP_AUTHORIZATION"].removeprefix("Bearer ")
    for scheme in ("bearer", "BEARER", "Bearer"):
        answer = client.get("/api/v1/documents/", HTTP_AUTHORIZATION=f"{scheme} {key}")
        assert answer.status_code == 200, (scheme, answer.content)


def test_a_multipart_post_without_a_body_is_a_400_not_a_500(client, auth):
    response = client.generic(
        "POST", "/api/v1/documents/", b"", content_type="multipart/form-data", **auth
    )
    assert response.status_code == 400
    assert body(response)["code"] in ("invalid_multipart", "file_missing")


def test_a_post_without_the_trailing_slash_keeps_its_body(client, auth):
    response = client.post(
        "/api/v1/documents",
        {"file": _upload("slashless.pdf", text_pdf(REPORT)), "preset": "clinical"},
        **auth,
    )
    assert response.status_code == 202, response.content
    document = Document.objects.get(pk=body(response)["id"])
    assert document.original_filename == "slashless.pdf"
    assert document.options == {"preset": "clinical", "enable_reliability_loop": True}


def test_a_file_that_is_not_a_document_fails_its_own_document(client, auth, lims):
    response = client.post("/api/v1/documents/", {"file": _upload("scan.png", PNG)}, **auth)
    assert response.status_code == 202
    answer = body(response)
    assert answer["status"] == "failed"
    document = Document.objects.get(pk=answer["id"])
    assert document.status == Document.Status.FAILED and document.error_code == "unsupported"
    assert not document.file and document.sha256 is None  # the file is not kept
    status = body(client.get(answer["status_url"], **auth))
    assert status["status"] == "failed" and "not a PDF" in status["error"]


def test_an_empty_options_field_is_no_options(client, auth):
    response = client.post(
        "/api/v1/documents/", {"file": _upload("a.pdf", text_pdf(REPORT)), "options": ""}, **auth
    )
    assert response.status_code == 202, response.content


def test_not_ready_and_no_ground_truth_have_codes(client, auth, lims):
    document = ready_document("FINAL DIAGNOSIS: benign.", uploaded_by=lims, sha="n")
    result = client.get(f"/api/v1/documents/{document.pk}/result/", **auth)
    assert result.status_code == 409 and body(result)["code"] == "not_ready"
    fhir = client.get(f"/api/v1/documents/{document.pk}/fhir/", **auth)
    assert fhir.status_code == 409 and body(fhir)["code"] == "no_ground_truth"
    other = client.get(f"/api/v1/documents/{'1' * 32}/result/", **auth)
    assert other.status_code == 404 and body(other)["code"] == "not_found"


# -- the schema says what the server does -----------------------------------------------------


def test_the_schema_names_every_enum_and_error_the_server_answers():
    schema = json.loads(json.dumps(openapi_schema()))
    export = schema["paths"]["/api/v1/ground-truth/"]["get"]
    params = {p["name"]: p["schema"] for p in export["parameters"]}
    enum = lambda s: next(v["enum"] for v in s.get("anyOf", [s]) if "enum" in v)  # noqa: E731
    assert set(enum(params["type"])) == {
        "clinical_note",
        "pathology",
        "genomic",
        "radiology",
        "other",
    }
    assert set(enum(params["source"])) == set(GroundTruth.Source.values) - {"WITHDRAWN"}
    assert set(enum(params["state"])) == {"all", "final", "provisional"}
    assert params["start"]["anyOf"][0]["format"] == "date"
    fhir = export["responses"]["200"]["content"]["application/fhir+json"]["schema"]
    assert fhir == {"type": "object"}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status in ("400", "401", "403", "413", "429"):
                assert status in operation["responses"], (method, path, status)
    evaluate = schema["components"]["schemas"]
    for shape in ("FilterRequest", "ScoreRequest", "ExtractRequest", "ExtractEnumRequest"):
        assert "question" in evaluate[shape]["required"], shape
    assert "options" in evaluate["ExtractEnumRequest"]["required"]


# -- result reads where the label stands ------------------------------------------------------


def test_result_after_a_rerun_of_an_escalated_document_still_awaits_review(client, auth, lims):
    from tests.review.conftest import make_packet

    packet = make_packet(sha="r")
    document = packet.document
    Document.objects.filter(pk=document.pk).update(uploaded_by=lims)
    # manage.py rerun: a newer run accepted, compared with the open packet (it changes nothing).
    Run.objects.create(
        document=document,
        preset="clinical",
        classifier="offline",
        model="test",
        prompt_version="test",
        status=Run.Status.COMPLETED,
        final_decision="AUTO_ACCEPT",
    )
    answer = body(client.get(f"/api/v1/documents/{document.pk}/result/", **auth))
    assert answer["label"]["state"] == "awaiting_review"
    assert answer["type"] is None and answer["segments"] == []
    assert answer["decision"] == "ESCALATE_TO_SME"
    assert answer["review"]["status"] == "pending"


def accepted(document, doc_type, state):
    """An accepted run of ``document`` and the machine label it wrote, in ``state``."""
    run = Run.objects.create(
        document=document,
        preset="clinical",
        classifier="offline",
        model="m",
        prompt_version="p",
        status=Run.Status.COMPLETED,
        final_decision="AUTO_ACCEPT",
    )
    truth = GroundTruth.objects.create(
        document=document,
        run=run,
        source=GroundTruth.Source.AUTO_ACCEPTED,
        state=state,
        dominant_type=doc_type,
        classification={"dominant_type_overall": doc_type, "segments": []},
    )
    return run, truth


def test_result_gives_a_final_label_its_state_source_and_version(client, auth, lims):
    document = ready_document("FINAL DIAGNOSIS: benign.", uploaded_by=lims, sha="p")
    accepted(document, "pathology", GroundTruth.State.FINAL)
    answer = body(client.get(f"/api/v1/documents/{document.pk}/result/", **auth))
    assert answer["label"] == {"state": "final", "source": "AUTO_ACCEPTED", "version": 1}
    assert answer["type"] == "pathology"


# -- the list ---------------------------------------------------------------------------------


def test_the_list_pages_by_cursor_without_skipping_or_repeating(client, auth, lims):
    documents = [ready_document("x", uploaded_by=lims, sha=c) for c in "abcdefg"]
    base = timezone.now()
    for age, document in enumerate(documents):
        Document.objects.filter(pk=document.pk).update(created_at=base - timedelta(minutes=age))
    seen, cursor = [], ""
    while True:
        page = body(client.get(f"/api/v1/documents/?limit=3&cursor={cursor}", **auth))
        seen += [item["id"] for item in page["items"]]
        if not (cursor := page["next_cursor"]):
            break
    assert seen == [str(d.pk) for d in documents]  # newest first, each once


def test_the_list_shows_only_the_callers_documents_and_filters(
    client, auth, lims, django_user_model
):
    mine = ready_document("x", uploaded_by=lims, sha="m")
    ready_document("x", uploaded_by=django_user_model.objects.create_user("o"), sha="o")
    items = body(client.get("/api/v1/documents/", **auth))["items"]
    assert [item["id"] for item in items] == [str(mine.pk)]
    assert items[0]["status"] == "classifying" and items[0]["label"]["state"] == "none"
    assert body(client.get("/api/v1/documents/?status=completed", **auth))["items"] == []


def test_a_label_filter_cannot_tell_a_hidden_label_by_elimination(client, auth, lims):
    document = ready_document("x", uploaded_by=lims, sha="h")
    run, truth = accepted(document, "radiology", GroundTruth.State.PROVISIONAL)
    AuditSample.objects.create(
        run=run,
        document=document,
        accepted_truth=truth,
        machine_type="radiology",
        confidence=0.9,
        band="high",
        rate=1.0,
        reason="sampled",
        sampled_on=timezone.now().date(),
    )
    listed = body(client.get("/api/v1/documents/", **auth))["items"]
    assert listed[0]["label"] == {"state": "checking", "source": None, "version": None}
    assert listed[0]["type"] is None
    for query in (
        "type=radiology",
        "type=pathology",
        "source=AUTO_ACCEPTED",
        "label_state=provisional",
    ):
        assert body(client.get(f"/api/v1/documents/?{query}", **auth))["items"] == [], query
    assert "radiology" not in client.get("/api/v1/documents/", **auth).content.decode()


PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x00\x00\x00\x00:~"
    b"\x9bU\x00\x00\x00\nIDATx\x9cc`\x00\x00\x00\x02\x00\x01H\xaf\xa4q\x00\x00\x00\x00IEND\xaeB`\x82"
)


def _upload(name, content):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, content)


@pytest.mark.parametrize("value,status", [("True", 202), ("false", 202), ("1", 400), ("yes", 400)])
def test_a_form_boolean_is_true_or_false_in_any_case(client, auth, value, status):
    response = client.post(
        "/api/v1/documents/",
        {
            "file": _upload(f"b-{value}.pdf", text_pdf([*REPORT, [value]])),
            "enable_reliability_loop": value,
        },
        **auth,
    )
    assert response.status_code == status, response.content
    if status == 400:
        assert body(response) == {
            "error": "Invalid options: enable_reliability_loop: use true or false.",
            "code": "invalid_options",
        }
