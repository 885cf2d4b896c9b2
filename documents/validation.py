"""Check an upload before anything is stored; refusals carry the message the user sees.

Pure module (no Django), so the same checks serve the upload form, the bulk `ingest` command
and the tests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from core.errors import Refused
from documents.sandbox import Limits, SandboxFailed, run_sandboxed
from documents.untrusted import (
    PdfFacts,
    TextFacts,
    oversized_message,
    pdf_facts,
    pdf_facts_many,
    text_facts,
)

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


@dataclass(frozen=True)
class CheckLimits:
    """What the upload check allows the sandboxed PDF reader (documents.sandbox)."""

    memory_mb: int = 256
    seconds: int = 10
    max_page_points: float = 3600
    # A text page longer than this is not a page (a dense printed page holds ~5,000
    # characters): a 20 MB file on one line would be one page to classify and ground.
    max_page_chars: int = 200_000


def looks_like_pdf(data: bytes) -> bool:
    """Content sniffing: a PDF starts with ``%PDF-`` (after optional whitespace), whatever
    its name says."""
    return data.lstrip()[:5] == b"%PDF-"


def _pdf_prechecks(name: str, data: bytes) -> None:
    """What can be told of a PDF without parsing it."""
    if not looks_like_pdf(data):
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


def _sandbox_limits(limits: CheckLimits) -> Limits:
    return Limits(
        memory_mb=limits.memory_mb, cpu_seconds=limits.seconds, wall_seconds=limits.seconds
    )


def _unsafe(name: str, failed: SandboxFailed) -> UploadRefused:
    return UploadRefused(
        code="unsafe",
        message=f"“{name}” was refused: {failed.message}. Print it to a new PDF, or split "
        "it, and upload that.",
    )


def _damaged(name: str) -> UploadRefused:
    return UploadRefused(
        code="corrupt",
        message=f"“{name}” is damaged and cannot be read as a PDF. Upload the original file again.",
    )


def _facts_in_sandbox(name: str, data: bytes, *, max_pages: int, limits: CheckLimits) -> PdfFacts:
    """The PDF's facts read in the sandbox. Whatever stops the reader there is a refusal: a
    limit (``unsafe``), or any exception the parse raised (``corrupt``), never an error of
    the request that uploaded it."""
    try:
        facts = run_sandboxed(
            pdf_facts,
            data,
            task="upload_check",
            limits=_sandbox_limits(limits),
            max_pages=max_pages,
            max_points=limits.max_page_points,
        )
    except SandboxFailed as failed:
        raise _unsafe(name, failed) from None
    except Exception:
        raise _damaged(name) from None
    if not isinstance(facts, PdfFacts):
        raise _damaged(name)
    return facts


def _page_count_from_facts(name: str, facts: PdfFacts, *, limits: CheckLimits) -> int:
    if facts.encrypted:
        raise UploadRefused(
            code="encrypted",
            message=f"“{name}” is password-protected. Save an unprotected copy and upload that.",
        )
    if facts.damaged:
        raise _damaged(name)
    if facts.oversized is not None:
        raise UploadRefused(
            code="page_too_large",
            message=f"“{name}” was refused: "
            f"{oversized_message(facts.oversized, limits.max_page_points)}.",
        )
    return facts.page_count


def _text_in_sandbox(name: str, data: bytes, *, max_pages: int, limits: CheckLimits) -> int:
    """A text file's page count, read in the sandbox under the same limits as a PDF's
    check: decoding and counting run there, and every limit is checked before a page is built."""
    try:
        facts = run_sandboxed(
            text_facts,
            data,
            task="upload_check_text",
            limits=_sandbox_limits(limits),
            max_pages=max_pages,
            max_page_chars=limits.max_page_chars,
        )
    except SandboxFailed as failed:
        raise _unsafe(name, failed) from None
    except Exception:
        facts = None  # whatever the reader raised: not text it can read
    if not isinstance(facts, TextFacts) or not facts.readable:
        raise UploadRefused(
            code="not_text",
            message=f"“{name}” is not a readable text file. Upload a .txt file saved as "
            "UTF-8 or UTF-16, or the original PDF.",
        )
    if facts.blank:
        raise UploadRefused(code="no_text", message=f"“{name}” contains no text.")
    if facts.longest is not None:
        number, chars = facts.longest
        raise UploadRefused(
            code="page_too_large",
            message=f"“{name}” was refused: page {number} has {chars:,} characters; pages of up "
            f"to {limits.max_page_chars:,} are accepted. Part its pages with form feeds, or "
            "split it into smaller files.",
        )
    return facts.page_count


def _sniff(
    name: str, data: bytes, *, max_bytes: int, max_pages: int, limits: CheckLimits
) -> tuple[str, int | None]:
    """The file's type, and a text file's page count (a PDF's, None, is read in the sandbox
    later, in a batch when there are several). A file that is a PDF is checked as one whatever
    its name (a PDF named .txt is never decoded as text)."""
    check_size(name=name, size=len(data), max_bytes=max_bytes)
    suffix = PurePath(name).suffix.lower()
    if suffix == ".pdf" or (suffix == ".txt" and looks_like_pdf(data)):
        _pdf_prechecks(name, data)
        return MIME_PDF, None
    if suffix == ".txt":
        return MIME_TEXT, _text_in_sandbox(name, data, max_pages=max_pages, limits=limits)
    raise UploadRefused(
        code="unsupported",
        message=f"“{name}” is not a PDF or plain-text file. Upload .pdf or .txt files.",
    )


def _info(name: str, data: bytes, *, mime_type: str, page_count: int, max_pages: int) -> UploadInfo:
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


def inspect_upload(
    *,
    name: str,
    data: bytes,
    max_bytes: int,
    max_pages: int,
    limits: CheckLimits | None = None,
) -> UploadInfo:
    """The cheap checks of one upload. A file that is a PDF is checked as one whatever its
    name (a PDF named .txt is never decoded as text); the PDF is opened only in the sandbox."""
    limits = limits or CheckLimits()
    mime_type, page_count = _sniff(
        name, data, max_bytes=max_bytes, max_pages=max_pages, limits=limits
    )
    if page_count is None:
        facts = _facts_in_sandbox(name, data, max_pages=max_pages, limits=limits)
        page_count = _page_count_from_facts(name, facts, limits=limits)
    return _info(name, data, mime_type=mime_type, page_count=page_count, max_pages=max_pages)


def inspect_uploads(
    *,
    files: Sequence[tuple[str, bytes]],
    max_bytes: int,
    max_pages: int,
    limits: CheckLimits | None = None,
) -> list[UploadInfo | UploadRefused]:
    """``inspect_upload`` of each (name, data), in order: its UploadInfo or its refusal.

    The same checks and the same refusals, but the PDFs are read by one sandboxed child
    rather than one child each (a fork costs more than reading a clean PDF's page tree). That
    child runs under the limits of a single file, for all of them together; it cannot do
    more than a child given one file could. When a limit stops it (a hostile file among
    them), or a file raised in it, those files are checked again one by one, each in a child
    of its own, so every refusal reads exactly as it would for that file alone.
    """
    limits = limits or CheckLimits()
    results: list[UploadInfo | UploadRefused | None] = [None] * len(files)
    sniffed: dict[int, tuple[str, int | None]] = {}
    for index, (name, data) in enumerate(files):
        try:
            sniffed[index] = _sniff(
                name, data, max_bytes=max_bytes, max_pages=max_pages, limits=limits
            )
        except UploadRefused as refused:
            results[index] = refused
    pdfs = [index for index, (_, count) in sniffed.items() if count is None]
    batch: list[PdfFacts | None] = [None] * len(pdfs)
    if len(pdfs) > 1:
        try:
            found = run_sandboxed(
                pdf_facts_many,
                [files[index][1] for index in pdfs],
                task="upload_check_batch",
                limits=_sandbox_limits(limits),
                max_pages=max_pages,
                max_points=limits.max_page_points,
            )
        except SandboxFailed:
            found = None  # each file again, alone, under its own limits
        if isinstance(found, list) and len(found) == len(pdfs):
            batch = [f if isinstance(f, PdfFacts) else None for f in found]
    facts_of = dict(zip(pdfs, batch, strict=True))
    for index, (mime_type, page_count) in sniffed.items():
        name, data = files[index]
        try:
            if page_count is None:
                facts = facts_of[index] or _facts_in_sandbox(
                    name, data, max_pages=max_pages, limits=limits
                )
                page_count = _page_count_from_facts(name, facts, limits=limits)
            results[index] = _info(
                name, data, mime_type=mime_type, page_count=page_count, max_pages=max_pages
            )
        except UploadRefused as refused:
            results[index] = refused
    return [result for result in results if result is not None]
