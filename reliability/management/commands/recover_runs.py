from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from reliability.services import recover_stale_runs


class Command(BaseCommand):
    help = (
        "Queue again (or fail for good) runs left running by a worker that died. Every run "
        "job also does this first; run it from cron when no jobs are flowing."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = recover_stale_runs()
        self.stdout.write(f"{result['requeued']} run(s) queued again, {result['failed']} failed.")
