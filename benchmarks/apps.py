from __future__ import annotations

from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    """Evaluation and benchmark commands (``manage.py evaluate``, ``bench_*``). On top of the
    apps: it imports them; nothing in production imports it."""

    name = "benchmarks"
    verbose_name = "Benchmarks"
