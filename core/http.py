from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """The request type views see: django-htmx's middleware adds ``htmx``."""

    htmx: HtmxDetails


def require_permission(request: HttpRequest, permission: str) -> None:
    """Patient data: a login is not enough, the user's role must allow it ("app.codename")."""
    if not request.user.has_perm(permission):
        raise PermissionDenied("Your role does not allow this.")
