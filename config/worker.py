"""The RQ worker class (settings.RQ["WORKER_CLASS"]): it imports the job code, the rule data, the
OCR binding and, when Gemini is configured, the Gemini SDK and its client once, in the worker
process, before it forks a work horse per job. Otherwise every job pays for them again (about a
second for google-genai alone, which at a model latency of seconds is a third of a worker's
throughput; half a second for pytesseract, which imports pandas, four times the ingestion of a
three-page text PDF)."""

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
            logger.exception("could not prepare the Gemini client")


class RecoveryLoop:
    """A daemon thread in the worker (the parent, not the forked work horses) that runs the
    recovery pass (config.recovery) every RECOVERY_INTERVAL_SECONDS. A short Redis lock lets
    one worker at a time do a pass; while Redis is down the pass is skipped (there is no
    queue to put the work back on anyway)."""

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

    def _run(self) -> None:
        from django.db import connection

        from config.recovery import recover

        while not self._stop.wait(self.interval):
            try:
                if not self.connection.set(self.LOCK, "1", nx=True, ex=max(1, int(self.interval))):
                    continue
            except RedisError:
                continue
            try:
                recover()
            except Exception:
                logger.exception("recovery pass failed")
            finally:
                connection.close()


class Worker(RQWorker):
    """Survives a Redis restart: where RQ's worker quits on a lost connection (while busy, or
    in its bookkeeping), this one waits for Redis and starts its loop again. Its recovery loop
    resumes what the outage left behind."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        preload()
        from django.conf import settings

        self.recovery = RecoveryLoop(self.connection, settings.RECOVERY_INTERVAL_SECONDS)

    def work(self, burst: bool = False, **kwargs: Any) -> bool:  # type: ignore[override]
        if not burst:
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
                wait = min(30.0, wait * 2)
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
