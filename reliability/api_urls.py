from __future__ import annotations

from django.urls import path

from reliability import api

app_name = "api"

urlpatterns = [
    path("documents/", api.submit, name="submit"),
    path("documents/<uuid:document_id>/", api.status, name="status"),
    path("documents/<uuid:document_id>/result/", api.result, name="result"),
    path("openapi.json", api.openapi, name="openapi"),
]
