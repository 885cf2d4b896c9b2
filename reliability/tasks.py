"""RQ entry points for the reliability engine. Jobs take ids; Postgres is the source of truth."""

from __future__ import annotations

import logging

from reliability import services
from reliability.models import Run

logger = logging.getLogger(__name__)


def execute_run(run_id: int) -> str:
    """Classify and verify one document. Running it twice creates no second run or packet."""
    try:
        run = services.run_execute(run_id=run_id)
    except services.RunSuperseded:
        logger.warning("run %s superseded: another worker holds it; outcome dropped", run_id)
        return "superseded"
    except Exception:
        logger.exception("run %s crashed", run_id)
        services.run_fail(
            run_id=run_id,
            message="The run failed unexpectedly; see the log.",
            code=Run.ErrorCode.CRASHED,
        )
        return "failed"
    if run is None:
        return "skipped"
    return run.status


def execute_learning(attempt_id: int) -> str:
    """One learning attempt (reliability.learning). Running it twice trains once."""
    from reliability import learning

    try:
        attempt = learning.learning_execute(attempt_id=attempt_id)
    except learning.LearningSuperseded:
        return "superseded"
    except Exception:
        logger.exception("learning attempt %s crashed", attempt_id)
        learning.learning_fail(attempt_id=attempt_id, message="The attempt failed; see the log.")
        return "failed"
    return "skipped" if attempt is None else attempt.status
