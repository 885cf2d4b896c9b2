from __future__ import annotations

from django.urls import path

from documents import views

app_name = "documents"

urlpatterns = [
    path("", views.document_list, name="list"),
    path("upload/", views.document_upload, name="upload"),
    path("<uuid:document_id>/", views.document_detail, name="detail"),
    path("<uuid:document_id>/retry/", views.document_retry_view, name="retry"),
    path("<uuid:document_id>/file/", views.document_file, name="file"),
]
