from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from reliability.llm_runtime import cache_purge
from reliability.services import recover_stale_runs, resume_overdue_runs


class Command(BaseCommand):
    help = (
        "Queue again (or fail for good) runs left running by a worker that died, resume waiting "
        "runs whose time has come, and drop expired cached LLM answers. Every run job does the "
        "first two; run this from cron when no jobs are flowing, and always in inline mode "
        "(no Redis), where nothing else resumes a waiting run."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = recover_stale_runs()
        self.stdout.write(f"{result['requeued']} run(s) queued again, {result['failed']} failed.")
        resumed = resume_overdue_runs(grace_seconds=0)
        purged = cache_purge()
        self.stdout.write(
            f"{resumed} waiting run(s) resumed; {purged} expired cached answer(s) dropped."
        )
