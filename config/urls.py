from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from api.urls import urls as api_urls
from documents import storage
from documents import urls as documents_urls
from integrations import scim
from integrations.sso import VettedLoginView, admin_login
from reliability import urls as reliability_urls
from review import urls as review_urls

logger = logging.getLogger(__name__)


def _check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _check_redis() -> None:
    from redis import Redis

    Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1).ping()


def _check_media() -> None:
    """Uploads are stored here: MEDIA_ROOT must take a file (written and removed again), or
    the bucket (STORAGE_URL) must answer with these credentials."""
    storage.probe()


@login_not_required
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for load balancers and docker-compose: the database answers, Redis answers
    (when jobs are queued), and the media storage takes a file. 503 names what failed."""
    checks = {"database": _check_database, "media": _check_media}
    if settings.REDIS_URL:
        checks["redis"] = _check_redis
    results: dict[str, str] = {}
    for name, check in checks.items():
        try:
            check()
            results[name] = "ok"
        except Exception as exc:
            logger.warning("health check %s failed: %s", name, exc)
            results[name] = f"failed: {type(exc).__name__}"
    failed = sorted(name for name, state in results.items() if state != "ok")
    body: dict[str, Any] = {"status": "failed" if failed else "ok", "checks": results}
    if failed:
        body["failed"] = failed
    return JsonResponse(body, status=503 if failed else 200)


favicon = login_not_required(RedirectView.as_view(url=static("favicon.svg"), permanent=True))

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="documents:list", permanent=False)),
    path("accounts/login/", login_not_required(VettedLoginView.as_view()), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("oidc/", include("integrations.urls")),
    # SCIM 2.0 for the identity provider (its bearer token, no session).
    path("scim/v2/", include((scim.urlpatterns(), "scim"))),
    path("admin/login/", login_not_required(admin_login)),
    path("admin/", admin.site.urls),
    path(
        "documents/",
        include(([*documents_urls.urlpatterns, *review_urls.document_pages], "documents")),
    ),
    path(
        "runs/",
        include(([*reliability_urls.urlpatterns, *review_urls.run_pages], "reliability")),
    ),
    path("review/", include("review.urls")),
    path("api/v1/", api_urls()),
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
]
