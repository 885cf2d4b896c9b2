from __future__ import annotations

from django.apps import AppConfig


class DocumentsConfig(AppConfig):
    name = "documents"
