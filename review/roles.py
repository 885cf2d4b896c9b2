"""The two roles as Django groups. Migrations create them; ensure_roles() repairs them
(after a test flush, or if an admin deleted one).

The Admins role is also a ceiling: whoever is not a superuser may hand out, and may manage
accounts holding, no right beyond it (holds_beyond_admins, grantable_groups, group_ceiling;
review.admin applies them in Django admin, docs/security.md explains them)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, Permission
from django.db.models import QuerySet

REVIEWERS = "Reviewers"
ADMINS = "Admins"
# (app label, codename) pairs. Documents are patient data: reading them needs a role.
DOCUMENT_PERMISSIONS = [("documents", "view_document"), ("documents", "add_document")]
# Admins register webhook endpoints in Django admin and read the delivery log.
WEBHOOK_PERMISSIONS = [
    ("integrations", "view_webhookendpoint"),
    ("integrations", "add_webhookendpoint"),
    ("integrations", "change_webhookendpoint"),
    ("integrations", "delete_webhookendpoint"),
    ("integrations", "view_webhookdelivery"),
]
# Admins (with staff status) manage in Django admin what the README says they do: they read the
# audit log, manage ordinary users (never superusers, nor accounts holding more than the Admins
# role: review.admin), revoke API tokens, and lift login lockouts (django-axes).
ADMIN_SITE_PERMISSIONS = [
    ("review", "view_auditevent"),
    ("auth", "view_user"),
    ("auth", "add_user"),
    ("auth", "change_user"),
    ("auth", "view_group"),
    ("reliability", "view_apitoken"),
    ("reliability", "change_apitoken"),
    # The learning loop: its attempts, and pinning or rolling back the trained model.
    ("reliability", "view_trainedclassifiermodel"),
    ("reliability", "change_trainedclassifiermodel"),
    ("reliability", "view_learningattempt"),
    ("axes", "view_accessattempt"),
    ("axes", "delete_accessattempt"),
]
ROLE_PERMISSIONS: dict[str, list[tuple[str, str]]] = {
    REVIEWERS: [("review", "review_packets"), ("review", "audit_runs"), *DOCUMENT_PERMISSIONS],
    ADMINS: [
        ("review", "review_packets"),
        ("review", "export_ground_truth"),
        ("review", "view_metrics"),
        ("review", "reopen_packets"),
        ("review", "audit_runs"),
        ("review", "adjudicate_reviews"),
        ("review", "see_all_labels"),
        *DOCUMENT_PERMISSIONS,
        *WEBHOOK_PERMISSIONS,
        *ADMIN_SITE_PERMISSIONS,
    ],
}


def permissions_for(role: str, permission_model: type[Permission] = Permission) -> list[Permission]:
    wanted = ROLE_PERMISSIONS[role]
    found = permission_model.objects.filter(
        content_type__app_label__in={app for app, _ in wanted},
        codename__in={code for _, code in wanted},
    )
    return [p for p in found if (p.content_type.app_label, p.codename) in wanted]


def ensure_roles() -> dict[str, Group]:
    groups = {}
    for name in ROLE_PERMISSIONS:
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(*permissions_for(name))
        groups[name] = group
    return groups


def group_ceiling(group_name: str | None) -> list[Permission]:
    """The most a non-superuser may give a group: its role's permissions for the role groups,
    the Admins role's for any other group."""
    return permissions_for(group_name if group_name in ROLE_PERMISSIONS else ADMINS)


def _beyond(permissions: QuerySet[Permission], ceiling: list[Permission]) -> bool:
    return permissions.exclude(pk__in=[p.pk for p in ceiling]).exists()


def holds_beyond_admins(user: Any) -> bool:
    """Whether the account holds any right the Admins role does not: superuser status, or a
    permission of its own or of one of its groups outside the role. Only a superuser may
    change such an account (else taking it over would be a way up). A deactivated account
    counts with the rights it would get back."""
    if user.is_superuser:
        return True
    ceiling = permissions_for(ADMINS)
    return _beyond(user.user_permissions.all(), ceiling) or _beyond(
        Permission.objects.filter(group__user=user), ceiling
    )


def group_beyond_ceiling(group: Group) -> bool:
    return _beyond(group.permissions.all(), group_ceiling(group.name))


def grantable_groups() -> QuerySet[Group]:
    """The groups a non-superuser may give: those whose permissions all lie within the Admins
    role (the two roles, unless a superuser widened one, and any narrower group)."""
    ceiling = [p.pk for p in permissions_for(ADMINS)]
    return Group.objects.exclude(permissions__in=Permission.objects.exclude(pk__in=ceiling))
