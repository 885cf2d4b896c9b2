"""A client built from the schema alone (openapi-python-client) uploads a document, follows
it, lists it and reads its result: the schema is enough to use the API."""

from __future__ import annotations

import importlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from api.urls import openapi_schema
from benchmarks.pdfgen import text_pdf
from reliability.services import api_token_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
REPORT = [
    [
        "SURGICAL PATHOLOGY REPORT",
        "Specimen: left breast, core needle biopsy.",
        "FINAL DIAGNOSIS",
        "Invasive ductal carcinoma, Nottingham grade 2.",
        "Electronically signed out by the pathologist on 03/14/2025.",
    ]
]


@pytest.fixture
def generated(tmp_path, monkeypatch):
    """The client package generated from /api/v1/openapi.json, importable."""
    schema = tmp_path / "openapi.json"
    schema.write_text(json.dumps(openapi_schema()))
    package = tmp_path / "generated" / "vetted_client"
    subprocess.run(
        [
            str(GENERATOR),
            "generate",
            "--path",
            str(schema),
            "--output-path",
            str(package),
            "--meta",
            "none",
        ],
        check=True,
        capture_output=True,
        timeout=120,
        env={"PATH": str(Path(sys.executable).parent)},
    )
    monkeypatch.syspath_prepend(str(package.parent))
    yield importlib.import_module("vetted_client")
    for name in [m for m in sys.modules if m.split(".")[0] == "vetted_client"]:
        del sys.modules[name]


def test_a_client_generated_from_the_schema_uploads_follows_and_reads(
    live_server, django_user_model, generated
):
    from review.roles import REVIEWERS, ensure_roles

    user = django_user_model.objects.create_user(username="lims", password="x")
    user.groups.add(ensure_roles()[REVIEWERS])
    token = api_token_create(user=user, name="generated")[1]

    client_module = importlib.import_module("vetted_client.client")
    submit = importlib.import_module("vetted_client.api.documents.submit_document")
    status = importlib.import_module("vetted_client.api.documents.document_status")
    listing = importlib.import_module("vetted_client.api.documents.list_documents")
    result = importlib.import_module("vetted_client.api.documents.document_result")
    models = importlib.import_module("vetted_client.models")
    types = importlib.import_module("vetted_client.types")

    client = client_module.AuthenticatedClient(base_url=live_server.url, token=token)
    form = next(getattr(models, name) for name in dir(models) if name.endswith("SubmitForm"))
    body = form(
        file=types.File(
            payload=io.BytesIO(text_pdf(REPORT)),
            file_name="report.pdf",
            mime_type="application/pdf",
        )
    )
    submitted = submit.sync_detailed(client=client, body=body)
    assert submitted.status_code == 202, submitted.content
    document_id = submitted.parsed.id

    followed = status.sync(client=client, document_id=document_id)
    assert followed.status == "completed"  # jobs run inline in tests

    page = listing.sync(client=client, limit=10)
    assert [item.id for item in page.items] == [document_id]
    assert page.next_cursor is None

    answer = result.sync_detailed(client=client, document_id=document_id)
    assert answer.status_code == 200, answer.content
    parsed = answer.parsed
    assert parsed.label.state in ("final", "provisional", "awaiting_review")
    if parsed.label.state == "awaiting_review":
        assert parsed.type_ is None and parsed.decision == "ESCALATE_TO_SME"
    else:
        assert parsed.type_ == "pathology"
