from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """The request type views see: django-htmx's middleware adds ``htmx``."""

    htmx: HtmxDetails
