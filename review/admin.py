from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.http import HttpRequest

from core.admin import ReadOnlyAdmin
from review.models import (
    AuditEvent,
    AuditSample,
    GroundTruth,
    Review,
    ReviewPacket,
    SecondReview,
)


@admin.register(ReviewPacket)
class ReviewPacketAdmin(admin.ModelAdmin):
    list_display = (
        "pk",
        "document",
        "dominant_type",
        "worst_severity",
        "issue_count",
        "status",
        "locked_by",
        "created_at",
    )
    list_filter = ("status", "dominant_type", "worst_severity")
    search_fields = ("document__original_filename",)
    list_select_related = ("document", "locked_by")
    readonly_fields = (
        "run",
        "document",
        "priority",
        "dominant_type",
        "worst_severity",
        "issue_count",
        "classification",
        "issues",
        "grounding",
        "comparison",
        "comparison_agrees",
        "history",
        "created_at",
        "updated_at",
    )
    fields = ("status", "locked_by", "lock_expires_at", *readonly_fields)


@admin.register(Review)
class ReviewAdmin(ReadOnlyAdmin):
    list_display = ("packet", "reviewer", "outcome", "corrected_dominant_type", "finished_at")
    list_filter = ("outcome", "reviewer")
    list_select_related = ("packet", "reviewer")


@admin.register(GroundTruth)
class GroundTruthAdmin(ReadOnlyAdmin):
    list_display = ("document", "version", "source", "dominant_type", "reviewer", "created_at")
    list_filter = ("source", "dominant_type", "created_at")
    search_fields = ("document__original_filename", "document__sha256")
    list_select_related = ("document", "reviewer")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("at", "username", "action", "object_type", "object_id")
    list_filter = ("action", "object_type", "at", "username")
    search_fields = ("username", "object_id")
    date_hierarchy = "at"


@admin.register(AuditSample)
class AuditSampleAdmin(ReadOnlyAdmin):
    list_display = (
        "run",
        "document",
        "machine_type",
        "band",
        "reason",
        "sampled_on",
        "status",
        "audited_type",
        "agrees",
        "auditor",
    )
    list_filter = ("status", "machine_type", "band", "reason", "agrees", "sampled_on")
    search_fields = ("document__original_filename",)
    list_select_related = ("document", "auditor")


@admin.register(SecondReview)
class SecondReviewAdmin(ReadOnlyAdmin):
    list_display = (
        "packet",
        "rule",
        "status",
        "first_type",
        "second_type",
        "second_reviewer",
        "final_type",
        "adjudicator",
        "created_at",
    )
    list_filter = ("status", "rule", "first_type")
    list_select_related = ("packet", "second_reviewer", "adjudicator")


class GuardedUserAdmin(UserAdmin):
    """Admins (staff, not superusers) manage users, but cannot make anyone a superuser or hand
    out single permissions: roles are given through the groups."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        if getattr(request.user, "is_superuser", False):
            return fields
        return (*fields, "is_superuser", "user_permissions")


User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, GuardedUserAdmin)
