"""A worker for the fault tests: the real worker (config.worker.Worker), with ingestion and
classification slowed down so a test can kill it, or stop Redis, while a job is in the middle.
Each slowed step appends a line to FAULT_LOG, so a test can count executions.

Used with ``rqworker --worker-class tests.faults.slow_worker.SlowWorker``."""

from __future__ import annotations

import os
import time
from typing import Any

from config.worker import Worker


def _log(what: str) -> None:
    path = os.environ.get("FAULT_LOG")
    if path:
        with open(path, "a") as handle:
            handle.write(f"{what} {os.getpid()}\n")


def _slow_down() -> None:
    from documents import services
    from engine.classifiers.offline import OfflineClassifier

    ingest_sleep = float(os.environ.get("FAULT_INGEST_SLEEP", "0"))
    run_sleep = float(os.environ.get("FAULT_RUN_SLEEP", "0"))
    real_extract = services.pages_extract
    real_classify = OfflineClassifier.classify

    def pages_extract(**kwargs: Any) -> Any:
        _log("ingest-start")
        time.sleep(ingest_sleep)
        pages = real_extract(**kwargs)
        _log("ingest-end")
        return pages

    def classify(self: Any, pages: Any, feedback: Any = None) -> Any:
        _log("classify-start")
        time.sleep(run_sleep)
        output = real_classify(self, pages, feedback)
        _log("classify-end")
        return output

    services.pages_extract = pages_extract  # type: ignore[assignment]
    OfflineClassifier.classify = classify  # type: ignore[method-assign]


class SlowWorker(Worker):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _slow_down()
