from __future__ import annotations

from django.urls import path

from reliability import views

app_name = "reliability"

urlpatterns = [
    path("<int:run_id>/", views.run_detail, name="run"),
    path("<int:run_id>/packet.json", views.packet_download, name="packet"),
    path("new/<uuid:document_id>/", views.run_new, name="new"),
    path("<int:run_id>/resume/", views.run_resume_now, name="resume"),
]
