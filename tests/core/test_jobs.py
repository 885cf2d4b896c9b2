"""The durable-job mechanism on its own (core.jobs): claims from each state, the slack of a due
claim, stale takeover and the give-up after the maximum attempts, the heartbeat, a queue that
is unreachable and then back, jobs Redis lost, and no duplicate pushes. A kind of work of the
test's own runs on the webhook delivery table (it has every state: queued, running, waiting)."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from core import jobs
from core.jobs.lease import CLAIM_SLACK_SECONDS
from integrations.models import WebhookDelivery, WebhookEndpoint
from tests.conftest import use_redis

S = WebhookDelivery.Status
calls: list[str] = []


def record(pk: str) -> None:
    """The test work's job (inline): it only says it ran."""
    calls.append(pk)


TEST = jobs.Work(
    name="test",
    label="test row(s)",
    func="tests.core.test_jobs.record",
    model=WebhookDelivery,
    queued=S.PENDING,
    running=S.SENDING,
    failed=S.FAILED,
    waiting=S.RETRYING,
    due="next_attempt_at",
    queued_since="next_attempt_at",
    attempts="attempts",
    heartbeat="claimed_at",
    max_attempts=lambda: 2,
    give_up=lambda row, now: {"last_error": f"lost {row.attempts} time(s)"},
    unreachable=lambda now: {"last_error": "not queued"},
    unreachable_fails=False,
    on_claim=lambda now: {"last_attempt_at": now},
)


@pytest.fixture(autouse=True)
def no_calls() -> None:
    calls.clear()


def row(status: str = S.PENDING, **fields: Any) -> WebhookDelivery:
    endpoint = WebhookEndpoint.objects.first() or WebhookEndpoint.objects.create(
        name="e", url="http://127.0.0.1:9/", events=["document.ready"]
    )
    fields.setdefault("next_attempt_at", timezone.now())
    return WebhookDelivery.objects.create(
        endpoint=endpoint, event_id=uuid.uuid4(), event="document.ready", body="{}", status=status,
        **fields,
    )  # fmt: skip


def ago(seconds: float) -> Any:
    return timezone.now() - timedelta(seconds=seconds)


def sent(counts: dict[str, dict[str, int]]) -> int:
    return sum(counts["test"][step] for step in ("requeued", "resumed", "lost", "due"))


# -- claims -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_queued_row_is_claimed_once_counting_the_attempt_and_starting_the_heartbeat():
    queued = row(error_code="")
    claim = jobs.claim(TEST, queued.pk)
    assert claim is not None and claim.attempts == 1
    queued.refresh_from_db()
    assert queued.status == S.SENDING and queued.attempts == 1
    assert queued.claimed_at is not None and queued.last_attempt_at == queued.claimed_at
    assert jobs.claim(TEST, queued.pk) is None  # held by a live job
    for done in (S.SUCCEEDED, S.FAILED):
        assert jobs.claim(TEST, row(done).pk) is None


@pytest.mark.django_db
def test_a_waiting_row_is_claimed_once_due_allowing_a_few_seconds_of_clock_difference():
    later = row(S.RETRYING, next_attempt_at=timezone.now() + timedelta(seconds=60))
    almost = row(S.RETRYING, next_attempt_at=timezone.now() + timedelta(seconds=1))
    due = row(S.RETRYING, next_attempt_at=ago(1))
    assert jobs.claim(TEST, later.pk) is None  # not yet: it stays waiting, nothing lost
    assert jobs.claim(TEST, almost.pk) is not None  # within CLAIM_SLACK_SECONDS
    assert jobs.claim(TEST, due.pk) is not None
    assert CLAIM_SLACK_SECONDS >= 1  # RQ's own scheduler was up to a second early
    later.refresh_from_db()
    assert later.status == S.RETRYING and later.attempts == 0


@pytest.mark.django_db
def test_a_running_row_is_taken_over_only_once_its_heartbeat_is_stale(settings):
    running = row()
    first = jobs.claim(TEST, running.pk)
    assert first is not None
    assert jobs.claim(TEST, running.pk) is None  # its heartbeat is fresh
    WebhookDelivery.objects.filter(pk=running.pk).update(
        claimed_at=ago(settings.JOB_STALE_SECONDS + 1)
    )
    second = jobs.claim(TEST, running.pk)
    assert second is not None and second.attempts == 2
    with transaction.atomic():
        assert not first.holds()  # the first job must drop its result
        assert second.holds()
    assert first.rows().update(status=S.SUCCEEDED) == 0  # its outcome changes nothing


