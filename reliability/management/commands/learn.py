from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from core import jobs
from reliability.learning import learning_due, learning_schedule
from reliability.models import LearningAttempt


class Command(BaseCommand):
    help = (
        "The learning loop's schedule, for cron in inline mode (without Redis, nothing else runs "
        "it): start an attempt when one is due (LEARNING_INTERVAL_HOURS, LEARNING_EVERY_LABELS), "
        "or now with --now. With Redis the attempt is queued for a worker (the workers' recovery "
        "pass also does this by itself). --list shows the last attempts."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--now", action="store_true", help="start an attempt even if none is due"
        )
        parser.add_argument("--list", action="store_true", help="show the last ten attempts")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["list"]:
            for row in LearningAttempt.objects.defer("novelty_reference")[:10]:
                self.stdout.write(
                    f"{row.pk:>5} {row.created_at:%Y-%m-%d %H:%M} {row.trigger:<9} "
                    f"{row.status:<10} {row.outcome or '-':<10} {row.reason[:90]}"
                )
            return
        trigger = LearningAttempt.Trigger.MANUAL if options["now"] else learning_due()
        if not trigger:
            self.stdout.write("No learning attempt is due.")
            return
        attempt = learning_schedule(trigger=trigger)
        if attempt is None:
            self.stdout.write("An attempt is already queued or running.")
            return
        attempt.refresh_from_db()
        if jobs.jobs_run_inline():
            self.stdout.write(
                f"Attempt {attempt.pk}: {attempt.status}, {attempt.outcome}: {attempt.reason}"
            )
            for row in attempt.thresholds:
                scope = row["doc_type"] + ("" if row["source"] == "*" else f"/{row['source']}")
                threshold = row["threshold"] if row["threshold"] is not None else "none (escalate)"
                self.stdout.write(
                    f"  {scope:<30} threshold {threshold}; {row['errors']} error(s) in "
                    f"{row['accepted']} accepted of {row['calibration']}"
                )
        else:
            self.stdout.write(f"Attempt {attempt.pk} queued ({trigger}).")
