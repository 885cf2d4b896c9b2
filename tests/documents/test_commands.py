"""The bulk `ingest`, `load_demo` and `bench_ingest` management commands."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse

from documents.models import Document
from review.models import (
    AuditEvent,
    AuditSample,
    GroundTruth,
    Review,
    ReviewPacket,
    SecondReview,
)

pytestmark = pytest.mark.django_db(transaction=True)


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_ingest_walks_folders_and_reports_each_file(tmp_path, pathology_pdf, reviewer):
    folder = tmp_path / "incoming"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.pdf").write_bytes(pathology_pdf)
    (folder / "sub" / "note.TXT").write_text("ASSESSMENT AND PLAN\nFollow up in 3 months.")
    (folder / "ignored.docx").write_bytes(b"PK")

    out, _ = run("ingest", str(folder), "--user", reviewer.username)

    assert "2 file(s): 2 uploaded, 0 already present, 0 refused, 0 failed to ingest." in out
    assert set(Document.objects.values_list("status", flat=True)) == {"ready"}
    assert set(Document.objects.values_list("uploaded_by__username", flat=True)) == {"rita"}

    again, _ = run("ingest", str(folder))
    assert "2 file(s): 0 uploaded, 2 already present, 0 refused, 0 failed to ingest." in again
    assert Document.objects.count() == 2


def test_ingest_exits_with_an_error_when_a_file_is_refused(tmp_path):
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 nothing else")
    with pytest.raises(CommandError, match="Some files were not ingested"):
        run("ingest", str(tmp_path))
    assert Document.objects.count() == 0


def test_ingest_rejects_a_missing_path():
    with pytest.raises(CommandError, match="no such file or folder"):
        run("ingest", "/nonexistent/folder")


DEMO_DOCUMENTS = 11


def test_load_demo_creates_the_accounts_and_processes_every_demo_document():
    out, _ = run("load_demo", "--password", "demo-pass-123")

    users = get_user_model().objects
    user = users.get(username="reviewer")
    second = users.get(username="reviewer2")
    for account in (user, second):
        assert account.check_password("demo-pass-123")
        assert account.groups.filter(name="Reviewers").exists()
    for name in ("reviewer", "reviewer2", "admin"):
        assert f"username: {name} " in out
    assert "password: demo-pass-123" in out
    admin = users.get(username="admin")
    assert admin.check_password("demo-pass-123")
    assert admin.is_staff and admin.has_perm("review.export_ground_truth")
    assert user.has_perm("review.review_packets") and not user.has_perm(
        "review.export_ground_truth"
    )
    documents = Document.objects.all()
    assert documents.count() == DEMO_DOCUMENTS
    assert {d.status for d in documents} == {Document.Status.READY}
    assert {d.mime_type for d in documents} == {Document.MIME_PDF, Document.MIME_TEXT}
    assert "reviewer: 5 packet(s) in the review queue (the 7-page outside_records_bundle" in out
    assert "reviewer2: 1 second review(s)" in out and "admin: 1 adjudication(s)" in out

    counts = demo_counts()
    out, _ = run("load_demo", "--password", "demo-pass-123")  # running it again is harmless
    assert Document.objects.count() == DEMO_DOCUMENTS
    assert demo_counts() == counts
    assert "reviewer2: 1 second review(s)" in out and "admin: 1 adjudication(s)" in out


def demo_counts() -> dict[str, int]:
    return {
        "packets": ReviewPacket.objects.count(),
        "open": ReviewPacket.objects.filter(status__in=ReviewPacket.OPEN_STATUSES).count(),
        "reviews": Review.objects.count(),
        "second_reviews": SecondReview.objects.count(),
        "audits": AuditSample.objects.count(),
        "truth": GroundTruth.objects.count(),
        "events": AuditEvent.objects.exclude(action=AuditEvent.Action.VIEWED_PACKET).count(),
    }


def test_each_demo_account_finds_its_check_waiting(client):
    run("load_demo", "--password", "demo-pass-123")
    users = get_user_model().objects
    reviewer, second, admin = (users.get(username=n) for n in ("reviewer", "reviewer2", "admin"))

    # The reviewer: several packets, among them a 7-page bundle whose third document (a
    # tumour board note) the machine read as part of the pathology report: a split to make.
    client.force_login(reviewer)
    queue = client.get(reverse("review:queue")).content.decode()
    open_packets = ReviewPacket.objects.filter(status__in=ReviewPacket.OPEN_STATUSES)
    assert open_packets.count() == 5
    assert all(f'data-packet="{p.pk}"' in queue for p in open_packets)
    bundle = open_packets.get(document__original_filename="outside_records_bundle_demo.pdf")
    assert bundle.document.page_count == 7
    assert [
        (s["start_page"], s["end_page"], s["dominant_type"])
        for s in bundle.classification["segments"]
    ] == [(1, 3, "pathology"), (4, 5, "radiology"), (6, 7, "genomic")]
    # ... and one blind audit, of the accepted CT report.
    sample = AuditSample.objects.get()
    assert sample.status == AuditSample.Status.PENDING
    assert sample.document.original_filename == "ct_chest_demo.pdf"
    checks = client.get(reverse("review:checks")).content.decode()
    assert f'data-audit="{sample.pk}"' in checks
    assert "data-second=" not in checks  # the second reviews wait for someone else
    assert client.get(reverse("review:audit", args=[sample.pk])).status_code == 200

    # The second reviewer: the reviewer's correction of the portal message, blind.
    waiting = SecondReview.objects.get(status=SecondReview.Status.AWAITING)
    assert waiting.document.original_filename == "portal_message_demo.txt"
    assert (waiting.first_by, waiting.first_type) == (reviewer, "clinical_note")
    assert waiting.first_review.outcome == Review.Outcome.CORRECTED
    client.force_login(second)
    checks = client.get(reverse("review:checks")).content.decode()
    assert f'data-second="{waiting.pk}"' in checks
    assert client.get(reverse("review:second", args=[waiting.pk])).status_code == 200

    # The admin: the two reviewers disagree on the MMR/MSI report.
    disagreement = SecondReview.objects.get(status=SecondReview.Status.ADJUDICATION)
    assert disagreement.document.original_filename == "mmr_msi_report_demo.pdf"
    assert (disagreement.first_by, disagreement.first_type) == (reviewer, "genomic")
    assert (disagreement.second_reviewer, disagreement.second_type) == (second, "pathology")
    client.force_login(admin)
    checks = client.get(reverse("review:checks")).content.decode()
    assert f'data-adjudication="{disagreement.pk}"' in checks
    assert client.get(reverse("review:second", args=[disagreement.pk])).status_code == 200

    # Everything went through the services: decided, audited.
    actions = list(AuditEvent.objects.values_list("action", flat=True))
    assert actions.count(AuditEvent.Action.DECIDED) == 2
    assert actions.count(AuditEvent.Action.SECOND_REVIEWED) == 1
    assert actions.count(AuditEvent.Action.AUDIT_SAMPLED) == 1
    # Scripted decisions took nobody's time: the reviewer analytics leave them untimed.
    assert not Review.objects.filter(started_at__isnull=False).exists()


def test_the_demo_sets_its_own_draws_and_runs_inline_whatever_the_deployment_says(settings):
    # A deployment with workers (an unreachable Redis here), no audits and no second reviews.
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    settings.AUDIT_SAMPLE_RATE = 0.0
    settings.AUDIT_DAILY_MINIMUM = False
    settings.SECOND_REVIEW_ON_CORRECTION = False
    run("load_demo", "--password", "demo-pass-123")
    assert AuditSample.objects.count() == 1
    assert SecondReview.objects.filter(status=SecondReview.Status.AWAITING).count() == 1
    assert SecondReview.objects.filter(status=SecondReview.Status.ADJUDICATION).count() == 1


def test_bench_ingest_prints_pages_per_second_for_both_methods_and_peak_memory():
    out, _ = run("bench_ingest", "--pages", "4", "--repeat", "1")
    assert "Generated text PDF: 4 pages" in out
    assert re.search(r"PDF reader: PDFium through pypdfium2 \d+\.\d+", out)
    for label in ("pdfplumber extract_text() (plain)", "vetted extraction (pdfium)"):
        line = next(line for line in out.splitlines() if line.startswith(label))
        numbers = [float(n) for n in re.findall(r"\d+\.\d+", line[len(label) :])]
        assert len(numbers) == 4 and all(n > 0 for n in numbers)
    assert re.search(r"Process peak RSS: \d+ MiB", out)
    ratio = r"Full ingest / plain pdfplumber \(best runs\): \d+\.\dx \(target >= 5x\)"
    assert re.search(ratio, out)
    assert Document.objects.count() == 0  # the benchmark leaves nothing behind


def test_bench_ingest_writes_its_best_rates_to_json(tmp_path):
    target = tmp_path / "ingest.json"
    run("bench_ingest", "--pages", "3", "--repeat", "1", "--json", str(target))
    figures = json.loads(target.read_text())
    assert figures["reader"] == "pdfium"
    assert "compiled_reader" not in figures  # there is no compiled loop any more
    assert figures["pdfplumber_pages_per_second"] > 0
    assert figures["ingest_pages_per_second"] > 0
    assert figures["ingest_over_pdfplumber"] == pytest.approx(
        figures["ingest_pages_per_second"] / figures["pdfplumber_pages_per_second"], rel=0.02
    )
