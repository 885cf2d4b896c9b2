"""Access rules, HTMX partials and the admin for documents."""

from __future__ import annotations

import pytest
from django.urls import reverse

from documents.models import Document, Page

pytestmark = pytest.mark.django_db


def make_document(**fields) -> Document:
    defaults = dict(
        original_filename="report.pdf",
        sha256=f"{len(Document.objects.all()):064d}",
        mime_type=Document.MIME_PDF,
        size_bytes=100,
        page_count=1,
        status=Document.Status.READY,
    )
    defaults.update(fields)
    return Document.objects.create(**defaults)


@pytest.mark.parametrize(
    "name,args",
    [("documents:list", []), ("documents:upload", []), ("documents:detail", ["doc"])],
)
def test_anonymous_visitors_are_sent_to_log_in(client, name, args):
    document = make_document()
    url = reverse(name, args=[document.pk] if args else [])
    response = client.get(url)
    assert response.status_code == 302
    assert response.url == f"{reverse('login')}?next={url}"


def test_anonymous_retry_is_sent_to_log_in_and_changes_nothing(client):
    document = make_document(status=Document.Status.FAILED, error="x")
    response = client.post(reverse("documents:retry", args=[document.pk]))
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED


def test_retry_refuses_get(reviewer_client):
    document = make_document(status=Document.Status.FAILED)
    response = reviewer_client.get(reverse("documents:retry", args=[document.pk]))
    assert response.status_code == 405


def test_the_health_check_needs_no_login(client):
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_the_list_shows_status_and_polls_only_while_work_is_running(reviewer_client):
    make_document(original_filename="done.pdf")
    response = reviewer_client.get(reverse("documents:list"))
    body = response.content.decode()
    assert response.status_code == 200
    assert "done.pdf" in body and 'data-status="ready"' in body
    assert 'hx-trigger="every 2s"' not in body

    make_document(original_filename="busy.pdf", status=Document.Status.INGESTING)
    body = reviewer_client.get(reverse("documents:list")).content.decode()
    assert 'hx-trigger="every 2s"' in body