@pytest.mark.django_db
def test_a_stale_row_out_of_attempts_is_not_claimed_but_given_up_by_the_pass(settings):
    lost = row(S.SENDING, attempts=2, claimed_at=ago(settings.JOB_STALE_SECONDS + 1))
    assert jobs.claim(TEST, lost.pk) is None
    counts = jobs.recover([TEST])["test"]
    assert (counts["failed"], counts["requeued"]) == (1, 0)
    lost.refresh_from_db()
    assert (lost.status, lost.error_code, lost.last_error) == (
        S.FAILED,
        jobs.WORKER_LOST,
        "lost 2 time(s)",
    )
    assert calls == []


@pytest.mark.django_db
def test_the_pass_requeues_a_row_whose_worker_died_and_leaves_a_beating_one(settings):
    dead = row(S.SENDING, attempts=1, claimed_at=ago(settings.JOB_STALE_SECONDS + 1))
    alive = row(S.SENDING, attempts=1, claimed_at=ago(settings.JOB_STALE_SECONDS - 5))
    never = row(S.SENDING, attempts=1, claimed_at=None)  # claimed before heartbeats existed
    counts = jobs.recover([TEST])["test"]
    assert counts["requeued"] == 2 and counts["failed"] == 0
    assert sorted(calls) == sorted([str(dead.pk), str(never.pk)])  # inline: sent now
    dead.refresh_from_db()
    alive.refresh_from_db()
    assert dead.status == S.PENDING and dead.attempts == 1  # the next claim counts
    assert alive.status == S.SENDING


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_renews_while_the_job_works_and_stops_with_the_claim(settings):
    settings.JOB_HEARTBEAT_SECONDS = 0.2
    beating = row()
    claim = jobs.claim(TEST, beating.pk)
    assert claim is not None
    claimed_at = WebhookDelivery.objects.get(pk=beating.pk).claimed_at
    with claim.heartbeat() as heartbeat:
        time.sleep(0.9)
        assert heartbeat.beats >= 2
        assert WebhookDelivery.objects.get(pk=beating.pk).claimed_at > claimed_at
        WebhookDelivery.objects.filter(pk=beating.pk).update(status=S.SUCCEEDED)
        time.sleep(0.5)
        beats = heartbeat.beats
        assert not heartbeat._thread.is_alive()  # the claim is gone: it stopped by itself
    assert heartbeat.beats == beats


# -- queues: inline, unreachable, lost, due, duplicates ----------------------------------------


@pytest.mark.django_db(transaction=True)
def test_submit_sends_after_commit_and_never_for_a_rolled_back_row():
    with transaction.atomic():
        kept = row()
        jobs.submit(TEST, [kept.pk])
        assert calls == []  # not before the commit
    assert calls == [str(kept.pk)]
    with pytest.raises(RuntimeError), transaction.atomic():
        gone = row()
        jobs.submit(TEST, [gone.pk])
        raise RuntimeError
    assert calls == [str(kept.pk)]


def held(pk: str) -> None:
    """The background test work's job: waits for the test to let it finish."""
    assert release.wait(10)
    calls.append(pk)


release = threading.Event()


@pytest.mark.django_db(transaction=True)
def test_background_work_runs_after_the_commit_without_holding_the_caller():
    import dataclasses

    background = dataclasses.replace(
        TEST, name="test-background", func="tests.core.test_jobs.held", background_inline=True
    )
    release.clear()
    with transaction.atomic():
        first, second = row(), row()
        jobs.submit(background, [first.pk, second.pk])
    assert calls == []  # submitted and committed; the jobs wait in the background
    assert not jobs.drain_background(0.1)
    release.set()
    assert jobs.drain_background(10)
    assert sorted(calls) == sorted([str(first.pk), str(second.pk)])


@pytest.mark.django_db(transaction=True)
def test_an_unreachable_queue_marks_the_row_and_the_pass_sends_it_once_redis_answers(
    settings, redis_url
):
    use_redis(settings, "redis://127.0.0.1:1/0")  # nothing listens on port 1
    with transaction.atomic():
        waiting = row()
        jobs.submit(TEST, [waiting.pk])  # the request that made it does not fail
    waiting.refresh_from_db()
    assert (waiting.status, waiting.error_code) == (S.PENDING, jobs.QUEUE_UNREACHABLE)
    assert waiting.last_error == "not queued"

    assert jobs.recover([TEST])["test"]["resumed"] == 0  # still unreachable: still marked
    waiting.refresh_from_db()
    assert waiting.error_code == jobs.QUEUE_UNREACHABLE

    use_redis(settings, redis_url)  # Redis answers again
    assert jobs.recover([TEST])["test"]["resumed"] == 1
    waiting.refresh_from_db()
    assert (waiting.status, waiting.error_code) == (S.PENDING, "")
    assert jobs.get_queue().job_ids == [f"test-{waiting.pk}-0"]


