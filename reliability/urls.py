from __future__ import annotations

from django.urls import path

from reliability import views

app_name = "reliability"

# The run page itself and its packet download are review's (review.urls.run_pages): config
# mounts both lists under /runs/.
urlpatterns = [
    path("new/<uuid:document_id>/", views.run_new, name="new"),
    path("<int:run_id>/resume/", views.run_resume_now, name="resume"),
]
