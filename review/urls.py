from __future__ import annotations

from django.urls import path

from review import views

app_name = "review"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("next/", views.next_packet, name="next"),
    path("undo/", views.undo, name="undo"),
    path("packets/<int:packet_id>/", views.packet_detail, name="packet"),
    path("packets/<int:packet_id>/validate/", views.packet_validate, name="validate"),
    path("packets/<int:packet_id>/correct/", views.packet_correct, name="correct"),
    path("packets/<int:packet_id>/release/", views.packet_release, name="release"),
    path("packets/<int:packet_id>/preview/", views.packet_preview, name="preview"),
    path("packets/<int:packet_id>/skip/", views.packet_skip, name="skip"),
    path("packets/<int:packet_id>/reopen/", views.packet_reopen, name="reopen"),
    path("packets/<int:packet_id>/fields/", views.packet_fields, name="fields"),
    path("packets/<int:packet_id>/pages/<int:number>.png", views.page_image, name="page_image"),
    path("export/", views.export, name="export"),
    path("metrics/", views.metrics, name="metrics"),
    path("checks/", views.checks, name="checks"),
    path("audits/<int:sample_id>/", views.audit_detail, name="audit"),
    path("audits/<int:sample_id>/submit/", views.audit_submit, name="audit_submit"),
    path(
        "audits/<int:sample_id>/pages/<int:number>.png",
        views.audit_page_image,
        name="audit_page_image",
    ),
    path("second/<int:second_id>/", views.second_detail, name="second"),
    path("second/<int:second_id>/submit/", views.second_submit, name="second_submit"),
    path("second/<int:second_id>/adjudicate/", views.adjudicate, name="adjudicate"),
]
