"""Single sign-on against a local OpenID Connect provider started by the test: the whole
authorization-code flow over HTTP (live server, real HTTP client following redirects)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from integrations import sso
from integrations.models import SsoIdentity
from review.roles import ADMINS, REVIEWERS
from tests.conftest import PASSWORD
from tests.integrations.oidc_provider import OidcProvider, rsa_key, use_provider

pytestmark = pytest.mark.django_db(transaction=True)

CLINICIAN = {
    "sub": "248289761001",
    "email": "r.okafor@hospital.example",
    "email_verified": True,
    "preferred_username": "rokafor",
    "given_name": "Rita",
    "family_name": "Okafor",
    "groups": ["staff", "vetted-clinicians"],
}


@pytest.fixture
def provider(settings, roles) -> Iterator[OidcProvider]:
    with OidcProvider(client_id="vetted", client_secret="client-s3cret") as idp:
        use_provider(settings, idp)
        idp.user = dict(CLINICIAN)
        yield idp
        sso._discovered.clear()


def sign_in(live_server, next_path: str = "/review/") -> tuple[requests.Session, requests.Response]:
    """What the browser does: start at Vetted, follow every redirect through the provider."""
    browser = requests.Session()
    response = browser.get(
        f"{live_server.url}/oidc/authenticate/", params={"next": next_path}, timeout=30
    )
    return browser, response


def test_a_clinician_signs_in_through_the_provider_and_becomes_a_reviewer(live_server, provider):
    browser, response = sign_in(live_server)

    assert response.status_code == 200
    assert urlsplit(response.url).path == "/review/"  # back where they wanted to go
    assert "Review queue" in response.text
    user = get_user_model().objects.get(username="rokafor")
    assert (user.email, user.first_name, user.last_name) == (
        "r.okafor@hospital.example",
        "Rita",
        "Okafor",
    )
    assert [g.name for g in user.groups.all()] == [REVIEWERS]
    assert not user.is_staff and not user.has_usable_password()
    assert SsoIdentity.objects.get(user=user).subject == "248289761001"
    # Endpoints came from discovery; the provider saw the whole code flow, PKCE included.
    assert provider.requests[0] == "/.well-known/openid-configuration"
    assert {"/authorize", "/token", "/jwks", "/userinfo"} <= set(provider.requests)
    [query] = provider.authorize_queries
    assert query["code_challenge_method"] == "S256" and query["nonce"]
    assert query["scope"] == "openid email profile"
    # Reviewers may not export.
    assert browser.get(f"{live_server.url}/review/export/", timeout=30).status_code == 403


def test_a_deactivated_users_single_sign_on_session_stops_at_once(live_server, provider):
    """The library's backend would load an inactive user from the session; ours does not."""
    browser, response = sign_in(live_server)
    assert "Review queue" in response.text
    get_user_model().objects.filter(username="rokafor").update(is_active=False)
    again = browser.get(f"{live_server.url}/review/", timeout=30)
    assert urlsplit(again.url).path == "/accounts/login/"


@pytest.mark.parametrize("claim_name", ["sub", "oid"])
def test_an_account_provisioned_by_scim_is_the_one_its_person_signs_in_to(
    live_server, provider, settings, claim_name
):
    """SCIM's externalId meets the ID token's claim named by SCIM_SSO_CLAIM: Okta sends its
    user id as both (sub); with Entra ID, externalId mapped to objectId meets oid."""
    from integrations.provisioning import UserData, scim_user_create

    settings.SCIM_SSO_CLAIM = claim_name
    provider.user["oid"] = "5f6ad4b2-7c3e-4a4b-9f1e-2d3c4b5a6978"
    account = scim_user_create(
        data=UserData(
            user_name="rita.okafor@hospital.example",
            external_id=str(provider.user[claim_name]),
            email="someone.else@hospital.example",  # not what links them
        )
    )
    _browser, response = sign_in(live_server)
    assert "Review queue" in response.text
    identity = SsoIdentity.objects.get(subject=CLINICIAN["sub"])
    assert identity.user == account.user
    assert get_user_model().objects.count() == 1


