"""Text uploads are checked in the sandbox, as PDFs are, and their page and size limits are
counted before any page is built: a 20 MB file of form feeds (a page per form feed) and a
20 MB file on one line are refused within a second, and the web process stays small."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

from documents import sandbox
from documents.pages import extract_text_file, text_page_count
from documents.validation import CheckLimits, UploadRefused, inspect_upload

MB = 1024 * 1024
ROOT = Path(__file__).resolve().parents[2]


def check(name: str, data: bytes, *, max_pages: int = 300, page_chars: int = 200_000) -> object:
    return inspect_upload(
        name=name,
        data=data,
        max_bytes=25 * MB,
        max_pages=max_pages,
        limits=CheckLimits(max_page_chars=page_chars),
    )


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"x\f" * (10 * MB), "too_many_pages"),  # 20 MB, a page per form feed
        (b"word " * (4 * MB), "page_too_large"),  # 20 MB on one line
    ],
    ids=["form-feeds", "one-line"],
)
def test_a_20_mb_text_file_over_the_limits_is_refused_within_a_second(data, code):
    started = time.monotonic()
    with pytest.raises(UploadRefused) as refused:
        check("big.txt", data)
    assert time.monotonic() - started < 1.0
    assert refused.value.code == code
    assert sandbox.REPORTS[-1].task == "upload_check_text"  # read in the child, not here


def test_the_page_limit_counts_what_extraction_would_make():
    pages = "\f".join(f"page {n}" for n in range(1, 301))
    assert check("ok.txt", pages.encode()).page_count == 300  # type: ignore[attr-defined]
    with pytest.raises(UploadRefused) as refused:
        check("over.txt", (pages + "\fpage 301").encode())
    assert refused.value.code == "too_many_pages"
    assert "has 301 pages; the limit is 300" in refused.value.message
    # Trailing form feeds and blank pages were never pages to the author.
    assert check("tail.txt", (pages + "\f \n\f\f" * 50).encode()).page_count == 300  # type: ignore[attr-defined]
    for text in ["one", "a\fb", "a\f\f\fb\f  \f", "  \f\n", "a\r\n\fb\x1c\f"]:
        assert text_page_count(text) == len(extract_text_file(text)), repr(text)


def test_a_page_over_the_character_limit_is_refused_with_its_number():
    data = ("short\f" + "x" * 2000 + "\fend").encode()
    assert check("ok.txt", data, page_chars=2000).page_count == 3  # type: ignore[attr-defined]
    with pytest.raises(UploadRefused) as refused:
        check("long.txt", data, page_chars=1999)
    assert refused.value.code == "page_too_large"
    assert "page 2 has 2,000 characters" in refused.value.message


@pytest.mark.parametrize(
    ("data", "code"),
    [(b"\x01\x02\x03" * 100, "not_text"), (b" \n\f\t" * 100, "no_text")],
)
def test_binary_and_blank_text_are_still_refused_from_the_sandbox(data, code):
    with pytest.raises(UploadRefused) as refused:
        check("odd.txt", data)
    assert refused.value.code == code


@pytest.mark.slow
def test_the_web_process_stays_under_300_mb_while_refusing_them(tmp_path):
    """Measured in a fresh process (this one's peak would include earlier tests): the
    benchmark command uploads both files through documents.services.document_upload."""
    out = tmp_path / "limits.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "config.settings"}
    subprocess.run(
        [sys.executable, "manage.py", "bench_upload_limits", "--json", str(out)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    rows = {row["file"]: row for row in json.loads(out.read_text())}
    assert rows["form-feeds.txt"]["outcome"] == "too_many_pages"
    assert rows["one-line.txt"]["outcome"] == "page_too_large"
    for row in rows.values():
        assert row["seconds"] < 1.0, row
        assert row["web_peak_rss_mb"] < 300, row
    assert settings.UPLOAD_MAX_PAGE_CHARS == 200_000  # the limit the command ran with
