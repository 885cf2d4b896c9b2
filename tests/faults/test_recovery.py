"""Faults with a real Redis (a private one, stopped and started here) and real `rqworker`
processes: every document ends ready and decided without a human, exactly once."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.urls import reverse

from documents.models import Document
from documents.services import document_create
from reliability.models import Run
from reliability.services import api_token_create
from review.models import GroundTruth, ReviewPacket
from tests.faults.conftest import TIMINGS, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

REPORT = (
    "SURGICAL PATHOLOGY REPORT\n\nFINAL DIAGNOSIS\n\nLeft breast, core biopsy: invasive ductal "
    "carcinoma, Nottingham grade 2.\n\nMICROSCOPIC DESCRIPTION\n\nNests of malignant epithelial "
    "cells infiltrate a desmoplastic stroma. Case {n}."
)


def report(n: int) -> bytes:
    return REPORT.format(n=n).encode()


def decided(document_id: Any) -> bool:
    document = Document.objects.get(pk=document_id)
    return (
        document.status == Document.Status.READY
        and Run.objects.filter(document=document, status=Run.Status.COMPLETED).exists()
    )


def assert_decided_once(document_id: Any) -> Run:
    document = Document.objects.get(pk=document_id)
    assert document.status == Document.Status.READY
    runs = list(Run.objects.filter(document=document))
    assert len(runs) == 1, [r.status for r in runs]
    run = runs[0]
    assert run.status == Run.Status.COMPLETED and run.final_decision
    outcomes = (
        GroundTruth.objects.filter(document=document).count()
        + ReviewPacket.objects.filter(run=run).count()
    )
    assert outcomes == 1
    assert document.pages.count() == 1
    return run


def upload(n: int, reviewer: Any) -> Document:
    return document_create(filename=f"report-{n}.txt", content=report(n), user=reviewer)


def requeued_within(seconds: float, condition: Any, *, since: float, what: str) -> float:
    """Seconds from ``since`` (a time.monotonic()) until ``condition`` (the work was queued
    again), printed; fails past ``seconds``."""
    wait_for(condition, timeout=seconds + 30, what=what)
    took = time.monotonic() - since
    print(f"\n[measured] {what}: {took:.1f} s after the SIGKILL (target < {seconds:g} s)")
    assert took < seconds, f"{what} took {took:.1f} s"
    return took


@pytest.mark.parametrize("fast", TIMINGS)
def test_a_worker_killed_mid_ingest_is_replaced_and_the_document_decided_once(
    workers, reviewer, fast
):
    # At default heartbeat, stale and recovery settings (what an operator gets) in the long
    # profile; at short ones (the same code paths, seconds instead of a minute) in CI.
    first = workers.start(fast=fast, FAULT_INGEST_SLEEP="600")
    document = upload(1, reviewer)
    wait_for(lambda: workers.lines("ingest-start"), what="the ingestion to start")
    assert Document.objects.get(pk=document.pk).status == Document.Status.INGESTING
    workers.kill(first)
    killed = time.monotonic()
    workers.start(fast=fast)  # nobody presses Retry: the new worker's recovery loop takes it over

    requeued_within(
        120,
        lambda: (
            Document.objects.filter(pk=document.pk)
            .exclude(status=Document.Status.INGESTING, ingest_attempts=1)
            .exists()
        ),
        since=killed,
        what="the killed ingestion queued again",
    )
    wait_for(lambda: decided(document.pk), what="the document to be decided")
    print(f"[measured] the document decided {time.monotonic() - killed:.1f} s after the SIGKILL")
    assert_decided_once(document.pk)
    assert Document.objects.get(pk=document.pk).ingest_attempts == 2


@pytest.mark.parametrize("fast", TIMINGS)
def test_a_worker_killed_mid_run_is_replaced_and_the_run_decided_once(workers, reviewer, fast):
    first = workers.start(fast=fast, FAULT_RUN_SLEEP="600")
    document = upload(2, reviewer)
    wait_for(lambda: workers.lines("classify-start"), what="the run to start")
    workers.kill(first)
    killed = time.monotonic()
    workers.start(fast=fast)

    requeued_within(
        120,
        lambda: (
            Run.objects.filter(document=document)
            .exclude(status=Run.Status.RUNNING, job_tries=1)
            .exists()
        ),
        since=killed,
        what="the killed run queued again",
    )
    wait_for(lambda: decided(document.pk), what="the run to be decided")
    print(f"[measured] the run decided {time.monotonic() - killed:.1f} s after the SIGKILL")
    run = assert_decided_once(document.pk)
    assert run.job_tries == 2


def test_a_run_outliving_its_lease_is_renewed_and_never_executed_twice(workers, reviewer):
    # A heartbeat goes stale after 3 s and the run takes 8 s; a second worker's recovery loop
    # looks every second for runs whose heartbeat went stale.
    workers.start(FAULT_RUN_SLEEP="8")
    workers.start(FAULT_RUN_SLEEP="8")
    document = upload(3, reviewer)

    wait_for(lambda: decided(document.pk), timeout=90, what="the run to be decided")
    run = assert_decided_once(document.pk)
    assert run.job_tries == 1
    assert len(workers.lines("classify-start")) == 1
    time.sleep(2)  # a second execution would have started by now
    assert len(workers.lines("classify-start")) == 1


def test_an_upload_while_redis_is_down_says_so_and_resumes_when_it_returns(
    workers, private_redis, reviewer, client
):
    private_redis.stop()
    _, key = api_token_create(user=reviewer, name="lims")
    headers = {"Authorization": f"Bearer {key}"}

    def submit() -> Any:
        from django.core.files.uploadedfile import SimpleUploadedFile

        return client.post(
            "/api/v1/documents/",
            {"file": SimpleUploadedFile("report-4.txt", report(4), "text/plain")},
            headers=headers,
        )

    response = submit()
    assert response.status_code == 503
    body = response.json()
    assert body["code"] == "queue_unreachable" and "automatically" in body["error"]
    again = submit()  # the client tries again: the same document, not a 409
    assert again.status_code == 503 and again.json()["id"] == body["id"]

    client.force_login(reviewer)
    from django.core.files.uploadedfile import SimpleUploadedFile

    page = client.post(
        reverse("documents:upload"),
        {"documents": [SimpleUploadedFile("report-5.txt", report(5), "text/plain")]},
        follow=True,
    )
    shown = [(m.level_tag, str(m)) for m in page.context["messages"]]
    assert not any(tag == "success" for tag, _ in shown), shown
    assert any(tag == "warning" and "not queued" in text for tag, text in shown), shown
    browser_doc = Document.objects.get(original_filename="report-5.txt")
    assert browser_doc.error_code == Document.QUEUE_UNREACHABLE

    private_redis.start()
    workers.start()
    for document_id in (body["id"], browser_doc.pk):
        wait_for(lambda d=document_id: decided(d), what="the queued-late document")
        assert_decided_once(document_id)
    ok = client.get(f"/api/v1/documents/{body['id']}/", headers=headers)
    assert ok.json()["status"] == "completed"


def test_a_worker_survives_redis_dropping_during_a_job_and_the_work_resumes(
    workers, private_redis, reviewer
):
    worker = workers.start(FAULT_INGEST_SLEEP="4")
    document = upload(6, reviewer)
    wait_for(lambda: workers.lines("ingest-start"), what="the ingestion to start")
    private_redis.stop()  # its queue is lost with it: no persistence
    # The job finishes its database work; queuing the run fails and says why.
    wait_for(
        lambda: Run.objects.filter(document=document, error_code=Run.QUEUE_UNREACHABLE).exists(),
        what="the run to fail for want of a queue",
    )
    time.sleep(2)
    assert worker.poll() is None, "the worker exited when Redis went away"
    private_redis.start()

    wait_for(lambda: decided(document.pk), what="the run to resume")
    assert_decided_once(document.pk)
    assert worker.poll() is None
