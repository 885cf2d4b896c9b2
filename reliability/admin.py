from __future__ import annotations

from django.contrib import admin

from reliability.models import Attempt, Issue, Run
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
