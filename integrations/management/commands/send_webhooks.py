from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from integrations.services import deliveries_resume


class Command(BaseCommand):
    help = (
        "Send every webhook delivery that is due (retries without RQ workers, deliveries whose "
        "job was lost). Run it from cron every minute; it is safe to run at any time."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        count = deliveries_resume()
        self.stdout.write(f"{count} due webhook delivery(ies) queued.")
