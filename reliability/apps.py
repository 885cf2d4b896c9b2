from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured
from django.db.models.signals import post_migrate


class ReliabilityConfig(AppConfig):
    name = "reliability"

    def ready(self) -> None:
        from django.conf import settings

        from core import jobs
        from engine.fields.library import load_packs
        from engine.fields.templates import TemplateError
        from reliability.jobs import LEARN, RUN

        jobs.register(RUN)
        jobs.register(LEARN)

        # Template packs are validated at start-up: a broken pack stops the process loudly.
        try:
            load_packs(tuple(settings.EXTRACTION_PACKS))
        except TemplateError as exc:
            raise ImproperlyConfigured(str(exc)) from exc
        post_migrate.connect(_sync_templates, sender=self)


def _sync_templates(sender: Any, **kwargs: Any) -> None:
    from reliability.fields import templates_sync

    templates_sync()
