"""The two roles as Django groups. Migrations create them; ensure_roles() repairs them
(after a test flush, or if an admin deleted one)."""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission

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
# audit log, manage users (never superusers: review.admin keeps that flag out of their reach),
# revoke API tokens, and lift login lockouts (django-axes).
ADMIN_SITE_PERMISSIONS = [
    ("review", "view_auditevent"),
    ("auth", "view_user"),
    ("auth", "add_user"),
    ("auth", "change_user"),
    ("auth", "view_group"),
    ("reliability", "view_apitoken"),
    ("reliability", "change_apitoken"),
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
