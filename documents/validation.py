"""Check an upload before anything is stored; refusals carry the message the user sees.

Pure module (no Django), so the same checks serve the upload form, the bulk `ingest` command
and the tests.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import PurePath

import pdfplumber
from pdfminer.pdfdocument import PDFPasswordIncorrect

from config.errors import Refused
from documents.pages import decode_text, extract_text_file

MIME_PDF = "application/pdf"
MIME_TEXT = "text/plain"


class UploadRefused(Refused):
    """An upload refused before anything is stored; ``code`` names the check."""


@dataclass(frozen=True)
class UploadInfo:
    mime_type: str
    page_count: int
    sha256: str
    size_bytes: int


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def check_size(*, name: str, size: int, max_bytes: int) -> None:
    """The cheap checks that need only the size, run before the file is read."""
    if size == 0:
        raise UploadRefused(
            code="empty", message=f"“{name}” is empty (0 bytes). Choose the file again."
        )
    if size > max_bytes:
        raise UploadRefused(
            code="too_large",
            message=f"“{name}” is {_megabytes(size)}; the limit is "
            f"{max_bytes // (1024 * 1024)} MB. Split it into smaller files and upload them "
            "separately.",
        )


def _pdf_page_count(name: str, data: bytes) -> int:
    if not data.lstrip()[:5] == b"%PDF-":
        raise UploadRefused(
            code="not_pdf",
            message=f"“{name}” has a .pdf name but is not a PDF file. Upload the original PDF.",
        )
    if b"%%EOF" not in data[-2048:]:
        raise UploadRefused(
            code="truncated",
            message=f"“{name}” is incomplete: the file ends early, as if the download or copy was "
            "cut off. Upload the complete file.",
        )
    try:
        with pdfplumber.open(io.BytesIO(data)) as pdf:
            return len(pdf.pages)
    except Exception as exc:
        cause = exc.args[0] if exc.args else None
        if isinstance(cause, PDFPasswordIncorrect) or isinstance(exc, PDFPasswordIncorrect):
            raise UploadRefused(
                code="encrypted",
                message=f"“{name}” is password-protected. Save an unprotected copy and upload "
                "that.",
            ) from None
        raise UploadRefused(
            code="corrupt",
            message=f"“{name}” is damaged and cannot be read as a PDF. Upload the original "
            "file again.",
        ) from None


def inspect_upload(*, name: str, data: bytes, max_bytes: int, max_pages: int) -> UploadInfo:
    check_size(name=name, size=len(data), max_bytes=max_bytes)
    suffix = PurePath(name).suffix.lower()
    if suffix == ".pdf":
        mime_type = MIME_PDF
        page_count = _pdf_page_count(name, data)
    elif suffix == ".txt":
        mime_type = MIME_TEXT
        text = decode_text(data)
        if text is None:
            raise UploadRefused(
                code="not_text",
                message=f"“{name}” is not a readable text file. Upload a .txt file saved as UTF-8, "
                "or the original PDF.",
            )
        if not text.strip():
            raise UploadRefused(code="no_text", message=f"“{name}” contains no text.")
        page_count = len(extract_text_file(text))
    else:
        raise UploadRefused(
            code="unsupported",
            message=f"“{name}” is not a PDF or plain-text file. Upload .pdf or .txt files.",
        )
    if page_count == 0:
        raise UploadRefused(code="no_pages", message=f"“{name}” has no pages.")
    if page_count > max_pages:
        raise UploadRefused(
            code="too_many_pages",
            message=f"“{name}” has {page_count} pages; the limit is {max_pages}. "
            "Split it into smaller files and upload them separately.",
        )
    return UploadInfo(
        mime_type=mime_type,
        page_count=page_count,
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
    )
