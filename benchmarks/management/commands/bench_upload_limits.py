"""Upload text files that exceed the page limits and print how long the refusal took and how
much memory this process (the web process's part of an upload) reached.

    manage.py bench_upload_limits [--megabytes 20] [--json limits.json]

Each file goes through ``documents.services.document_upload``, as the upload form and the API
call it. Memory is measured, not estimated: VmHWM (peak resident memory) of this process, read
from /proc after each file; the parse itself runs in the sandbox's child, whose peak is shown
apart (documents.sandbox.REPORTS). Nothing is stored: every file here is refused before that.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import BaseCommand, CommandParser

from core.errors import Refused
from documents import sandbox
from documents.services import document_upload


def _kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def files(megabytes: int) -> dict[str, bytes]:
    size = megabytes * 1024 * 1024
    return {
        "form-feeds.txt": b"x\f" * (size // 2),  # a page per form feed
        "one-line.txt": b"word " * (size // 5),
    }


class Command(BaseCommand):
    help = "Time and memory of refusing text uploads over the page limits."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--megabytes", type=int, default=20)
        parser.add_argument("--json", type=Path, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        rows = []
        for name, data in files(options["megabytes"]).items():
            upload = SimpleUploadedFile(name, data, content_type="text/plain")
            del data
            started = time.monotonic()
            try:
                document_upload(upload=upload, user=None)
                code, message = "accepted", ""
            except Refused as refused:
                code, message = refused.code, refused.message
            seconds = time.monotonic() - started
            child = sandbox.REPORTS[-1] if sandbox.REPORTS else None
            row = {
                "file": name,
                "megabytes": options["megabytes"],
                "outcome": code,
                "seconds": round(seconds, 3),
                "web_peak_rss_mb": round(_kb("VmHWM") / 1024, 1),
                "sandbox_peak_rss_mb": round(child.peak_rss_kb / 1024, 1) if child else None,
                "message": message,
            }
            rows.append(row)
            self.stdout.write(
                f"{name:16} {code:16} {row['seconds']:6.3f} s  web peak "
                f"{row['web_peak_rss_mb']:6.1f} MB  sandbox peak {row['sandbox_peak_rss_mb']} MB"
            )
        if options["json"] is not None:
            options["json"].write_text(json.dumps(rows, indent=2))
