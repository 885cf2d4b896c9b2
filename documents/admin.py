from __future__ import annotations

from django.contrib import admin

from documents.models import Document, Page


class PageInline(admin.TabularInline):
    model = Page
    extra = 0
    fields = ("number", "extraction_method", "ocr_confidence", "has_tables")
    readonly_fields = fields
    can_delete = False
    show_change_link = True


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = (
        "original_filename",
        "status",
        "quality",
        "page_count",
        "ocr_page_count",
        "uploaded_by",
        "created_at",
    )
    list_filter = ("status", "quality", "mime_type", "created_at")
    search_fields = ("original_filename", "sha256")
    date_hierarchy = "created_at"
    readonly_fields = (
        "id",
        "sha256",
        "mime_type",
        "size_bytes",
        "page_count",
        "ocr_page_count",
        "ocr_confidence",
        "ingest_attempts",
        "ingest_started_at",
        "ingested_at",
        "ingest_seconds",
        "uploaded_by",
        "created_at",
        "updated_at",
    )
    inlines = [PageInline]


@admin.register(Page)
class PageAdmin(admin.ModelAdmin):
    list_display = ("document", "number", "extraction_method", "ocr_confidence", "has_tables")
    list_filter = ("extraction_method", "has_tables", "document__status")
    search_fields = ("document__original_filename",)
    list_select_related = ("document",)
    # The hidden text is shown to admins (auditors) only, and never edited.
    readonly_fields = (
        "document",
        "number",
        "extraction_method",
        "ocr_confidence",
        "hidden",
        "hidden_text",
    )
