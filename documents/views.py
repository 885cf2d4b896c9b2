from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from core.http import HtmxHttpRequest, require_permission
from documents import services
from documents.forms import UploadForm
from documents.models import Document
from documents.validation import UploadRefused


def _upload_limits() -> dict[str, int]:
    return {
        "max_mb": settings.UPLOAD_MAX_BYTES // (1024 * 1024),
        "max_pages": settings.UPLOAD_MAX_PAGES,
    }


def _tax_forms() -> bool:
    """A form pack (us_tax) is in force besides the clinical templates."""
    return any(pack != "clinical" for pack in settings.EXTRACTION_PACKS)


@login_required
@require_http_methods(["GET", "POST"])
def document_upload(request: HtmxHttpRequest) -> HttpResponse:
    require_permission(request, "documents.add_document")
    if request.method == "GET":
        form = UploadForm(tax_forms=_tax_forms())
        return render(request, "documents/upload.html", {"form": form, **_upload_limits()})

    form = UploadForm(request.POST, request.FILES, tax_forms=_tax_forms())
    created: list[Document] = []
    if form.is_valid():
        for upload in form.cleaned_data["documents"]:
            try:
                created.append(
                    services.document_upload(
                        upload=upload, user=request.user, options=form.options()
                    )
                )
            except UploadRefused as refused:
                form.add_error("documents", refused.message)
    unqueued = [d for d in created if d.error_code == Document.QUEUE_UNREACHABLE]
    queued = [d for d in created if d not in unqueued]
    if queued:
        names = ", ".join(f"“{doc.original_filename}”" for doc in queued)
        messages.success(request, f"Uploaded {len(queued)} file(s): {names}.")
    if unqueued:
        names = ", ".join(f"“{doc.original_filename}”" for doc in unqueued)
        messages.warning(
            request,
            f"Stored but not queued for reading: {names}. The job queue is unreachable; "
            "the file(s) will be read automatically when it is back.",
        )
    if form.is_valid():  # still valid: nothing was refused
        if request.htmx:
            return HttpResponseClientRedirect(reverse("documents:list"))
        return redirect("documents:list")
    return render(
        request,
        "documents/upload.html",
        {"form": form, "created": created, **_upload_limits()},
        status=400,
    )


@login_required
@require_POST
def document_retry_view(request: HtmxHttpRequest, document_id: str) -> HttpResponse:
    require_permission(request, "documents.add_document")
    document = get_object_or_404(Document, pk=document_id)
    if services.document_retry(document=document):
        messages.success(request, f"Ingestion of “{document.original_filename}” restarted.")
    else:
        messages.error(request, "This document is not waiting for a retry.")
    return redirect("documents:detail", document_id=document.pk)


@login_required
def document_file(request: HtmxHttpRequest, document_id: str) -> FileResponse:
    """The original file, shown inline. Exports (FHIR attachments) link here instead of
    carrying the bytes, so reading a document always needs a login and a role."""
    require_permission(request, "documents.view_document")
    document = get_object_or_404(Document, pk=document_id)
    if not document.file:  # deleted under the retention policy (documents.retention)
        raise Http404("This document's file was deleted.")
    try:
        handle = document.file.open("rb")
    except FileNotFoundError:
        raise Http404("This document's file is missing.") from None
    return FileResponse(
        handle, content_type=document.mime_type, filename=document.original_filename
    )
