"""Every kind of bad upload is refused with the message the user sees, and leaves nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from benchmarks.pdfgen import text_pdf, zero_page_pdf
from documents.models import Document, Page

pytestmark = pytest.mark.django_db

UPLOAD_URL = reverse("documents:upload")


def upload(client: Any, *files: tuple[str, bytes]) -> Any:
    return client.post(
        UPLOAD_URL, {"documents": [SimpleUploadedFile(name, data) for name, data in files]}
    )


def stored_files(media_root: Path) -> list[Path]:
    return [p for p in media_root.rglob("*") if p.is_file()] if media_root.exists() else []


def assert_refused(response: Any, message: str, media_root: Path) -> None:
    assert response.status_code == 400
    assert response.context["form"].errors["documents"] == [message]
    assert message in response.content.decode()
    assert Document.objects.count() == 0
    assert Page.objects.count() == 0
    assert stored_files(media_root) == []


def test_a_non_pdf_with_a_pdf_name_is_refused(reviewer_client, media_root):
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 200
    response = upload(reviewer_client, ("scan.pdf", png))
    assert_refused(
        response,
        "“scan.pdf” has a .pdf name but is not a PDF file. Upload the original PDF.",
        media_root,
    )


def test_a_corrupt_pdf_is_refused(reviewer_client, media_root):
    corrupt = b"%PDF-1.4\n" + b"this is not a pdf body " * 40 + b"\n%%EOF\n"
    response = upload(reviewer_client, ("report.pdf", corrupt))
    assert_refused(
        response,
        "“report.pdf” is damaged and cannot be read as a PDF. Upload the original file again.",
        media_root,
    )


def test_a_truncated_pdf_is_refused(reviewer_client, media_root, pathology_pdf):
    response = upload(reviewer_client, ("cut.pdf", pathology_pdf[: len(pathology_pdf) // 2]))
    assert_refused(
        response,
        "“cut.pdf” is incomplete: the file ends early, as if the download or copy was cut off. "
        "Upload the complete file.",
        media_root,
    )


def test_an_encrypted_pdf_is_refused(reviewer_client, media_root):
    locked = text_pdf([["FINAL DIAGNOSIS", "Benign."]], password="s3cret")
    response = upload(reviewer_client, ("locked.pdf", locked))
    assert_refused(
        response,
        "“locked.pdf” is password-protected. Save an unprotected copy and upload that.",
        media_root,
    )


def test_a_pdf_without_pages_is_refused(reviewer_client, media_root):
    response = upload(reviewer_client, ("blank.pdf", zero_page_pdf()))
    assert_refused(response, "“blank.pdf” has no pages.", media_root)


def test_an_empty_file_is_refused(reviewer_client, media_root):
    response = upload(reviewer_client, ("empty.pdf", b""))
    assert_refused(response, "“empty.pdf” is empty (0 bytes). Choose the file again.", media_root)


def test_an_empty_text_file_is_refused(reviewer_client, media_root):
    response = upload(reviewer_client, ("note.txt", b"  \n\n\t \n"))
    assert_refused(response, "“note.txt” contains no text.", media_root)


def test_a_binary_file_with_a_txt_name_is_refused(reviewer_client, media_root):
    response = upload(reviewer_client, ("note.txt", bytes(range(256)) * 4))
    assert_refused(
        response,
        "“note.txt” is not a readable text file. Upload a .txt file saved as UTF-8 or UTF-16, "
        "or the original PDF.",
        media_root,
    )


def test_an_unsupported_file_type_is_refused(reviewer_client, media_root):
    response = upload(reviewer_client, ("letter.docx", b"PK\x03\x04 word document"))
    assert_refused(
        response,
        "“letter.docx” is not a PDF or plain-text file. Upload .pdf or .txt files.",
        media_root,
    )


def test_a_file_over_the_size_limit_is_refused(reviewer_client, media_root, settings):
    settings.UPLOAD_MAX_BYTES = 1024 * 1024
    response = upload(reviewer_client, ("big.txt", b"FINDINGS normal. " * 70_000))
    assert_refused(
        response,
        "“big.txt” is 1.1 MB; the limit is 1 MB. Split it into smaller files and upload "
        "them separately.",
        media_root,
    )


def test_a_pdf_over_the_page_limit_is_refused(reviewer_client, media_root, settings):
    settings.UPLOAD_MAX_PAGES = 2
    long_pdf = text_pdf([["IMPRESSION", f"Page {n} text."] for n in range(3)])
    response = upload(reviewer_client, ("long.pdf", long_pdf))
    assert_refused(
        response,
        "“long.pdf” has 3 pages; the limit is 2. Split it into smaller files and upload them "
        "separately.",
        media_root,
    )


def test_a_duplicate_upload_is_refused_and_names_the_first(
    reviewer_client, media_root, pathology_pdf
):
    first = upload(reviewer_client, ("first.pdf", pathology_pdf))
    assert first.status_code == 302
    original = Document.objects.get()
    files_before = stored_files(media_root)

    response = upload(reviewer_client, ("again.pdf", pathology_pdf))

    assert response.status_code == 400
    [message] = response.context["form"].errors["documents"]
    assert message.startswith("“again.pdf” was already uploaded on ")
    assert message.endswith(" as “first.pdf”.")
    assert Document.objects.get() == original
    assert stored_files(media_root) == files_before


def test_too_many_files_at_once_are_refused(reviewer_client, settings):
    settings.UPLOAD_MAX_FILES = 2
    response = upload(reviewer_client, *[(f"n{i}.txt", f"note {i}".encode()) for i in range(3)])
    assert response.status_code == 400
    assert response.context["form"].errors["documents"] == [
        "You chose 3 files; upload at most 2 at a time."
    ]
    assert Document.objects.count() == 0


def test_submitting_no_file_asks_for_one(reviewer_client):
    response = reviewer_client.post(UPLOAD_URL, {})
    assert response.status_code == 400
    assert response.context["form"].errors["documents"] == ["Choose at least one file to upload."]


def test_in_a_mixed_batch_good_files_are_kept_and_bad_ones_listed(
    reviewer_client, pathology_pdf, media_root
):
    response = upload(
        reviewer_client,
        ("good.pdf", pathology_pdf),
        ("bad.pdf", b"not a pdf at all"),
        ("note.txt", b"HPI: cough for two weeks."),
    )
    # Changed on purpose (issue 24): the request stored what it could, so it is a 200 that
    # says file by file what became of each, not a 400.
    assert response.status_code == 200
    outcomes = {r["name"]: r.get("refused", "stored") for r in response.context["results"]}
    assert outcomes == {
        "good.pdf": "stored",
        "bad.pdf": "“bad.pdf” has a .pdf name but is not a PDF file. Upload the original PDF.",
        "note.txt": "stored",
    }
    body = response.content.decode()
    assert "2 files stored, 1 refused" in body
    assert body.count('data-result="refused"') == 1
    names = set(Document.objects.values_list("original_filename", flat=True))
    assert names == {"good.pdf", "note.txt"}
    assert len(stored_files(media_root)) == 2
