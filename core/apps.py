from __future__ import annotations

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Background jobs"
    default_auto_field = "django.db.models.BigAutoField"
