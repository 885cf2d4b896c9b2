from __future__ import annotations

from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    """How Vetted fits into a hospital: single sign-on and webhooks. It sits downstream of
    documents, reliability and review: they call its services, it never writes theirs."""

    name = "integrations"

    def ready(self) -> None:
        from core import jobs
        from integrations.jobs import DELIVERY
        from integrations.sso import check_settings

        check_settings()
        jobs.register(DELIVERY)
