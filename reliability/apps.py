from __future__ import annotations

from django.apps import AppConfig


class ReliabilityConfig(AppConfig):
    name = "reliability"
