from __future__ import annotations

from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"
