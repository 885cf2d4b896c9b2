from __future__ import annotations

from django.apps import AppConfig


class CompositionRoot(AppConfig):
    """Not an app with models: its ``ready`` connects the apps' hooks (config.wiring)."""

    name = "config"
    verbose_name = "Vetted"

    def ready(self) -> None:
        from config import wiring

        wiring.connect()
