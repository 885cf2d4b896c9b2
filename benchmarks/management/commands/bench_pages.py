from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from django.urls import reverse

from benchmarks import page_bench
from core import jobs
from documents.models import Document
from documents.services import DuplicateUpload, document_create, documents_create_many
from review.models import ReviewPacket
from review.roles import REVIEWERS, ensure_roles
from review.services.decisions import packets_release_all

USERNAME = "bench-pages"
PASSWORD = "bench-pages-password-1"
DEMO_DIR = Path(settings.BASE_DIR) / "demo" / "documents"
TARGET_MS = 500


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Command(BaseCommand):
    help = (
        "First paint (Chromium, 1280x800) of the longest demo packet and of a 7-page bundle, "
        "and the latency of every page image, without and with pre-rendering. Starts "
        "`runserver` on this database, as the quick start does (or measures --url)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--runs", type=int, default=5, help="measurements per figure")
        parser.add_argument("--json", dest="json_out", help="also write the figures here")
        parser.add_argument(
            "--url",
            help="measure this running server instead (it must serve this database and MEDIA_ROOT)",
        )
        parser.add_argument(
            "--keep", action="store_true", help="keep the bundle (deleted afterwards otherwise)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["runs"] < 1:
            raise CommandError("--runs must be at least 1.")
        self._user()
        demo = self._longest_demo_packet()
        bundle, created = self._bundle_packet()
        subjects = [
            self._subject(f"demo packet ({demo.document.page_count} p.)", demo),
            self._subject(f"7-page bundle ({bundle.document.page_count} p.)", bundle),
        ]
        # What ingestion queued is drawn by now: every measurement starts from a known state.
        jobs.drain_background(300)
        server = None
        base = options["url"]
        try:
            if not base:
                server, base = self._runserver()
            self.stdout.write(
                f"Measuring {base} ({'runserver, ' if server else ''}"
                f"{connection.vendor}, jobs "
                f"{'inline' if jobs.jobs_run_inline() else 'on RQ'}), {options['runs']} run(s) "
                f"per figure, Chromium at {page_bench.VIEWPORT['width']}x"
                f"{page_bench.VIEWPORT['height']}:"
            )
            with page_bench.Browser(base, USERNAME, PASSWORD) as browser:
                figures = page_bench.measure(
                    browser=browser, subjects=subjects, runs=options["runs"], log=self.stdout.write
                )
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=10)
            packets_release_all(user=get_user_model().objects.get(username=USERNAME))
            if created and not options["keep"]:
                page_bench.clear_images([bundle.document])
                bundle.document.file.delete(save=False)
                bundle.document.delete()
        figures["subjects"] = {s.name: s.packet_url for s in subjects}
        after = figures["with_prerender"][subjects[1].name]["first_paint"]["p50_ms"]
        before = figures["without_prerender"][subjects[1].name]["first_paint"]["p50_ms"]
        figures["bundle_first_paint_target_ms"] = TARGET_MS
        figures["bundle_first_paint_meets_target"] = after < TARGET_MS
        self.stdout.write(
            f"7-page bundle, first paint p50: {before:.0f} ms without pre-rendering, "
            f"{after:.0f} ms with ({'meets' if after < TARGET_MS else 'MISSES'} < {TARGET_MS} ms)"
        )
        if options["json_out"]:
            with open(options["json_out"], "w") as out:
                out.write(json.dumps(figures, indent=2) + "\n")

    # -- what is measured ------------------------------------------------------------------------

    def _user(self) -> None:
        user, _ = get_user_model().objects.get_or_create(
            username=USERNAME, defaults={"first_name": "Bench", "last_name": "Pages"}
        )
        user.set_password(PASSWORD)
        user.save()
        user.groups.add(ensure_roles()[REVIEWERS])

    def _longest_demo_packet(self) -> ReviewPacket:
        """The demo packet with the most pages (the demo documents are ingested first if
        they are not yet, as `load_demo` does)."""
        files = sorted(p for p in DEMO_DIR.iterdir() if p.is_file())
        results = documents_create_many(files=[(p.name, p.read_bytes()) for p in files], user=None)
        ids = [
            r.existing.pk if isinstance(r, DuplicateUpload) else r.pk
            for r in results
            if isinstance(r, (Document, DuplicateUpload))
        ]
        self._wait_ready(ids)
        packet = (
            ReviewPacket.objects.filter(document_id__in=ids, document__mime_type=Document.MIME_PDF)
            .select_related("document")
            .order_by("-document__page_count", "-pk")
            .first()
        )
        if packet is None:
            raise CommandError("The demo documents gave no review packet of a PDF to measure.")
        return packet

    def _bundle_packet(self) -> tuple[ReviewPacket, bool]:
        """The 7-page bundle's packet (uploaded now unless present) and whether it was made
        now. A bundle of five documents is escalated by the verifiers."""
        created = True
        try:
            document = document_create(
                filename="bench-pages-bundle.pdf", content=page_bench.bundle_pdf(), user=None
            )
        except DuplicateUpload as duplicate:
            document, created = duplicate.existing, False
        self._wait_ready([document.pk])
        packet = (
            ReviewPacket.objects.filter(document=document)
            .select_related("document")
            .order_by("-pk")
            .first()
        )
        if packet is None:
            raise CommandError(
                "The 7-page bundle was not escalated to a review packet (is AUTO_CLASSIFY off?)."
            )
        return packet, created

    def _wait_ready(self, ids: list[Any], timeout: float = 300) -> None:
        """Ingested and classified (inline: already; on RQ: by the workers)."""
        deadline = time.monotonic() + timeout
        while Document.objects.filter(pk__in=ids, status__in=["uploaded", "ingesting"]).exists():
            if time.monotonic() > deadline:
                raise CommandError("Documents were not ingested in time: are workers running?")
            time.sleep(0.5)
        if not jobs.jobs_run_inline():
            time.sleep(5)  # their runs, queued after ingestion

    def _subject(self, name: str, packet: ReviewPacket) -> page_bench.Subject:
        return page_bench.Subject(
            name=name,
            document=packet.document,
            packet_url=reverse("review:packet", args=[packet.pk]),
            image_urls=[
                reverse("review:page_image", args=[packet.pk, n])
                for n in range(1, packet.document.page_count + 1)
            ],
        )

    def _runserver(self) -> tuple[subprocess.Popen[bytes], str]:
        """`manage.py runserver` (threaded, no reloader) with this environment: the quick
        start's server."""
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
            cwd=settings.BASE_DIR,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        for _ in range(150):
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2).read()
                return server, base
            except OSError:
                if server.poll() is not None:
                    break
                time.sleep(0.2)
        server.terminate()
        raise CommandError("runserver did not start.")
