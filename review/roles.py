"""The two roles as Django groups. The data migration creates them; ensure_roles() repairs them
(after a test flush, or if an admin deleted one)."""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission

REVIEWERS = "Reviewers"
ADMINS = "Admins"
ROLE_PERMISSIONS = {
    REVIEWERS: ["review_packets"],
    ADMINS: ["review_packets", "export_ground_truth", "view_metrics"],
}


def ensure_roles() -> dict[str, Group]:
    groups = {}
    for name, codenames in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(
            *Permission.objects.filter(content_type__app_label="review", codename__in=codenames)
        )
        groups[name] = group
    return groups
