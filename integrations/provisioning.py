"""SCIM provisioning: the identity provider creates, updates, deactivates and deletes accounts,
and sets group memberships, which decide the roles (integrations.identity). The SCIM protocol
itself (django-scim2's views, our adapters) is in integrations.scim; these are the writes.

Rules:
- A deactivation (``active`` false) or a deletion ends the account's access at once: its
  sessions are deleted and its API tokens revoked. A deletion keeps the user (the audit log and
  the ground truth name it) and drops its SCIM record, so the provider no longer sees it.
- Group memberships decide the roles, with the single sign-on mapping: a member of no mapped
  group holds no role. Roles are recomputed when memberships change, not when a profile does.
- An account holding more than the Admins role (a superuser, or any right beyond the role) is
  never changed by SCIM (review.roles.holds_beyond_admins, docs/security.md): such a write is
  refused (403).
- SCIM sets no password: provisioned accounts sign in through single sign-on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from core.errors import Refused
from integrations.identity import access_end, roles_apply, roles_for_groups
from integrations.models import ScimGroup, ScimUser
from review.roles import holds_beyond_admins

logger = logging.getLogger(__name__)

USERNAME_MAX = 150  # django.contrib.auth's User.username


@dataclass
class UserData:
    """What a SCIM request says about a user; None: not said."""

    user_name: str | None = None
    external_id: str | None = None
    given_name: str | None = None
    family_name: str | None = None
    email: str | None = None
    active: bool | None = None


def _not_beyond(user: Any) -> None:
    if holds_beyond_admins(user):
        raise Refused(
            "This account holds more than the Admins role (a superuser, or rights beyond the "
            "role): it is managed in Vetted, never by the identity provider.",
            status=403,
            code="beyond_admins",
        )


def _username(value: str) -> str:
    name = value.strip()
    if not name or len(name) > USERNAME_MAX:
        raise Refused(f"userName must be 1 to {USERNAME_MAX} characters.", code="invalid_value")
    try:
        UnicodeUsernameValidator()(name)
    except ValidationError:
        raise Refused(
            "userName may hold letters, digits and @ . + - _ only.", code="invalid_value"
        ) from None
    return name


def _apply(account: ScimUser, user: Any, data: UserData) -> bool | None:
    """Copy ``data`` onto the (unsaved) account and user; the new ``active`` when it changes."""
    if data.user_name is not None:
        name = _username(data.user_name)
        taken = get_user_model().objects.filter(username__iexact=name).exclude(pk=user.pk)
        if (
            taken.exists()
            or ScimUser.objects.filter(user_name__iexact=name).exclude(pk=account.pk).exists()
        ):
            raise Refused(f"userName {name} is taken.", status=409, code="uniqueness")
        account.user_name = name
        user.username = name
    if data.external_id is not None:
        account.external_id = data.external_id[:255]
    if data.given_name is not None:
        user.first_name = data.given_name[:150]
    if data.family_name is not None:
        user.last_name = data.family_name[:150]
    if data.email is not None:
        if data.email:
            try:
                validate_email(data.email)
            except ValidationError:
                raise Refused("emails: not a valid address.", code="invalid_value") from None
        user.email = data.email
    if data.active is not None and data.active != user.is_active:
        return data.active
    return None


def _adoptable(name: str) -> Any:
    """An existing account SCIM may take over for userName ``name``: one that already signs
    in through the same provider (linked to a single sign-on identity), holds nothing beyond
    the Admins role and is not provisioned yet. A password-only local account is not taken
    over on a name's likeness."""
    user = (
        get_user_model()
        .objects.filter(username__iexact=name, sso_identity__isnull=False, scim_user__isnull=True)
        .first()
    )
    if user is None or holds_beyond_admins(user):
        return None
    return user


@transaction.atomic
def scim_user_create(*, data: UserData) -> ScimUser:
    """POST /Users: a new account, or an account already signing in through the same
    provider (see _adoptable). 409 when the userName belongs to any other account."""
    if data.user_name is None:
        raise Refused("userName is required.", code="invalid_value")
    name = _username(data.user_name)
    user = _adoptable(name)
    if user is None:
        if get_user_model().objects.filter(username__iexact=name).exists():
            raise Refused(
                f"An account named {name} exists in Vetted and is not the identity "
                "provider's: an administrator must rename or remove it first.",
                status=409,
                code="uniqueness",
            )
        user = get_user_model()(username=name)
        user.set_unusable_password()  # provisioned accounts sign in through single sign-on
    account = ScimUser(user=user, user_name=name)
    activate = _apply(account, user, data)
    if activate is not None:
        user.is_active = activate
    user.save()
    account.user = user
    account.save()
    if not user.is_active:
        access_end(user)
    logger.info("SCIM: account %s provisioned (user %s)", account.scim_id, user.pk)
    return account


