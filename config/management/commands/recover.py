from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from config.recovery import recover
from core import jobs


class Command(BaseCommand):
    help = (
        "One recovery pass: queue again (or fail for good) ingestions, runs and webhook "
        "deliveries left behind by a worker that died; queue work that could not be queued "
        "(Redis was unreachable) or whose job Redis lost; send waiting work whose time has come "
        "(runs waiting for the language model, webhook retries); drop expired cached LLM "
        "answers; delete the documents past RETENTION_DAYS. RQ workers run this pass every "
        "RECOVERY_INTERVAL_SECONDS by themselves; "
        "without Redis (inline mode) run it from cron every minute."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = recover()
        for work in jobs.registered():
            counts = result["jobs"].get(work.name, {})
            if counts.get("errors"):
                self.stdout.write(f"{work.label}: {counts['errors']} step(s) failed; see the log.")
            again = counts.get("requeued", 0) + counts.get("resumed", 0) + counts.get("lost", 0)
            self.stdout.write(
                f"{again} {work.label} queued again, {counts.get('failed', 0)} failed."
            )
            if work.waiting is not None:
                self.stdout.write(f"{counts.get('due', 0)} waiting {work.label} sent now.")
        purged = result["cache_purged"]
        self.stdout.write(
            f"{purged} expired cached answer(s) dropped."
            if isinstance(purged, int)
            else f"cached answers: {purged['error']}"
        )
        retention = result.get("retention")
        if retention and "error" in retention:
            self.stdout.write(f"retention: {retention['error']}; see the log.")
        elif retention:
            held = sum(retention["held"].values())
            self.stdout.write(
                f"{retention['deleted']} document(s) deleted under the retention policy, "
                f"{held} kept for now (work on them is still open)."
            )
