"""The RQ worker class (settings.RQ["WORKER_CLASS"]): it imports the job code, the rule data, the
OCR binding and, when a language model is configured, its SDK (google-genai or openai) and its
client once, in the worker process, before it forks a work horse per job. Otherwise every job
pays for them again (about a second for google-genai alone, which at a model latency of
seconds is a third of a worker's throughput; half a second for pytesseract, which imports
pandas, four times the ingestion of a three-page text PDF)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from redis.exceptions import RedisError
from rq import Worker as RQWorker

logger = logging.getLogger(__name__)


def preload() -> None:
    from django.conf import settings

    import documents.tasks  # noqa: F401  (the job code)
    import integrations.tasks  # noqa: F401
    import reliability.tasks  # noqa: F401
    from engine import llm
    from engine.classifiers.offline import load_vocabulary
    from engine.verifiers.v3_domain import load_rules

    load_vocabulary()
    load_rules()
    # Every ingestion of a PDF builds the OCR engine (documents.services.pages_extract).
    import pytesseract  # noqa: F401

    if llm.configured(settings):
        try:
            llm.client_from_settings(settings)  # the SDK and its client, inherited by each job
        except Exception:  # a bad key shows up on the first run, with the run's own error
            logger.exception("could not prepare the language model's client")


class RecoveryLoop:
    """A daemon thread in the worker (the parent, not the forked work horses) that runs the
    recovery pass (config.recovery: core.jobs.recover, the dispatcher of every kind of
    background work) once when the worker starts, then every RECOVERY_INTERVAL_SECONDS. A short
    Redis lock lets one worker at a time do a pass; while Redis is down the pass is skipped
    (there is no queue to put the work on anyway) and the loop carries on, so the first pass
    after Redis is back sends what waited meanwhile."""

    LOCK = "vetted:recovery-lock"

    def __init__(self, connection: Any, interval: float) -> None:
        self.connection = connection
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="vetted-recovery", daemon=True)

    def start(self) -> None:
        if not self._thread.is_alive():
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def run_once(self) -> None:
        """One pass now, whoever holds the lock (a worker that starts, a burst worker)."""
        from django.db import connection

        from config.recovery import recover

        try:
            recover()
        except Exception:
            logger.exception("recovery pass failed")
        finally:
            connection.close()  # never left open in the parent for a work horse to inherit

    def _locked(self) -> bool:
        # Held a little less than an interval, so that the worker holding it finds it free at
        # its own next turn, and the others skip the passes in between.
        try:
            return bool(
                self.connection.set(self.LOCK, "1", nx=True, px=max(500, int(self.interval * 900)))
            )
        except RedisError:
            return False

    def _run(self) -> None:
        self.run_once()
        while not self._stop.wait(self.interval):
            if self._locked():
                self.run_once()


class Worker(RQWorker):
    """Survives a Redis restart: where RQ's worker quits on a lost connection (while busy, or
    in its bookkeeping), this one waits for Redis and starts its loop again. Its recovery loop
    resumes what the outage left behind and sends waiting work when it is due (RQ's scheduler
    is not used: ``--with-scheduler`` is not needed). A burst worker runs one pass first, so
    it also sends the work that is due."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        preload()
        from django.conf import settings

        self.recovery = RecoveryLoop(self.connection, settings.RECOVERY_INTERVAL_SECONDS)

    def work(self, burst: bool = False, **kwargs: Any) -> bool:  # type: ignore[override]
        if burst:
            self.recovery.run_once()
        else:
            self.recovery.start()
        worked = False
        wait = 1.0
        while True:
            try:
                worked = super().work(burst=burst, **kwargs) or worked
            except RedisError as exc:
                logger.warning("worker %s: Redis lost (%s)", self.name, exc)
            stop = (
                burst
                or getattr(self, "_shutdown_requested_date", None) is not None
                or kwargs.get("max_jobs") is not None
                or kwargs.get("max_idle_time") is not None
            )
            if stop:
                self.recovery.stop()
                return worked
            # The loop ended without being asked to: Redis went away (or something unexpected
            # broke the loop). Wait for Redis, then work again.
            while not self._redis_up():
                time.sleep(wait)
                wait = min(5.0, wait * 2)
            wait = 1.0
            time.sleep(1.0)
            try:  # our registration from before the loss, if Redis kept it, is stale now
                self.connection.delete(self.key)
            except RedisError:
                continue
            logger.warning("worker %s: Redis is back, working again", self.name)
            self._stop_requested = False

    def _redis_up(self) -> bool:
        try:
            return bool(self.connection.ping())
        except RedisError:
            return False
