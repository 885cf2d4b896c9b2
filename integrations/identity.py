"""What the identity provider decides about an account, whichever way it says it: single
sign-on (the groups claim at each sign-in, integrations.sso) or SCIM provisioning (group
memberships pushed as they change, integrations.provisioning).

One mapping from the provider's group names to Vetted's roles (OIDC_REVIEWERS_GROUPS,
OIDC_ADMINS_GROUPS), one way to apply roles to an account, and one way to end an account's
access at once: deactivated, its sessions deleted, its API tokens revoked.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.contrib.sessions.models import Session
from django.utils import timezone

from reliability.services import api_tokens_revoke
from review.roles import ADMINS, REVIEWERS, ensure_roles

logger = logging.getLogger(__name__)


def roles_for_groups(names: Iterable[str]) -> set[str]:
    """The Vetted roles the provider's groups ``names`` give."""
    names = {str(n) for n in names if n}
    roles = set()
    if names & set(settings.OIDC_REVIEWERS_GROUPS):
        roles.add(REVIEWERS)
    if names & set(settings.OIDC_ADMINS_GROUPS):
        roles.add(ADMINS)
    return roles


def roles_apply(user: Any, roles: set[str]) -> None:
    """Give ``user`` exactly these roles (other groups are left alone); staff status goes with
    the Admins role. Never makes a superuser: callers refuse superusers before this."""
    staff = ADMINS in roles
    if user.is_staff != staff:
        user.is_staff = staff
        user.save(update_fields=["is_staff"])
    groups = ensure_roles()
    user.groups.remove(*[g for name, g in groups.items() if name not in roles])
    user.groups.add(*[groups[name] for name in roles])


def sessions_end(user: Any) -> int:
    """Delete every session of ``user`` (the database session store): how many. A session
    keeps only the user's id inside its encoded data, so the live ones are read."""
    ended = [
        session.pk
        for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator()
        if str(session.get_decoded().get("_auth_user_id")) == str(user.pk)
    ]
    Session.objects.filter(pk__in=ended).delete()
    return len(ended)


def access_end(user: Any) -> None:
    """The account stops now: deactivated, signed out everywhere, its API tokens revoked."""
    if user.is_active:
        user.is_active = False
        user.save(update_fields=["is_active"])
    sessions = sessions_end(user)
    tokens = api_tokens_revoke(user=user)
    logger.info(
        "access ended for user %s: %s session(s) deleted, %s token(s) revoked",
        user.pk,
        sessions,
        tokens,
    )