@pytest.mark.django_db(transaction=True)
def test_a_queued_row_whose_job_redis_lost_is_sent_again_once_and_only_when_old_enough(
    settings, redis_url
):
    from redis import Redis

    with transaction.atomic():
        queued = row()
        jobs.submit(TEST, [queued.pk])
    queue = jobs.get_queue()
    assert queue.job_ids == [f"test-{queued.pk}-0"]
    assert jobs.recover([TEST])["test"]["lost"] == 0  # its job is queued: not pushed again
    Redis.from_url(redis_url).flushdb()  # Redis restarted without its data

    assert jobs.recover([TEST])["test"]["lost"] == 0  # just queued: its push may be under way
    WebhookDelivery.objects.filter(pk=queued.pk).update(
        next_attempt_at=ago(settings.QUEUE_LOST_SECONDS + 1)
    )
    assert jobs.recover([TEST])["test"]["lost"] == 1
    assert jobs.recover([TEST])["test"]["lost"] == 0
    assert queue.job_ids == [f"test-{queued.pk}-0"]
    assert jobs.jobs_missing([f"test-{queued.pk}-0", "test-unknown-0"]) == {"test-unknown-0"}


@pytest.mark.django_db(transaction=True)
def test_due_waiting_rows_are_sent_once_however_many_passes_run_and_again_if_a_job_ends(
    redis_url,
):
    from redis import Redis
    from rq.job import Job

    due = row(S.RETRYING, attempts=1, next_attempt_at=ago(0.1))
    later = row(S.RETRYING, attempts=1, next_attempt_at=timezone.now() + timedelta(seconds=60))
    for _ in range(3):  # a busy queue: the job waits there while passes go by
        jobs.recover([TEST])
    queue = jobs.get_queue()
    assert queue.job_ids == [f"test-{due.pk}-1"]
    assert later.pk not in {job.args[0] for job in queue.jobs}

    # The job ran and found nothing to do (say the clocks disagreed by more than the slack):
    # the row is still waiting, and the next pass sends it again.
    queue.empty()
    Redis.from_url(redis_url).hset(Job.key_for(f"test-{due.pk}-1"), "status", "finished")
    assert sent(jobs.recover([TEST])) == 1
    assert queue.job_ids == [f"test-{due.pk}-1"]


@pytest.mark.django_db(transaction=True)
def test_requeue_lost_sends_the_given_rows_at_once_whatever_their_age(redis_url):
    from redis import Redis

    rows = [row() for _ in range(3)]
    marked = row(error_code=jobs.QUEUE_UNREACHABLE)
    done = row(S.SUCCEEDED)
    Redis.from_url(redis_url).flushdb()
    sent_now = jobs.requeue_lost(TEST, [r.pk for r in [*rows, marked, done]])
    assert sent_now == 4
    assert jobs.requeue_lost(TEST, [r.pk for r in rows]) == 0  # all queued now
    assert len(jobs.get_queue().job_ids) == 4


def test_the_registered_kinds_are_the_apps_own():
    names = {work.name: work for work in jobs.registered()}
    assert set(names) == {"ingest", "render", "run", "webhook", "learning"}
    assert names["run"].waiting == "waiting" and names["webhook"].waiting == "retrying"
    assert names["ingest"].waiting is None and names["learning"].waiting is None


def test_waiting_without_a_due_field_is_refused():
    with pytest.raises(ValueError, match="go together"):
        jobs.Work(**{**TEST.__dict__, "due": None})


@pytest.mark.django_db(transaction=True)
def test_a_run_after_a_wait_gets_a_new_job_id_though_its_tries_start_again(redis_url):
    from redis import Redis
    from rq.job import Job

    from reliability.jobs import RUN
    from reliability.models import Run
    from tests.conftest import ready_document

    run = Run.objects.create(
        document=ready_document("CT CHEST\n\nFINDINGS\n\nNormal."),
        preset="clinical",
        classifier="offline",
        status=Run.Status.WAITING,
        retry_at=ago(1),
        waits=1,
        job_tries=0,  # a wait is not a lost try
    )
    # The execution that put it aside was killed before RQ heard it finish: its job still
    # says "started" and must not hold the run back.
    Redis.from_url(redis_url).hset(Job.key_for(f"run-{run.pk}-0-0"), "status", "started")
    assert jobs.recover([RUN])["run"]["due"] == 1
    assert jobs.get_queue().job_ids == [f"run-{run.pk}-0-1"]