@transaction.atomic
def scim_user_update(*, account: ScimUser, data: UserData) -> ScimUser:
    """PUT or PATCH /Users/{id}. Deactivating ends the account's access at once."""
    user = account.user
    _not_beyond(user)
    change = _apply(account, user, data)
    if change is True:
        user.is_active = True
    user.save()
    account.save()
    if change is False:
        access_end(user)
    logger.info(
        "SCIM: account %s updated (user %s, active %s)", account.scim_id, user.pk, user.is_active
    )
    return account


@transaction.atomic
def scim_user_delete(*, account: ScimUser) -> None:
    """DELETE /Users/{id}: the account's access ends and its roles go; the user stays for the
    history that names it, without its SCIM record."""
    user = account.user
    _not_beyond(user)
    access_end(user)
    roles_apply(user, set())
    account.delete()
    logger.info("SCIM: account %s deleted (user %s kept, deactivated)", account.scim_id, user.pk)


# -- groups ----------------------------------------------------------------------------------------


def _members(ids: Iterable[str]) -> list[ScimUser]:
    wanted = [str(i) for i in ids]
    found = {
        a.scim_id: a for a in ScimUser.objects.select_related("user").filter(scim_id__in=wanted)
    }
    unknown = [i for i in wanted if i not in found]
    if unknown:
        raise Refused(f"No such user: {', '.join(unknown[:5])}.", code="invalid_value")
    return list(found.values())


def _sync_roles(accounts: Iterable[ScimUser]) -> None:
    """Each account's roles from its SCIM groups (the single sign-on mapping)."""
    for account in {a.pk: a for a in accounts}.values():
        names = account.groups.values_list("display_name", flat=True)
        roles_apply(account.user, roles_for_groups(names))


def _group_name(value: str) -> str:
    name = value.strip()
    if not name or len(name) > 255:
        raise Refused("displayName must be 1 to 255 characters.", code="invalid_value")
    return name


@dataclass
class GroupChange:
    """What a SCIM request changes in a group; None: not said."""

    display_name: str | None = None
    external_id: str | None = None
    members: list[str] | None = None  # the whole membership (POST, PUT, replace)
    add: list[str] | None = None
    remove: list[str] | None = None
    remove_all: bool = False


@transaction.atomic
def scim_group_save(*, group: ScimGroup | None, change: GroupChange) -> ScimGroup:
    """POST (``group`` None), PUT or PATCH /Groups: name and members; the roles of every
    account that joined or left, or of every member when the name (the role it gives)
    changed. Members holding more than the Admins role are refused (403)."""
    if group is None:
        if change.display_name is None:
            raise Refused("displayName is required.", code="invalid_value")
        group = ScimGroup()
    before = set(group.members.all()) if group.pk else set()
    renamed = False
    if change.display_name is not None:
        name = _group_name(change.display_name)
        if ScimGroup.objects.filter(display_name=name).exclude(pk=group.pk).exists():
            raise Refused(f"A group named {name} exists.", status=409, code="uniqueness")
        renamed = name != group.display_name
        group.display_name = name
    if change.external_id is not None:
        group.external_id = change.external_id[:255]
    group.save()
    after = set(before)
    if change.remove_all:
        after = set()
    if change.members is not None:
        after = set(_members(change.members))
    if change.add:
        after |= set(_members(change.add))
    if change.remove:
        after -= set(_members(change.remove))
    moved = before ^ after
    for account in moved:
        _not_beyond(account.user)
    if moved:
        group.members.set(after)
    touched = (before | after) if renamed else moved
    if renamed:
        for account in touched:
            _not_beyond(account.user)
    _sync_roles(touched)
    logger.info(
        "SCIM: group %s saved: %s member(s), %s joined or left",
        group.scim_id,
        len(after),
        len(moved),
    )
    return group


@transaction.atomic
def scim_group_delete(*, group: ScimGroup) -> None:
    members = list(group.members.select_related("user"))
    for account in members:
        _not_beyond(account.user)
    group.delete()
    _sync_roles(members)
    logger.info("SCIM: group %s deleted; %s member(s) lost its role", group.scim_id, len(members))
