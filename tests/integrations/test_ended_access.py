"""Ended access stays ended: a token revoked or an account deactivated (by the identity
provider through SCIM, or by an Admin) is restored only by the identity provider or a
superuser. A non-superuser Admin, posting the admin's own forms (or forged ones), changes
nothing and is shown why."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from integrations.models import ScimUser
from reliability.models import ApiToken, Revocation
from reliability.services import api_token_create
from tests.integrations.test_scim import OKTA_DEACTIVATE, OKTA_USER, TOKEN, api_status, scim

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def provider_settings(settings, roles) -> None:
    from integrations.scim import token_hash

    settings.SCIM_TOKEN_SHA256 = [token_hash(TOKEN)]
    settings.OIDC_REVIEWERS_GROUPS = ["vetted-clinicians"]
    settings.OIDC_ADMINS_GROUPS = ["vetted-admins"]


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def scim_deactivated() -> tuple[Any, str]:
    """A provisioned account with a token, then deactivated by the provider."""
    user_id = scim("post", "Users", OKTA_USER).body["id"]
    user = ScimUser.objects.get(scim_id=user_id).user
    key = api_token_create(user=user, name="lims")[1]
    assert scim("patch", f"Users/{user_id}", OKTA_DEACTIVATE).status_code == 200
    user.refresh_from_db()
    assert not user.is_active
    return user, key


def token_form(token: ApiToken, *, revoked: bool) -> dict[str, str]:
    return {"revoked": "on"} if revoked else {}


def user_form(user: Any, *, active: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "username": user.username,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "is_staff": "on" if user.is_staff else "",
        "groups": [g.pk for g in user.groups.all()],
        "last_login_0": "",
        "last_login_1": "",
        "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
    }
    if active:
        data["is_active"] = "on"
    return {k: v for k, v in data.items() if v != ""}


def test_a_token_the_provider_revoked_is_not_restored_by_an_admin(admin_user):
    user, key = scim_deactivated()
    token = ApiToken.objects.get(user=user)
    assert token.revoked and token.revoked_by == Revocation.IDENTITY_PROVIDER
    admin = signed_in(admin_user)
    url = reverse("admin:reliability_apitoken_change", args=[token.pk])

    page = admin.get(url).content.decode()
    assert "the identity provider ended the account" in page
    assert "Only a superuser can restore it" in page
    assert 'name="revoked"' not in page  # shown, not editable
    response = admin.post(url, token_form(token, revoked=False))
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked and token.revoked_by == Revocation.IDENTITY_PROVIDER
    assert api_status(key)[0] == 401


def test_a_token_an_admin_revoked_is_restored_only_by_a_superuser(admin_user, superuser, reviewer):
    token, key = api_token_create(user=reviewer, name="lims")
    url = reverse("admin:reliability_apitoken_change", args=[token.pk])
    admin = signed_in(admin_user)
    assert admin.post(url, token_form(token, revoked=True)).status_code == 302
    token.refresh_from_db()
    assert token.revoked and token.revoked_by == Revocation.ADMIN
    assert api_status(key) == (401, "token_invalid")

    admin.post(url, token_form(token, revoked=False))  # the same Admin, changing their mind
    token.refresh_from_db()
    assert token.revoked

    assert signed_in(superuser).post(url, token_form(token, revoked=False)).status_code == 302
    token.refresh_from_db()
    assert not token.revoked and token.revoked_by == ""
    assert api_status(key)[0] == 404  # live again: the document is simply unknown


def test_an_account_the_provider_deactivated_is_not_reactivated_by_an_admin(admin_user, superuser):
    user, key = scim_deactivated()
    url = reverse("admin:auth_user_change", args=[user.pk])
    admin = signed_in(admin_user)

    page = admin.get(url).content.decode()
    assert "The identity provider (SCIM) manages this account" in page
    assert "only the identity provider or a superuser can reactivate it" in page
    assert 'name="is_active"' not in page
    response = admin.post(url, user_form(user, active=True))
    assert response.status_code == 302, response.content.decode()[:2000]
    user.refresh_from_db()
    assert not user.is_active

    # A superuser may; the provider may too (its PUT with active true).
    assert signed_in(superuser).post(url, user_form(user, active=True)).status_code == 302
    user.refresh_from_db()
    assert user.is_active
    assert api_status(key) == (401, "token_invalid")  # the token stays ended regardless


def test_an_account_an_admin_deactivated_stays_deactivated_and_loses_its_tokens(
    admin_user, reviewer
):
    token, key = api_token_create(user=reviewer, name="lims")
    url = reverse("admin:auth_user_change", args=[reviewer.pk])
    admin = signed_in(admin_user)
    assert admin.post(url, user_form(reviewer, active=False)).status_code == 302
    reviewer.refresh_from_db()
    token.refresh_from_db()
    assert not reviewer.is_active
    assert token.revoked and token.revoked_by == Revocation.ACCOUNT_DEACTIVATED

    assert "only the identity provider or a superuser" in admin.get(url).content.decode()
    admin.post(url, user_form(reviewer, active=True))
    reviewer.refresh_from_db()
    assert not reviewer.is_active
    assert api_status(key) == (401, "token_invalid")