def test_the_role_follows_the_providers_groups_at_every_sign_in(live_server, provider):
    sign_in(live_server)
    provider.user["groups"] = ["vetted-admins"]
    provider.user["email"] = "rita.okafor@hospital.example"  # changed: same subject, same user
    _, response = sign_in(live_server, next_path="/review/export/")

    assert urlsplit(response.url).path == "/review/export/" and response.status_code == 200
    user = get_user_model().objects.get()
    assert [g.name for g in user.groups.all()] == [ADMINS]
    assert user.is_staff and not user.is_superuser
    assert user.email == "rita.okafor@hospital.example"


def test_a_user_in_no_mapped_group_is_refused_with_a_message(live_server, provider):
    provider.user["groups"] = ["staff"]
    browser, response = sign_in(live_server)

    assert urlsplit(response.url).path == "/accounts/login/"
    assert "in no group that gives a Vetted role" in response.text
    assert not get_user_model().objects.exists()
    assert browser.get(f"{live_server.url}/review/", timeout=30).url.endswith(
        "/accounts/login/?next=/review/"
    )


def test_groups_can_come_from_a_nested_claim(live_server, provider, settings):
    settings.OIDC_GROUPS_CLAIM = "realm_access.roles"
    provider.user.pop("groups")
    provider.user["realm_access"] = {"roles": ["vetted-clinicians", "vetted-admins"]}
    sign_in(live_server)
    user = get_user_model().objects.get()
    assert sorted(g.name for g in user.groups.all()) == [ADMINS, REVIEWERS]


@pytest.mark.parametrize(
    "tamper",
    [
        {"aud": "another-client"},
        {"iss": "http://127.0.0.1:1"},
        {"nonce": "replayed"},
    ],
)
def test_an_id_token_for_another_client_issuer_or_request_is_refused(live_server, provider, tamper):
    provider.id_token_overrides = tamper
    _, response = sign_in(live_server)
    assert urlsplit(response.url).path == "/accounts/login/"
    assert "could not be trusted" in response.text
    assert not get_user_model().objects.exists()


def test_a_token_signed_with_a_key_the_provider_does_not_publish_is_refused(live_server, provider):
    provider.signing_key = rsa_key()
    _, response = sign_in(live_server)
    assert "could not be trusted" in response.text
    assert not get_user_model().objects.exists()


def test_userinfo_about_another_subject_is_refused(live_server, provider):
    provider.userinfo_overrides = {"sub": "someone-else"}
    sign_in(live_server)
    assert not get_user_model().objects.exists()


def test_an_existing_local_account_is_linked_by_verified_email(
    live_server, provider, django_user_model
):
    local = django_user_model.objects.create_user(
        username="rita", email="R.Okafor@hospital.example", password=PASSWORD
    )
    sign_in(live_server)
    assert list(django_user_model.objects.values_list("username", flat=True)) == ["rita"]
    assert SsoIdentity.objects.get().user == local

    # An unverified address links nothing: a new account is made instead.
    SsoIdentity.objects.all().delete()
    provider.user["email_verified"] = False
    provider.user["sub"] = "another-subject"
    sign_in(live_server)
    assert django_user_model.objects.count() == 2


MISSING = object()


@pytest.mark.parametrize(
    "verified",
    [MISSING, "false", "False", 0, False, "true", 1, None],
    ids=["missing", "'false'", "'False'", "0", "false", "'true'", "1", "null"],
)
def test_only_a_json_true_email_verified_links_a_local_account(
    live_server, provider, django_user_model, verified
):
    local = django_user_model.objects.create_user(
        username="rita", email="r.okafor@hospital.example", password=PASSWORD
    )
    if verified is MISSING:
        provider.user.pop("email_verified")
    else:
        provider.user["email_verified"] = verified
    sign_in(live_server)

    # Not linked: a new account for the identity, as for an unknown email.
    assert not SsoIdentity.objects.filter(user=local).exists()
    new = SsoIdentity.objects.get().user
    assert new != local and new.username == "rokafor" and not new.is_superuser


