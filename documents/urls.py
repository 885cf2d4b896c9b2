from __future__ import annotations

from django.urls import path

from documents import views

app_name = "documents"

# The list and a document's page show what became of each document (its run, packet and
# ground truth, as far as the user may see them): they are review's (review.urls
# .document_pages); config mounts both lists under /documents/.
urlpatterns = [
    path("upload/", views.document_upload, name="upload"),
    path("<uuid:document_id>/retry/", views.document_retry_view, name="retry"),
    path("<uuid:document_id>/file/", views.document_file, name="file"),
]
