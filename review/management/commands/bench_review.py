from __future__ import annotations

import http.cookiejar
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from benchmarks.faults import clean_output
from documents.models import Document, Page
from engine import pipeline
from engine.document import DocumentContext
from engine.schemas import DOC_TYPES, Evidence
from reliability.models import Run
from review.models import ReviewPacket
from review.roles import REVIEWERS, ensure_roles

PREFIX = "bench-review-"
PASSWORD = "bench-review-password-1"
PAGES = [
    "SURGICAL PATHOLOGY REPORT\n\nHistory: breast mass.\n\nFINAL DIAGNOSIS\n\nLeft breast, core "
    "biopsy: invasive ductal carcinoma, Nottingham grade 2.\n\nComment: margins cannot be "
    "assessed.\n\nER positive (95%).",
    "TEST REQUISITION\n\nGROSS DESCRIPTION\n\nThree cores of tan tissue, 1.2 to 1.6 cm, "
    "submitted entirely in one cassette.",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Command(BaseCommand):
    help = (
        "Seed escalated documents, serve them with gunicorn on 127.0.0.1 and time the "
        "queue and packet pages; count SQL queries per page at two sizes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--documents", type=int, default=10_000)
        parser.add_argument("--requests", type=int, default=250)
        parser.add_argument("--keep", action="store_true", help="keep the seeded rows")

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "postgresql":
            raise CommandError("bench_review needs PostgreSQL: set DATABASE_URL.")
        self._cleanup()
        user = self._user()
        template = self._template()
        try:
            self._seed(100, template)
            small = self._query_counts(user)
            started = time.perf_counter()
            self._seed(options["documents"], template)
            self.stdout.write(
                f"Seeded {options['documents']} documents with packets in "
                f"{time.perf_counter() - started:.1f} s"
            )
            self._vacuum()
            large = self._query_counts(user)
            self.stdout.write(
                f"SQL queries per page (100 packets -> {options['documents']} packets):"
            )
            for page in small:
                self.stdout.write(f"  {page:<22}{small[page]:>4} -> {large[page]}")
            self._serve_and_time(options["requests"])
        finally:
            if not options["keep"]:
                self._cleanup()

    def _user(self) -> Any:
        roles = ensure_roles()
        user, _ = get_user_model().objects.get_or_create(username=f"{PREFIX}clinician")
        user.set_password(PASSWORD)
        user.save()
        user.groups.add(roles[REVIEWERS])
        return user

    def _template(self) -> dict[str, Any]:
        output = clean_output(PAGES, "pathology")
        assert output is not None
        assessment = output.segments[0].assessment("pathology")
        assert assessment is not None
        assessment.top_evidence.append(
            Evidence(snippet="Metastatic melanoma in four nodes", page=2)
        )
        outcome = pipeline.orchestrate(
            classify=lambda f: (output, 0),
            context=DocumentContext(pages=PAGES),
            preset=pipeline.PRESETS["clinical"],
            can_reask=False,
        )
        best = outcome.best
        return {
            "classification": best.output.model_dump(mode="json"),
            "issues": [i.model_dump(mode="json") for i in best.verification.issues],
            "grounding": best.verification.grounding,
        }

    def _seed(self, target: int, template: dict[str, Any]) -> None:
        have = Document.objects.filter(sha256__startswith=PREFIX).count()
        rng = random.Random(have)
        for start in range(have, target, 2000):
            stop = min(target, start + 2000)
            documents = Document.objects.bulk_create(
                [
                    Document(
                        original_filename=f"bench-{i:05d}.pdf",
                        sha256=f"{PREFIX}{i:040d}",
                        mime_type=Document.MIME_PDF,
                        size_bytes=1,
                        page_count=2,
                        status=Document.Status.READY,
                    )
                    for i in range(start, stop)
                ]
            )
            Page.objects.bulk_create(
                [
                    Page(document=d, number=n, text=t, paragraphs=t.split("\n\n"))
                    for d in documents
                    for n, t in enumerate(PAGES, start=1)
                ]
            )
            runs = Run.objects.bulk_create(
                [
                    Run(
                        document=d,
                        preset="clinical",
                        classifier="offline",
                        model="bench",
                        status=Run.Status.COMPLETED,
                        final_decision="ESCALATE_TO_SME",
                        attempts_count=1,
                    )
                    for d in documents
                ]
            )
            ReviewPacket.objects.bulk_create(
                [
                    ReviewPacket(
                        run=r,
                        document=r.document,
                        priority=rng.choice([0, 0, 1, 1, 2]),
                        dominant_type=rng.choice(DOC_TYPES).value,
                        worst_severity=rng.choice(["BLOCKER", "MAJOR", "MINOR"]),
                        issue_count=len(template["issues"]),
                        issue_codes=ReviewPacket.codes_of(template["issues"]),
                        comparison={"available": False, "reason": "bench"},
                        history=[],
                        **template,
                    )
                    for r in runs
                ]
            )

    def _query_counts(self, user: Any) -> dict[str, int]:
        client = Client()
        client.force_login(user)
        packet = (
            ReviewPacket.objects.filter(document__sha256__startswith=PREFIX).order_by("-pk").first()
        )
        assert packet is not None
        counts = {}
        for name, url in (
            ("queue (page 1)", reverse("review:queue")),
            ("queue (page 3)", reverse("review:queue") + "?page=3"),
            ("packet", reverse("review:packet", args=[packet.pk])),
        ):
            with CaptureQueriesContext(connection) as queries:
                response = client.get(url, HTTP_HOST="localhost")  # not "testserver"
            assert response.status_code == 200, (name, response.status_code)
            counts[name] = len(queries)
        return counts

    def _serve_and_time(self, requests: int) -> None:
        port = _free_port()
        env = {**os.environ, "DEBUG": "0", "DJANGO_SETTINGS_MODULE": "config.settings"}
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "2",
                "--log-level",
                "warning",
            ],
            cwd=settings.BASE_DIR,
            env=env,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"{base}/healthz", timeout=2).read()
                    break
                except OSError:
                    time.sleep(0.2)
            jar = http.cookiejar.CookieJar()
            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
            opener.open(f"{base}/accounts/login/").read()
            token = next(c.value for c in jar if c.name == "csrftoken")
            body = urllib.parse.urlencode(
                {
                    "username": f"{PREFIX}clinician",
                    "password": PASSWORD,
                    "csrfmiddlewaretoken": token,
                }
            ).encode()
            opener.open(
                urllib.request.Request(
                    f"{base}/accounts/login/",
                    data=body,
                    headers={"Referer": f"{base}/accounts/login/"},
                )
            )
            packets = list(
                ReviewPacket.objects.filter(document__sha256__startswith=PREFIX).values_list(
                    "pk", flat=True
                )[:requests]
            )
            pages = max(
                1,
                ReviewPacket.objects.filter(document__sha256__startswith=PREFIX).count()
                // settings.REVIEW_PAGE_SIZE,
            )
            rng = random.Random(1)
            cases = {
                "queue": [f"{base}/review/?page={rng.randint(1, pages)}" for _ in range(requests)],
                "packet": [f"{base}/review/packets/{pk}/" for pk in packets],
            }
            self.stdout.write(
                f"gunicorn (2 workers) on 127.0.0.1, PostgreSQL; {requests} "
                "requests per page, after 10 warm-up requests:"
            )
            for name, targets in cases.items():
                for url in targets[:10]:
                    opener.open(url).read()
                timings = []
                for url in targets:
                    started = time.perf_counter()
                    response = opener.open(url)
                    response.read()
                    timings.append((time.perf_counter() - started) * 1000)
                    assert response.status == 200 and "/review/" in response.url
                p95 = statistics.quantiles(timings, n=20)[18]
                self.stdout.write(
                    f"  {name:<8} median {statistics.median(timings):6.1f} ms   "
                    f"p95 {p95:6.1f} ms   max {max(timings):6.1f} ms   "
                    f"n={len(timings)}"
                )
        finally:
            server.terminate()
            server.wait(timeout=10)

    def _vacuum(self) -> None:
        """Fresh statistics and no dead rows from earlier runs, as autovacuum would leave."""
        with connection.cursor() as cursor:
            for table in (
                "documents_document",
                "documents_page",
                "reliability_run",
                "review_reviewpacket",
                "review_auditevent",
                "django_session",
            ):
                cursor.execute(f"VACUUM ANALYZE {table}")

    def _cleanup(self) -> None:
        from review.models import AuditEvent, GroundTruth

        ids = list(
            ReviewPacket.objects.filter(document__sha256__startswith=PREFIX).values_list(
                "pk", flat=True
            )
        )
        AuditEvent.objects.filter(
            object_type="ReviewPacket", object_id__in=[str(i) for i in ids]
        ).delete()
        GroundTruth.objects.filter(document__sha256__startswith=PREFIX).delete()
        Document.objects.filter(sha256__startswith=PREFIX).delete()
