from __future__ import annotations

import http.cookiejar
import json
import os
import random
import secrets
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
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from benchmarks.faults import clean_output
from documents.models import Document, Page
from engine import pipeline
from engine.document import DocumentContext
from engine.schemas import DOC_TYPES, Evidence
from reliability.models import Run
from review.models import GroundTruth, Review, ReviewPacket
from review.roles import ADMINS, REVIEWERS, ensure_roles

PREFIX = "bench-review-"
PASSWORD = "bench-review-password-1"
PAGES = [
    "SURGICAL PATHOLOGY REPORT\n\nHistory: breast mass.\n\nFINAL DIAGNOSIS\n\nLeft breast, core "
    "biopsy: invasive ductal carcinoma, Nottingham grade 2.\n\nComment: margins cannot be "
    "assessed.\n\nER positive (95%).",
    "TEST REQUISITION\n\nGROSS DESCRIPTION\n\nThree cores of tan tissue, 1.2 to 1.6 cm, "
    "submitted entirely in one cassette.",
]


SMALL = 100
OUTCOMES = ["validated", "validated", "validated", "corrected"]


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18] if len(values) > 1 else values[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Command(BaseCommand):
    help = (
        "Seed escalated documents (a share of them decided), serve them with gunicorn on "
        "127.0.0.1 and time the queue, packet and metrics pages; count SQL queries per page "
        "at 100 packets and at the full size."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--documents", type=int, default=10_000)
        parser.add_argument("--requests", type=int, default=250, help="timed requests per page")
        parser.add_argument(
            "--decided",
            type=float,
            default=0.3,
            help="share of packets already decided, with a review and ground truth (default 0.3)",
        )
        parser.add_argument("--json", dest="json_out", help="also write the figures here")
        parser.add_argument("--keep", action="store_true", help="keep the seeded rows")

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "postgresql":
            raise CommandError("bench_review needs PostgreSQL: set DATABASE_URL.")
        if not 0 <= options["decided"] < 1:
            raise CommandError("--decided is a share between 0 and 1.")
        size = max(options["documents"], SMALL)
        self._cleanup()
        users = self._users()
        template = self._template()
        try:
            self._seed(SMALL, template, users, options["decided"])
            self._vacuum()
            small = self._query_counts(users)
            started = time.perf_counter()
            self._seed(size, template, users, options["decided"])
            self._vacuum()
            self.stdout.write(
                f"Seeded {size} escalated documents with packets "
                f"({options['decided']:.0%} decided) in {time.perf_counter() - started:.1f} s"
            )
            large = self._query_counts(users)
            self.stdout.write(f"SQL queries per page ({SMALL} packets -> {size} packets):")
            for page in small:
                self.stdout.write(f"  {page:<26}{small[page]:>4} -> {large[page]}")
            timings = self._serve_and_time(options["requests"])
            timings["metrics_fresh"] = self._fresh_metrics(users["admin"], repeat=20)
        finally:
            if not options["keep"]:
                self._cleanup()
        figures: dict[str, Any] = {"documents": size, "decided_share": options["decided"]}
        for name, values in timings.items():
            figures[f"{name}_median_ms"] = round(statistics.median(values), 1)
            figures[f"{name}_p95_ms"] = round(_p95(values), 1)
        figures["requests_per_page"] = options["requests"]
        figures["sql_queries_at_100"] = small
        figures[f"sql_queries_at_{size}"] = large
        figures["sql_queries_constant"] = small == large
        targets = {"queue": 50, "packet": 50, "metrics": 200}
        verdicts = [
            f"{name} p95 {figures[f'{name}_p95_ms']} ms "
            f"({'meets' if figures[f'{name}_p95_ms'] <= limit else 'MISSES'} <= {limit})"
            for name, limit in targets.items()
        ]
        self.stdout.write("Targets: " + "; ".join(verdicts))
        self.stdout.write(
            "SQL per page " + ("the same" if small == large else "NOT the same") + " at both sizes"
        )
        if options["json_out"]:
            with open(options["json_out"], "w") as out:
                out.write(json.dumps(figures, indent=2) + "\n")

    def _users(self) -> dict[str, Any]:
        roles = ensure_roles()
        users = {}
        for name, role in (("clinician", REVIEWERS), ("admin", ADMINS)):
            user, _ = get_user_model().objects.get_or_create(username=f"{PREFIX}{name}")
            user.set_password(PASSWORD)
            user.save()
            user.groups.add(roles[role])
            users[name] = user
        return users

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

    def _seed(
        self, target: int, template: dict[str, Any], users: dict[str, Any], decided: float
    ) -> None:
        have = Document.objects.filter(sha256__startswith=PREFIX).count()
        rng = random.Random(have)
        for start in range(have, target, 2000):
            stop = min(target, start + 2000)
            documents = Document.objects.bulk_create(
                [
                    Document(
                        original_filename=f"bench-{i:06d}.pdf",
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
                        attempts_count=rng.choice([1, 1, 1, 2, 3]),
                    )
                    for d in documents
                ]
            )
            packets = ReviewPacket.objects.bulk_create(
                [
                    ReviewPacket(
                        run=r,
                        document=r.document,
                        status=ReviewPacket.Status.COMPLETED
                        if rng.random() < decided
                        else ReviewPacket.Status.PENDING,
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
            self._decide(
                [p for p in packets if p.status == ReviewPacket.Status.COMPLETED], users, rng
            )
        self._spread_in_time()

    def _decide(
        self, packets: list[ReviewPacket], users: dict[str, Any], rng: random.Random
    ) -> None:
        """Decisions as review_submit leaves them: ground truth and a standing review."""
        outcomes = [rng.choice(OUTCOMES) for _ in packets]
        truths = GroundTruth.objects.bulk_create(
            [
                GroundTruth(
                    document_id=p.document_id,
                    source=GroundTruth.Source.SME_VALIDATED
                    if outcome == "validated"
                    else GroundTruth.Source.SME_CORRECTED,
                    dominant_type=p.dominant_type,
                    classification=p.classification,
                    reviewer=users["clinician"],
                    run_id=p.run_id,
                )
                for p, outcome in zip(packets, outcomes, strict=True)
            ]
        )
        Review.objects.bulk_create(
            [
                Review(
                    packet=p,
                    reviewer=users["clinician"],
                    outcome=outcome,
                    ground_truth=truth,
                    claimed_type=p.dominant_type,
                )
                for p, outcome, truth in zip(packets, outcomes, truths, strict=True)
            ]
        )

    def _spread_in_time(self) -> None:
        """Packets escalated over the last 60 days and decided up to two days later, as a
        queue that has been worked for a while (the seeded rows were all written just now)."""
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE review_reviewpacket p SET created_at = now() - random() * interval "
                "'60 days' FROM documents_document d WHERE d.id = p.document_id AND "
                "d.sha256 LIKE %s AND p.created_at > now() - interval '1 hour'",
                [f"{PREFIX}%"],
            )
            cursor.execute(
                "UPDATE review_review r SET finished_at = LEAST(now(), p.created_at + random() "
                "* interval '2 days') FROM review_reviewpacket p, documents_document d WHERE "
                "p.id = r.packet_id AND d.id = p.document_id AND d.sha256 LIKE %s AND "
                "r.finished_at > now() - interval '1 hour'",
                [f"{PREFIX}%"],
            )
            cursor.execute(
                "UPDATE review_review r SET escalated_at = p.created_at FROM review_reviewpacket p"
                ", documents_document d WHERE p.id = r.packet_id AND d.id = p.document_id AND "
                "d.sha256 LIKE %s AND r.escalated_at IS NULL",
                [f"{PREFIX}%"],
            )
            cursor.execute(
                "UPDATE review_reviewpacket p SET updated_at = r.finished_at FROM review_review "
                "r, documents_document d WHERE r.packet_id = p.id AND d.id = p.document_id AND "
                "d.sha256 LIKE %s AND p.updated_at > now() - interval '1 hour'",
                [f"{PREFIX}%"],
            )

    def _cases(self) -> dict[str, list[str]]:
        """What each timed page asks for. The queue: its first page, pages after a cursor
        anywhere in it, and the first and later pages of each type and each severity."""
        from review.queue import cursor_of

        open_packets = ReviewPacket.objects.filter(
            document__sha256__startswith=PREFIX, status__in=ReviewPacket.OPEN_STATUSES
        ).only("pk", "priority", "created_at", "dominant_type", "worst_severity")
        rows = list(open_packets.order_by("priority", "created_at", "pk"))
        rng = random.Random(1)
        queue = reverse("review:queue")
        urls = [queue]
        for _ in range(99):
            row = rng.choice(rows)
            which = rng.random()
            if which < 0.5:
                urls.append(f"{queue}?after={cursor_of(row)}")
            elif which < 0.6:
                urls.append(f"{queue}?before={cursor_of(row)}")
            elif which < 0.8:
                urls.append(f"{queue}?type={row.dominant_type}&after={cursor_of(row)}")
            else:
                urls.append(f"{queue}?severity={row.worst_severity}")
        middle = cursor_of(rows[len(rows) // 2])  # a full page after it at both sizes
        return {
            "queue": urls,
            "middle": [f"{queue}?after={middle}"],
            "packet": [
                reverse("review:packet", args=[r.pk]) for r in rng.sample(rows, min(50, len(rows)))
            ],
            "metrics": [reverse("review:metrics")],
        }

    def _query_counts(self, users: dict[str, Any]) -> dict[str, int]:
        cases = self._cases()
        pages = {
            "queue (first page)": ("clinician", cases["queue"][0], {}),
            "queue (after a cursor)": ("clinician", cases["middle"][0], {}),
            "queue (type filter)": (
                "clinician",
                reverse("review:queue") + "?type=pathology",
                {},
            ),
            "queue counts (refresh)": (
                "clinician",
                cases["queue"][0],
                {"HX-Request": "true", "HX-Target": "queue-counts"},
            ),
            "packet": ("clinician", cases["packet"][0], {}),
            "metrics": ("admin", cases["metrics"][0], {}),
        }
        clients = {}
        for name, user in users.items():
            clients[name] = Client()
            clients[name].force_login(user)
        counts = {}
        # Metrics as computed (not the shared copy); the queue's counts as most refreshes find
        # them (computed once per change, then kept).
        fresh_metrics = override_settings(METRICS_MAX_AGE_SECONDS=0)
        fresh_metrics.enable()
        for name, (who, url, headers) in pages.items():
            clients[who].get(url, headers={"Host": "localhost", **headers})  # counts computed once
            with CaptureQueriesContext(connection) as queries:
                response = clients[who].get(url, headers={"Host": "localhost", **headers})
            assert response.status_code == 200, (name, response.status_code)
            counts[name] = len(queries)
        fresh_metrics.disable()
        return counts

    def _fresh_metrics(self, admin: Any, *, repeat: int) -> list[float]:
        """The metrics page with its aggregates computed on every request (no shared copy),
        in this process: what the first admin after each minute waits for."""
        client = Client()
        client.force_login(admin)
        values = []
        with override_settings(METRICS_MAX_AGE_SECONDS=0):
            for i in range(repeat + 2):
                started = time.perf_counter()
                response = client.get(reverse("review:metrics"), headers={"Host": "localhost"})
                elapsed = (time.perf_counter() - started) * 1000
                assert response.status_code == 200
                if i >= 2:
                    values.append(elapsed)
        self.stdout.write(
            f"  metrics computed afresh (in process, no shared copy): median "
            f"{statistics.median(values):6.1f} ms   p95 {_p95(values):6.1f} ms   n={len(values)}"
        )
        return values

    def _login(self, base: str, username: str) -> urllib.request.OpenerDirector:
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        opener.open(f"{base}/accounts/login/").read()
        token = next(c.value for c in jar if c.name == "csrftoken")
        body = urllib.parse.urlencode(
            {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token}
        ).encode()
        opener.open(
            urllib.request.Request(
                f"{base}/accounts/login/", data=body, headers={"Referer": f"{base}/accounts/login/"}
            )
        ).read()
        return opener

    def _serve_and_time(self, requests: int) -> dict[str, list[float]]:
        port = _free_port()
        env = {**os.environ, "DEBUG": "0", "DJANGO_SETTINGS_MODULE": "config.settings"}
        # With DEBUG off the server refuses the public default key (config.env): a key of its
        # own (it signs the sessions it makes itself).
        env.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
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
            openers = {
                "clinician": self._login(base, f"{PREFIX}clinician"),
                "admin": self._login(base, f"{PREFIX}admin"),
            }
            cases = self._cases()
            plan = {
                "queue": ("clinician", cases["queue"], {}),
                "counts": (
                    "clinician",
                    cases["queue"][:1],
                    {"HX-Request": "true", "HX-Target": "queue-counts"},
                ),
                "packet": ("clinician", cases["packet"], {}),
                "metrics": ("admin", cases["metrics"], {}),
            }
            self.stdout.write(
                f"gunicorn (2 workers) on 127.0.0.1, PostgreSQL; {requests} requests per page "
                "after 10 warm-up requests (queue: first pages, pages after and before cursors "
                "anywhere in the queue, type and severity filters; counts: the 10-second "
                "refresh; packet: open packets):"
            )
            timings: dict[str, list[float]] = {}
            for name, (who, urls, headers) in plan.items():
                opener = openers[who]
                targets = [urls[i % len(urls)] for i in range(requests + 10)]
                values = []
                for i, url in enumerate(targets):
                    started = time.perf_counter()
                    response = opener.open(urllib.request.Request(base + url, headers=headers))
                    response.read()
                    elapsed = (time.perf_counter() - started) * 1000
                    assert response.status == 200 and "/accounts/login" not in response.url
                    if i >= 10:
                        values.append(elapsed)
                timings[name] = values
                self.stdout.write(
                    f"  {name:<8} median {statistics.median(values):6.1f} ms   "
                    f"p95 {_p95(values):6.1f} ms   max {max(values):6.1f} ms   n={len(values)}"
                )
            return timings
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
                "review_review",
                "review_groundtruth",
                "review_auditevent",
                "django_session",
            ):
                cursor.execute(f"VACUUM ANALYZE {table}")

    def _cleanup(self) -> None:
        from review.models import AuditEvent

        ids = list(
            ReviewPacket.objects.filter(document__sha256__startswith=PREFIX).values_list(
                "pk", flat=True
            )
        )
        AuditEvent.objects.filter(
            object_type="ReviewPacket", object_id__in=[str(i) for i in ids]
        ).delete()
        Review.objects.filter(packet_id__in=ids).delete()
        GroundTruth.objects.filter(document__sha256__startswith=PREFIX).delete()
        Document.objects.filter(sha256__startswith=PREFIX).delete()
