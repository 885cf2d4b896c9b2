from __future__ import annotations

from django.apps import AppConfig


class DocumentsConfig(AppConfig):
    name = "documents"

    def ready(self) -> None:
        from core import jobs
        from documents.jobs import INGEST, RENDER

        jobs.register(INGEST)
        jobs.register(RENDER)
