from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import include, path
from django.views.generic import RedirectView

from integrations.sso import VettedLoginView, admin_login
from reliability.api import urls as api_urls


@login_not_required
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for load balancers and docker-compose: the database answers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("", RedirectView.as_view(pattern_name="documents:list", permanent=False)),
    path("accounts/login/", login_not_required(VettedLoginView.as_view()), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("oidc/", include("integrations.urls")),
    path("admin/login/", login_not_required(admin_login)),
    path("admin/", admin.site.urls),
    path("documents/", include("documents.urls")),
    path("runs/", include("reliability.urls")),
    path("review/", include("review.urls")),
    path("api/v1/", api_urls()),
    path("healthz", healthz, name="healthz"),
]