def test_an_htmx_request_gets_only_the_table_partial(reviewer_client):
    make_document(original_filename="one.pdf", status=Document.Status.UPLOADED)
    response = reviewer_client.get(reverse("documents:list"), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="document-table"')
    assert "<html" not in body and "one.pdf" in body


def test_the_list_filters_by_status(reviewer_client):
    make_document(original_filename="good.pdf")
    make_document(original_filename="bad.pdf", status=Document.Status.FAILED, error="Damaged.")
    body = reviewer_client.get(reverse("documents:list"), {"status": "failed"}).content.decode()
    assert "bad.pdf" in body and "Damaged." in body
    assert "good.pdf" not in body


def test_the_detail_page_shows_paragraphs_and_the_htmx_status_partial(reviewer_client):
    document = make_document(status=Document.Status.READY)
    Page.objects.create(
        document=document,
        number=1,
        text="FINDINGS\n\nClear lungs.",
        paragraphs=["FINDINGS", "Clear lungs."],
        block_types=["heading", "paragraph"],
    )
    body = reviewer_client.get(reverse("documents:detail", args=[document.pk])).content.decode()
    assert "Clear lungs." in body and "Page 1" in body

    partial = reviewer_client.get(
        reverse("documents:detail", args=[document.pk]), HTTP_HX_REQUEST="true"
    ).content.decode()
    assert partial.lstrip().startswith('<section id="document-status"')
    assert "Clear lungs." not in partial


def test_an_unknown_document_is_404(reviewer_client):
    response = reviewer_client.get(
        reverse("documents:detail", args=["00000000-0000-0000-0000-000000000000"])
    )
    assert response.status_code == 404


def test_admin_searches_documents_by_filename_and_filters_by_status(client, superuser):
    make_document(original_filename="chest-ct.pdf")
    make_document(original_filename="biopsy.pdf", status=Document.Status.FAILED)
    client.force_login(superuser)
    url = reverse("admin:documents_document_changelist")

    by_name = client.get(url, {"q": "chest"}).content.decode()
    assert "chest-ct.pdf" in by_name and "biopsy.pdf" not in by_name

    by_status = client.get(url, {"status__exact": "failed"}).content.decode()
    assert "biopsy.pdf" in by_status and "chest-ct.pdf" not in by_status


def test_a_reviewer_cannot_use_the_admin(reviewer_client):
    response = reviewer_client.get(reverse("admin:documents_document_changelist"))
    assert response.status_code == 302
    assert response.url.startswith(reverse("admin:login"))


@pytest.mark.parametrize("name", ["documents:list", "documents:upload", "documents:detail"])
def test_a_user_without_a_role_may_not_see_documents(client, django_user_model, name):
    document = make_document()
    client.force_login(django_user_model.objects.create_user("norole", password="x"))
    url = reverse(name, args=[document.pk] if name == "documents:detail" else [])
    assert client.get(url).status_code == 403
    assert client.post(reverse("documents:retry", args=[document.pk])).status_code == 403


def test_a_user_without_a_role_may_not_see_runs(client, django_user_model):
    from reliability.models import Run

    document = make_document()
    run = Run.objects.create(document=document, preset="clinical", classifier="offline")
    client.force_login(django_user_model.objects.create_user("norole", password="x"))
    assert client.get(reverse("reliability:run", args=[run.pk])).status_code == 403
    assert client.get(reverse("reliability:packet", args=[run.pk])).status_code == 403
    assert client.post(reverse("reliability:new", args=[document.pk])).status_code == 403


def test_the_list_shows_each_documents_type_decision_and_packet_in_constant_queries(
    reviewer_client,
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from engine.schemas import ClassificationOutput
    from review.services.ground_truth import ground_truth_record
    from tests.review.conftest import make_packet

    escalated = make_packet(sha="1")
    accepted = make_document(original_filename="accepted.pdf", sha256="a" * 64)

    ground_truth_record(
        document=accepted,
        run=None,
        source="AUTO_ACCEPTED",
        output=ClassificationOutput.model_validate(escalated.classification),
    )
    make_document(
        original_filename="reading.pdf",
        status=Document.Status.INGESTING,
        page_count=5,
        pages_done=2,
    )
    with CaptureQueriesContext(connection) as few:
        body = reviewer_client.get(reverse("documents:list")).content.decode()
    row = body[body.index(f'data-document="{escalated.document_id}"') :]
    assert "Pathology Report" in row[:800] and "Escalated" in row[:800]
    assert reverse("review:packet", args=[escalated.pk]) in row[:800]
    accepted_row = body[body.index(f'data-document="{accepted.pk}"') :][:800]
    assert "Auto-accepted" in accepted_row and "Pathology Report" in accepted_row
    reading = body[body.index("reading.pdf") :][:800]
    assert "page 2 of 5" in reading and '<progress max="5" value="2"' in reading

    for sha in "bcdef":
        make_packet(sha=sha)
    with CaptureQueriesContext(connection) as many:
        reviewer_client.get(reverse("documents:list"))
    assert len(many) == len(few)


def test_the_list_searches_file_names(reviewer_client):
    make_document(original_filename="chest-ct.pdf", sha256="1" * 64)
    make_document(original_filename="biopsy.pdf", sha256="2" * 64)
    body = reviewer_client.get(reverse("documents:list"), {"q": "CHEST"}).content.decode()
    assert "chest-ct.pdf" in body and "biopsy.pdf" not in body


def test_an_htmx_upload_redirects_the_browser_and_a_refusal_comes_back_as_the_form(
    reviewer_client,
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    good = SimpleUploadedFile("note.txt", b"CLINIC NOTE\n\nCough for two weeks.")
    response = reviewer_client.post(
        reverse("documents:upload"), {"documents": [good]}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("documents:list")
    bad = SimpleUploadedFile("photo.pdf", b"\xff\xd8\xff not a pdf")
    refused = reviewer_client.post(
        reverse("documents:upload"), {"documents": [bad]}, HTTP_HX_REQUEST="true"
    )
    assert refused.status_code == 400
    assert 'id="upload-card"' in refused.content.decode()