def test_a_superusers_account_is_never_linked_by_email(live_server, provider, django_user_model):
    root = django_user_model.objects.create_superuser(
        username="root", email="R.Okafor@hospital.example", password=PASSWORD
    )
    provider.user["email_verified"] = True
    browser, _ = sign_in(live_server)

    assert not SsoIdentity.objects.filter(user=root).exists()
    new = SsoIdentity.objects.get().user
    assert new != root and not (new.is_superuser or new.is_staff)
    assert [g.name for g in new.groups.all()] == [REVIEWERS]
    # The browser holds the new account's session, not the superuser's.
    assert browser.get(f"{live_server.url}/admin/", timeout=30).url.endswith(
        "/admin/login/?next=/admin/"
    )


def test_an_identity_linked_to_a_superuser_cannot_sign_in(live_server, provider, django_user_model):
    # Linked under the old rule, or promoted since: a superuser signs in with its password.
    root = django_user_model.objects.create_superuser(username="root", password=PASSWORD)
    SsoIdentity.objects.create(user=root, issuer=provider.issuer, subject=CLINICIAN["sub"])
    browser, response = sign_in(live_server)

    assert urlsplit(response.url).path == "/accounts/login/"
    assert "signs in with its password" in response.text
    assert browser.get(f"{live_server.url}/review/", timeout=30).url.endswith(
        "/accounts/login/?next=/review/"
    )
    root.refresh_from_db()
    assert root.is_superuser and root.is_staff and root.last_login is None
    assert django_user_model.objects.count() == 1


def test_an_unreachable_provider_is_explained_on_the_login_page(settings, roles):
    settings.OIDC_ENABLED = True
    settings.OIDC_RP_CLIENT_ID = "vetted"
    settings.OIDC_RP_CLIENT_SECRET = "x"
    settings.OIDC_OP_ISSUER = "http://127.0.0.1:9"  # nothing listens there
    settings.OIDC_PROVIDER_NAME = "St Elsewhere SSO"
    sso._discovered.clear()
    response = Client().get(reverse("oidc_authentication_init"), follow=True)
    assert response.redirect_chain[-1][0] == reverse("login")
    assert "St Elsewhere SSO could not be reached" in response.content.decode()


def test_sso_urls_are_absent_when_sso_is_not_configured():
    assert Client().get(reverse("oidc_authentication_init")).status_code == 404
    assert Client().get(reverse("oidc_authentication_callback")).status_code == 404


def test_the_login_page_offers_sso_beside_local_accounts(provider):
    page = Client().get(reverse("login")).content.decode()
    assert "Sign in with St Elsewhere SSO" in page and 'name="password"' in page


def test_with_local_login_off_only_sso_is_offered_and_passwords_never_work(
    provider, settings, django_user_model, live_server
):
    settings.LOCAL_LOGIN = False
    settings.AUTHENTICATION_BACKENDS = ["integrations.sso.VettedOIDCBackend"]
    django_user_model.objects.create_superuser(username="root", password=PASSWORD)

    client = Client()
    page = client.get(reverse("login")).content.decode()
    assert "Sign in with St Elsewhere SSO" in page and 'name="password"' not in page
    refused = client.post(reverse("login"), {"username": "root", "password": PASSWORD})
    assert refused.status_code == 403 and "_auth_user_id" not in client.session
    assert not client.login(username="root", password=PASSWORD)
    admin_page = client.get("/admin/login/?next=/admin/")
    assert admin_page.status_code == 302
    assert admin_page["Location"] == "/accounts/login/?next=%2Fadmin%2F"
    assert (
        client.post("/admin/login/", {"username": "root", "password": PASSWORD}).status_code == 302
    )
    assert "_auth_user_id" not in client.session

    # The single sign-on backend alone still answers permission checks.
    _, response = sign_in(live_server)
    assert urlsplit(response.url).path == "/review/" and response.status_code == 200


def test_local_login_off_without_sso_stops_start_up():
    from tests.test_settings import run_manage

    result = run_manage("check", env={"LOCAL_LOGIN": "0"})
    assert result.returncode != 0
    assert "LOCAL_LOGIN=0 needs single sign-on" in result.stderr
    result = run_manage("check", env={"OIDC_RP_CLIENT_ID": "vetted"})
    assert "set OIDC_OP_ISSUER" in result.stderr
