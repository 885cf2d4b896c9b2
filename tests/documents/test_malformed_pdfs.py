"""No 5xx from a parser (issue 25, finding 9): malformed PDFs (page trees that loop, kids that
point at an ancestor, dictionaries without /Type, counts that lie, broken cross-reference
tables, files cut short, random corruptions) are uploaded through the form, the JSON API and
the bulk `ingest`; each is refused with a message, or becomes a document that is read or fails
with a message of its own. None fails the request."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from benchmarks.hostile import malformed_set
from documents import sandbox, tasks
from documents.models import Document
from documents.untrusted import pdf_facts
from documents.validation import UploadRefused, inspect_upload
from reliability.services import api_token_create

pytestmark = pytest.mark.django_db

MALFORMED = malformed_set()
LOOPS = ("pages_kids_itself", "kids_point_at_ancestor", "page_with_kids_loop", "kids_null")


def settled(document: Document) -> None:
    """A document made of a malformed file is read, or fails with a message of its own."""
    document.refresh_from_db()
    if document.status == Document.Status.UPLOADED:  # queued on commit, which tests skip
        assert tasks.ingest_document(str(document.pk)) in ("ready", "failed")
        document.refresh_from_db()
    assert document.status in (Document.Status.READY, Document.Status.FAILED), document.status
    if document.status == Document.Status.FAILED:
        assert document.error and "unexpectedly" not in document.error


@pytest.mark.parametrize("name", LOOPS)
def test_a_page_tree_that_refers_back_to_itself_is_damaged_not_an_error(name):
    facts = pdf_facts(MALFORMED[name], max_pages=500, max_points=3600)
    assert facts.damaged and facts.page_count == 0


def test_any_exception_from_the_sandboxed_check_is_a_refusal(monkeypatch):
    def raises(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("the reader failed in a way nobody foresaw")

    monkeypatch.setattr(sandbox, "run_sandboxed", raises)
    monkeypatch.setattr("documents.validation.run_sandboxed", raises)
    with pytest.raises(UploadRefused) as refused:
        inspect_upload(
            name="odd.pdf", data=MALFORMED["missing_type"], max_bytes=1 << 20, max_pages=9
        )
    assert refused.value.code == "corrupt"
    assert refused.value.message.startswith("“odd.pdf” is damaged")


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_the_upload_form_never_answers_5xx_to_a_malformed_pdf(reviewer_client, name):
    response = reviewer_client.post(
        reverse("documents:upload"),
        {"documents": [SimpleUploadedFile(f"{name}.pdf", MALFORMED[name])]},
    )
    assert response.status_code in (302, 400), response.status_code
    if response.status_code == 400:
        assert f"“{name}.pdf”" in response.context["form"].errors["documents"][0]
        assert not Document.objects.exists()
    else:
        settled(Document.objects.get())


@pytest.fixture
def api_token(django_user_model):
    from review.roles import REVIEWERS, ensure_roles

    user = django_user_model.objects.create_user(username="lims", password="x")
    user.groups.add(ensure_roles()[REVIEWERS])
    return api_token_create(user=user, name="lims")[1]


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_the_api_never_answers_5xx_to_a_malformed_pdf(client, api_token, name):
    response = client.post(
        "/api/v1/documents/",
        {"file": SimpleUploadedFile(f"{name}.pdf", MALFORMED[name])},
        HTTP_AUTHORIZATION=f"Bearer {api_token}",
    )
    assert response.status_code < 500, response.content
    body = response.json()
    if response.status_code >= 400:
        assert body["error"] and body["code"]
    else:
        settled(Document.objects.get())


def test_the_bulk_ingest_refuses_or_reads_every_malformed_pdf(tmp_path: Path):
    folder = tmp_path / "incoming"
    folder.mkdir()
    for name, data in MALFORMED.items():
        (folder / f"{name}.pdf").write_bytes(data)
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="Some files were not ingested"):
        call_command("ingest", str(folder), "--verbose", stdout=out, stderr=err)
    text = out.getvalue() + err.getvalue()
    assert f"{len(MALFORMED)} file(s):" in text
    for name in LOOPS:
        assert f"“{name}.pdf” is damaged and cannot be read as a PDF." in text
    for document in Document.objects.all():
        settled(document)
