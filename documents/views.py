from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
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


def _batch(request: HtmxHttpRequest) -> list[dict[str, Any]]:
    """The stored files of the last upload (``?batch=id,id``), as result rows: how far each
    is read. Only the uploader's own documents."""
    ids = [i for i in request.GET.get("batch", "").split(",") if i][: settings.UPLOAD_MAX_FILES]
    try:
        documents = Document.objects.filter(pk__in=ids, uploaded_by_id=request.user.pk)
        found = {str(d.pk): d for d in documents}
    except ValidationError:
        return []
    return [{"name": found[i].original_filename, "document": found[i]} for i in ids if i in found]


def _result_context(results: list[dict[str, Any]]) -> dict[str, Any]:
    stored = [r["document"] for r in results if r.get("document") is not None]
    return {
        "results": results,
        "batch": ",".join(str(d.pk) for d in stored),
        "working": any(d.is_working for d in stored),
    }


@login_required
@require_http_methods(["GET", "POST"])
def document_upload(request: HtmxHttpRequest) -> HttpResponse:
    """Upload one file or a batch. Every file is checked on its own: a batch in which some are
    refused stores the others and answers 200 with each file's outcome (stored and being read,
    or refused and why), updated live while they are read; a batch with nothing stored is a
    400 with the reasons. A batch stored whole goes to the document list."""
    require_permission(request, "documents.add_document")
    if request.method == "GET":
        if request.htmx and "batch" in request.GET:  # the live result rows of an upload
            context = _result_context(_batch(request))
            return render(request, "documents/upload.html#upload-results", context)
        form = UploadForm(tax_forms=_tax_forms())
        return render(request, "documents/upload.html", {"form": form, **_upload_limits()})

    form = UploadForm(request.POST, request.FILES, tax_forms=_tax_forms())
    results: list[dict[str, Any]] = []
    if form.is_valid():
        for upload in form.cleaned_data["documents"]:
            try:
                document = services.document_upload(
                    upload=upload, user=request.user, options=form.options()
                )
            except UploadRefused as refusal:
                results.append({"name": upload.name, "refused": refusal.message})
            else:
                results.append({"name": document.original_filename, "document": document})
    created = [r["document"] for r in results if "document" in r]
    refused = [r for r in results if "refused" in r]
    unqueued = [d for d in created if d.error_code == Document.QUEUE_UNREACHABLE]
    queued = [d for d in created if d not in unqueued]
    if unqueued:
        names = ", ".join(f"“{doc.original_filename}”" for doc in unqueued)
        messages.warning(
            request,
            f"Stored but not queued for reading: {names}. The job queue is unreachable; "
            "the file(s) will be read automatically when it is back.",
        )
    if created and not refused:
        names = ", ".join(f"“{doc.original_filename}”" for doc in queued)
        if queued:
            messages.success(request, f"Uploaded {len(queued)} file(s): {names}.")
        if request.htmx:
            return HttpResponseClientRedirect(reverse("documents:list"))
        return redirect("documents:list")
    if not created:  # nothing stored: the reasons, on the form, as before
        for row in refused:
            form.add_error("documents", row["refused"])
        results = []
    context = {
        "form": UploadForm(tax_forms=_tax_forms()) if created else form,
        **_upload_limits(),
        **_result_context(results),
        "stored": len(created),
        "refused": len(refused),
    }
    # Something was stored: the request did what it could, and the page says file by file.
    return render(request, "documents/upload.html", context, status=200 if created else 400)


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
