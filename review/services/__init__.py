"""Review workflows, one module per job: decisions (packets, locks, decisions, undo),
ground_truth (versions), audits (blind audits of accepted runs), second_review (second
reviews and adjudication) and audit_log (who did what).

The review app owns these tables; the composition root hands a run's outcome to
``decisions.run_outcome_record``."""

from __future__ import annotations

from core.errors import Refused


class ReviewRefused(Refused):
    status = 409
