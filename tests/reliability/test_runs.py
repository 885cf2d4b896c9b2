"""Runs as jobs: a real Redis and RQ worker, idempotency, lost workers, outcomes, commands."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from core import jobs
from core.jobs import get_queue
from reliability import services, tasks
from reliability.jobs import RUN
from reliability.models import Run
from review.models import GroundTruth, ReviewPacket
from tests.conftest import ready_document, run_burst_worker

pytestmark = pytest.mark.django_db(transaction=True)

RADIOLOGY = (
    "CT CHEST WITH CONTRAST\n\nFINDINGS\n\nNo pulmonary nodule, consolidation or "
    "pleural effusion. The mediastinal lymph nodes are not enlarged.\n\nIMPRESSION\n\n"
    "No acute cardiopulmonary abnormality on axial images."
)


def test_a_run_is_queued_and_a_burst_worker_completes_it(redis_url):
    document = ready_document(RADIOLOGY)
    run = services.run_start(document=document)

    queue = get_queue()
    assert [job.func_name for job in queue.jobs] == ["reliability.tasks.execute_run"]
    run.refresh_from_db()
    assert run.status == Run.Status.PENDING

    run_burst_worker(redis_url)

    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED
    assert run.final_decision == "AUTO_ACCEPT"
    assert run.attempts.count() == 1
    truth = GroundTruth.objects.get(document=document)
    assert (truth.source, truth.dominant_type, truth.run) == ("AUTO_ACCEPTED", "radiology", run)


def test_a_run_job_executed_twice_creates_one_outcome(redis_url):
    document = ready_document("Fax cover sheet\n\nPlease see attached.")
    run = services.run_start(document=document)
    job = get_queue().jobs[0]
    get_queue().enqueue(job.func_name, *job.args)  # the same job delivered twice

    run_burst_worker(redis_url)

    assert Run.objects.count() == 1
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED and run.job_tries == 1
    outcomes = ReviewPacket.objects.count() + GroundTruth.objects.count()
    assert outcomes == 1
    assert tasks.execute_run(run.pk) == "skipped"
    assert ReviewPacket.objects.count() + GroundTruth.objects.count() == 1


def test_ingestion_starts_a_run(pathology_text_document):
    run = Run.objects.get(document=pathology_text_document)
    assert run.status == Run.Status.COMPLETED


@pytest.fixture
def pathology_text_document():
    from documents.services import document_create

    text = (
        "SURGICAL PATHOLOGY REPORT\n\nFINAL DIAGNOSIS\n\nInvasive ductal carcinoma, "
        "Nottingham grade 2, margins negative.\n\nGROSS DESCRIPTION\n\nReceived in formalin."
    )
    document = document_create(filename="path.txt", content=text.encode(), user=None)
    return document


def test_a_run_abandoned_by_a_dead_worker_is_queued_again_and_completes(settings, redis_url):
    document = ready_document(RADIOLOGY)
    settings.REDIS_URL = ""
    settings.AUTO_CLASSIFY = False
    run = Run.objects.create(document=document, preset="clinical", classifier="offline")
    # A worker claimed it, then died: the row says running, nobody is working on it.
    assert jobs.claim(RUN, run.pk)
    Run.objects.filter(pk=run.pk).update(
        claimed_at=timezone.now() - timedelta(seconds=settings.JOB_STALE_SECONDS + 5)
    )
    assert services.run_execute(run_id=run.pk) is not None  # reclaimed: the lease expired
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED and run.job_tries == 2


def test_a_fresh_lease_is_not_stolen_and_a_stale_run_is_recovered(settings, redis_url):
    document = ready_document(RADIOLOGY)
    run = Run.objects.create(document=document, preset="clinical", classifier="offline")
    assert jobs.claim(RUN, run.pk)
    assert not jobs.claim(RUN, run.pk)  # a live worker holds it

    Run.objects.filter(pk=run.pk).update(
        claimed_at=timezone.now() - timedelta(seconds=settings.JOB_STALE_SECONDS + 5)
    )
    out = io.StringIO()
    call_command("recover", stdout=out)
    assert "1 run(s) queued again, 0 failed." in out.getvalue()
    run.refresh_from_db()
    assert run.status == Run.Status.PENDING

    run_burst_worker(redis_url)
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED


def test_a_run_lost_too_often_is_failed_not_left_running(settings):
    document = ready_document(RADIOLOGY)
    run = Run.objects.create(
        document=document,
        preset="clinical",
        classifier="offline",
        status=Run.Status.RUNNING,
        job_tries=settings.RUN_MAX_JOB_TRIES,
        claimed_at=timezone.now() - timedelta(days=1),
    )
    recovered = jobs.recover()["run"]
    assert {"requeued": recovered["requeued"], "failed": recovered["failed"]} == {
        "requeued": 0,
        "failed": 1,
    }
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED and "giving up" in run.error


def test_an_escalated_run_makes_a_packet_with_sorted_issues_and_history(reviewer_client):
    document = ready_document(
        "TEST REQUISITION\n\nCT chest with contrast. FINDINGS: nodules. "
        "IMPRESSION: see report. Axial images, mediastinal nodes."
    )
    run = services.run_start(document=document)
    run.refresh_from_db()
    packet = ReviewPacket.objects.get(run=run)
    assert run.final_decision == "ESCALATE_TO_SME" and packet.status == "pending"
    ranks = [{"BLOCKER": 0, "MAJOR": 1, "MINOR": 2}[i["severity"]] for i in packet.issues]
    assert ranks == sorted(ranks) and packet.issue_count == len(packet.issues)
    assert packet.history and packet.history[0]["number"] == 0
    assert packet.comparison == {
        "available": False,
        "reason": "The offline classifier is the primary: there is no second opinion.",
    }

    out = io.StringIO()
    call_command("export_packet", str(packet.pk), stdout=out)
    exported = json.loads(out.getvalue())
    assert exported["document"]["sha256"] == document.sha256
    assert exported["issues"] == packet.issues
    assert set(exported) >= {"classification", "production_comparison", "run", "history"}

    download = reviewer_client.get(reverse("reliability:packet", args=[run.pk]))
    assert download.status_code == 200
    assert json.loads(download.content) == exported


def test_rerun_starts_a_new_run_and_keeps_the_old_one():
    document = ready_document(RADIOLOGY)
    services.run_start(document=document)
    out = io.StringIO()
    call_command("rerun", str(document.pk), "--preset", "batch", stdout=out)
    assert re_run_line(out.getvalue())
    assert Run.objects.filter(document=document).count() == 2
    assert Run.objects.filter(document=document, preset="batch").exists()
    versions = list(GroundTruth.objects.filter(document=document).values_list("version", flat=True))
    assert sorted(versions) == [1, 2]
    second = GroundTruth.objects.get(document=document, version=2)
    assert second.supersedes.version == 1


def re_run_line(text: str) -> bool:
    return text.startswith("Run ") and "completed, AUTO_ACCEPT" in text


def test_the_run_page_needs_a_login_and_shows_attempts(reviewer_client):
    from django.test import Client

    document = ready_document(RADIOLOGY)
    run = services.run_start(document=document)
    url = reverse("reliability:run", args=[run.pk])
    assert Client().get(url).status_code == 302
    body = reviewer_client.get(url).content.decode()
    assert "Attempt 0" in body and "R7 no issues" in body
    assert reviewer_client.get(reverse("reliability:packet", args=[run.pk])).status_code == 404
    assert reviewer_client.get(reverse("reliability:new", args=[document.pk])).status_code == 405
