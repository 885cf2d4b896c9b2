"""Renew a lease while a job works, so a live job is never taken for a dead one."""

from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import Any

from django.db import close_old_connections, connection
from django.db.models import QuerySet
from django.utils import timezone

logger = logging.getLogger(__name__)


class Heartbeat:
    """While the block runs, a daemon thread sets ``field`` to now on the rows of ``rows``
    (filtered so that it matches only while this job still holds the claim) every ``interval``
    seconds, and stops once it matches nothing (the claim is gone: finished, failed, or taken
    over). The thread has its own database connection and closes it when it stops.

    A job killed with its process stops beating too, so its heartbeat goes stale and the
    recovery pass takes the work over; a job alive but slow keeps it however long it takes."""

    def __init__(self, rows: QuerySet[Any], *, field: str, interval: float) -> None:
        self.rows = rows
        self.field = field
        self.interval = max(0.2, interval)
        self.beats = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="job-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    if self.rows.update(**{self.field: timezone.now()}) == 0:
                        return  # the claim is gone (finished, failed, or taken over)
                    self.beats += 1
                except Exception:  # a database hiccup: try again at the next beat
                    logger.exception("job heartbeat failed")
                    close_old_connections()
        finally:
            connection.close()
