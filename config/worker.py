"""The RQ worker class (settings.RQ["WORKER_CLASS"]): it imports the job code, the rule data and,
when Gemini is configured, the Gemini SDK and its client once, in the worker process, before it
forks a work horse per job. Otherwise every job pays for them again (about a second for
google-genai alone), which at a model latency of seconds is a third of a worker's throughput."""

from __future__ import annotations

import logging
from typing import Any

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
    if llm.configured(settings):
        try:
            llm.client_from_settings(settings)  # the SDK and its client, inherited by each job
        except Exception:  # a bad key shows up on the first run, with the run's own error
            logger.exception("could not prepare the Gemini client")


class Worker(RQWorker):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        preload()
