from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from config.recovery import recover


class Command(BaseCommand):
    help = (
        "One recovery pass: queue again (or fail for good) ingestions and runs left behind by "
        "a worker that died, work that failed only because the job queue was unreachable or "
        "whose job Redis lost, resume waiting runs whose time has come, and drop expired cached "
        "LLM answers. RQ workers run this pass every RECOVERY_INTERVAL_SECONDS by themselves; "
        "run it from cron only in inline mode (no Redis)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = recover(overdue_grace_seconds=0)
        documents = result["documents"]
        runs = result["stale_runs"]
        unqueued = result["unqueued_runs"]
        if "error" in documents:
            self.stdout.write(f"documents: {documents['error']}")
        else:
            self.stdout.write(
                f"{documents['requeued'] + documents['resumed'] + documents['lost']} document(s) "
                f"queued again, {documents['failed']} failed."
            )
        if "error" not in runs and "error" not in unqueued:
            self.stdout.write(
                f"{runs['requeued'] + unqueued['resumed'] + unqueued['lost']} run(s) queued "
                f"again, {runs['failed']} failed."
            )
        self.stdout.write(
            f"{result['overdue_runs']} waiting run(s) resumed; {result['cache_purged']} expired "
            "cached answer(s) dropped."
        )
