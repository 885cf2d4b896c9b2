"""SCIM filters (``GET /Users?filter=userName eq "x"``) over the SCIM tables, through
django-scim2's filter parser. Apart from integrations.scim because django-scim2 imports these
while it defines its own adapters."""

from __future__ import annotations

from typing import Any

from django_scim.filters import FilterQuery


def scim_user_model() -> Any:
    """django-scim2's USER_MODEL_GETTER: the SCIM record of an account, not the account."""
    from integrations.models import ScimUser

    return ScimUser


def scim_group_model() -> Any:
    from integrations.models import ScimGroup

    return ScimGroup


class ScimUserFilter(FilterQuery):
    model_getter = scim_user_model
    attr_map = {
        ("userName", None, None): "user_name",
        ("externalId", None, None): "external_id",
        ("id", None, None): "scim_id",
    }


class ScimGroupFilter(FilterQuery):
    model_getter = scim_group_model
    attr_map = {
        ("displayName", None, None): "display_name",
        ("externalId", None, None): "external_id",
        ("id", None, None): "scim_id",
    }
