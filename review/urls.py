from __future__ import annotations

from django.urls import path

from review.views import checks, documents, packet, queue, reports, runs

app_name = "review"

urlpatterns = [
    path("", queue.queue, name="queue"),
    path("next/", queue.next_packet, name="next"),
    path("undo/", queue.undo, name="undo"),
    path("packets/<int:packet_id>/", packet.packet_detail, name="packet"),
    path("packets/<int:packet_id>/validate/", packet.packet_validate, name="validate"),
    path("packets/<int:packet_id>/correct/", packet.packet_correct, name="correct"),
    path("packets/<int:packet_id>/release/", packet.packet_release, name="release"),
    path("packets/<int:packet_id>/preview/", packet.packet_preview, name="preview"),
    path("packets/<int:packet_id>/skip/", packet.packet_skip, name="skip"),
    path("packets/<int:packet_id>/reopen/", packet.packet_reopen, name="reopen"),
    path("packets/<int:packet_id>/fields/", packet.packet_fields, name="fields"),
    path("packets/<int:packet_id>/pages/<int:number>.png", packet.page_image, name="page_image"),
    path("export/", reports.export, name="export"),
    path("metrics/", reports.metrics, name="metrics"),
    path("me/", reports.my_work, name="me"),
    path("checks/", checks.checks, name="checks"),
    path("audits/<int:sample_id>/", checks.audit_detail, name="audit"),
    path("audits/<int:sample_id>/submit/", checks.audit_submit, name="audit_submit"),
    path(
        "audits/<int:sample_id>/pages/<int:number>.png",
        checks.audit_page_image,
        name="audit_page_image",
    ),
    path("second/<int:second_id>/", checks.second_detail, name="second"),
    path("second/<int:second_id>/submit/", checks.second_submit, name="second_submit"),
    path("second/<int:second_id>/adjudicate/", checks.adjudicate, name="adjudicate"),
    path(
        "second/<int:second_id>/pages/<int:number>.png",
        checks.second_page_image,
        name="second_page_image",
    ),
]

# Pages about one run, in the "reliability" namespace under /runs/ (config.urls).
run_pages = [
    path("<int:run_id>/", runs.run_detail, name="run"),
    path("<int:run_id>/packet.json", runs.packet_download, name="packet"),
]

# The document list and a document's page, in the "documents" namespace under /documents/.
document_pages = [
    path("", documents.document_list, name="list"),
    path("<uuid:document_id>/", documents.document_detail, name="detail"),
    path(
        "<uuid:document_id>/pages/<int:number>.png",
        documents.document_page_image,
        name="page_image",
    ),
]
