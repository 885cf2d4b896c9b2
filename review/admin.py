from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, Permission
from django.http import HttpRequest

from core.admin import ReadOnlyAdmin
from reliability.models import Revocation
from reliability.services import api_tokens_revoke
from review.models import (
    AuditEvent,
    AuditSample,
    GroundTruth,
    Review,
    ReviewPacket,
    SecondReview,
)
from review.roles import (
    ROLE_PERMISSIONS,
    grantable_groups,
    group_beyond_ceiling,
    group_ceiling,
    holds_beyond_admins,
)


@admin.register(ReviewPacket)
class ReviewPacketAdmin(ReadOnlyAdmin):
    """Read-only, like every history model here, even for superusers: a packet's status,
    lock and history change only through the review services (which append to the history
    and to ground truth); a lock that is not released expires by itself."""

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
    fields = (
        "status",
        "locked_by",
        "lock_expires_at",
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
    """Admins (staff, not superusers) manage ordinary users: accounts holding nothing beyond
    the Admins role. They give roles through the groups, and only groups within that role; an
    account holding more (a superuser above all) they may see but not change, reset, deactivate
    or delete, and no one becomes a superuser or gets single permissions by their hand.
    Superusers keep Django's full user admin.

    Ended access stays ended: a deactivated account (by the identity provider or by an Admin)
    is reactivated only by the identity provider (SCIM) or a superuser; an Admin sees why the
    box cannot be ticked. Deactivating an account here revokes its API tokens."""

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and _limited(request) and holds_beyond_admins(obj):
            return False  # changing it, its password included, would be a way up
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Django's bulk delete asks this for every selected account: one refused, none deleted.
        if obj is not None and _limited(request) and holds_beyond_admins(obj):
            return False
        return super().has_delete_permission(request, obj)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        if obj is not None and not obj.is_active:
            fields = (*fields, "access_ended")
        if not _limited(request):
            return fields
        if obj is not None and not obj.is_active:
            fields = (*fields, "is_active")  # a read-only field: a forged POST is ignored
        return (*fields, "is_superuser", "user_permissions")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = list(super().get_fieldsets(request, obj))
        if obj is not None and not obj.is_active:
            fieldsets.insert(1, ("Access ended", {"fields": ("access_ended",)}))
        return fieldsets

    @admin.display(description="Why")
    def access_ended(self, obj: Any) -> str:
        # The reverse accessor of integrations.ScimUser, read without importing that app.
        if getattr(obj, "scim_user", None) is not None:
            who = "The identity provider (SCIM) manages this account and it is deactivated"
        else:
            who = "This account was deactivated (by the identity provider or an administrator)"
        return f"{who}: only the identity provider or a superuser can reactivate it."

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change and "is_active" in form.changed_data and not obj.is_active:
            api_tokens_revoke(user=obj, by=Revocation.ACCOUNT_DEACTIVATED)

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "groups" and _limited(request):
            kwargs["queryset"] = grantable_groups()  # another group is "not a valid choice"
        return super().formfield_for_manytomany(db_field, request, **kwargs)


class GuardedGroupAdmin(GroupAdmin):
    """Whoever edits groups without being a superuser (Admins only view them, unless a
    superuser gave them more) keeps each group within its ceiling: a role group within its
    role (review.roles.ROLE_PERMISSIONS), any other group within the Admins role. The role
    groups keep their names and cannot be deleted by them."""

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and _limited(request) and group_beyond_ceiling(obj):
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        role_group = obj is not None and obj.name in ROLE_PERMISSIONS
        if obj is not None and _limited(request) and (role_group or group_beyond_ceiling(obj)):
            return False
        return super().has_delete_permission(request, obj)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        if obj is not None and _limited(request) and obj.name in ROLE_PERMISSIONS:
            return (*fields, "name")
        return fields

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        field = form.base_fields.get("permissions")
        if _limited(request) and isinstance(field, forms.ModelMultipleChoiceField):
            ceiling = group_ceiling(obj.name if obj is not None else None)
            # A permission outside the ceiling is then "not one of the available choices".
            ids = [p.pk for p in ceiling]
            field.queryset = Permission.objects.filter(pk__in=ids).select_related("content_type")
        return form


def _limited(request: HttpRequest) -> bool:
    """Everyone in Django admin but a superuser works within the Admins role."""
    return not getattr(request.user, "is_superuser", False)


User = get_user_model()
for model, model_admin in ((User, GuardedUserAdmin), (Group, GuardedGroupAdmin)):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
    admin.site.register(model, model_admin)
