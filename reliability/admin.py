from __future__ import annotations

from typing import Any

from django.contrib import admin

from reliability.models import (
    ApiToken,
    Attempt,
    Extraction,
    ExtractionTemplate,
    Issue,
    LLMResponse,
    Run,
)
from review.admin import ReadOnlyAdmin


class AttemptInline(admin.TabularInline):
    model = Attempt
    fields = ("number", "source", "decision", "decision_rule", "quality_score", "llm_calls")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = (
        "pk",
        "document",
        "status",
        "final_decision",
        "classifier",
        "preset",
        "attempts_count",
        "llm_calls",
        "cost_usd",
        "retry_at",
        "created_at",
    )
    list_filter = ("status", "final_decision", "classifier", "preset")
    search_fields = ("document__original_filename",)
    list_select_related = ("document",)
    inlines = [AttemptInline]


@admin.register(Attempt)
class AttemptAdmin(ReadOnlyAdmin):
    list_display = ("run", "number", "source", "decision", "decision_rule")
    list_filter = ("decision", "source")


@admin.register(Issue)
class IssueAdmin(ReadOnlyAdmin):
    list_display = ("issue_id", "severity", "code", "agent", "attempt")
    list_filter = ("severity", "agent", "code")
    search_fields = ("message",)


@admin.register(Extraction)
class ExtractionAdmin(ReadOnlyAdmin):
    list_display = (
        "document",
        "doc_type",
        "status",
        "final_score",
        "iterations_count",
        "stopped_reason",
        "created_at",
    )
    list_filter = ("status", "doc_type", "stopped_reason")
    list_select_related = ("document",)


@admin.register(ExtractionTemplate)
class ExtractionTemplateAdmin(ReadOnlyAdmin):
    """The template packs in force (edit the JSON files; they are validated at start-up)."""

    list_display = ("pack", "doc_type", "title", "field_count", "pack_version", "synced_at")
    list_filter = ("pack",)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked")
    list_filter = ("revoked",)
    readonly_fields = ("user", "name", "key_hash", "prefix", "created_at", "last_used_at")
    fields = ("user", "name", "prefix", "created_at", "last_used_at", "revoked")

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False  # create tokens with manage.py create_api_token: the key is shown once


@admin.register(LLMResponse)
class LLMResponseAdmin(admin.ModelAdmin):
    """The response cache. Deleting an entry makes the next run with that text ask again."""

    list_display = ("operation", "model", "prompt_version", "created_at")
    list_filter = ("operation", "model", "prompt_version")
    fields = ("key", "operation", "model", "prompt_version", "created_at")
    readonly_fields = fields

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False
