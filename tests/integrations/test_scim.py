"""SCIM 2.0 provisioning, with requests shaped exactly as Okta and Microsoft Entra ID send them
(Okta's "SCIM 2.0 protocol reference" and Microsoft's "Develop a SCIM endpoint" request
examples): accounts created, updated, deactivated and deleted, group memberships giving and
taking roles, and access ending at once (sessions, API tokens)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.test import Client

from integrations.models import ScimGroup, ScimUser, SsoIdentity
from integrations.scim import token_hash
from reliability.models import ApiToken
from reliability.services import api_token_create
from review.roles import ADMINS, REVIEWERS

pytestmark = pytest.mark.django_db

TOKEN = "scim_test-token-for-the-identity-provider"
SCIM = "application/scim+json"
PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
UNKNOWN_DOCUMENT = "/api/v1/documents/00000000-0000-0000-0000-000000000000/"

# Okta: POST /Users (its reference request: a password and a locale come along).
OKTA_USER = {
    "schemas": [USER_SCHEMA],
    "userName": "rita.okafor@hospital.example",
    "name": {"givenName": "Rita", "familyName": "Okafor"},
    "emails": [{"primary": True, "value": "rita.okafor@hospital.example", "type": "work"}],
    "displayName": "Rita Okafor",
    "locale": "en-US",
    "externalId": "00ujl29u0le5T6Aj10h7",
    "groups": [],
    "password": "1mz050nq",
    "active": True,
}
OKTA_DEACTIVATE = {
    "schemas": [PATCH_OP],
    "Operations": [{"op": "replace", "value": {"active": False}}],
}
# Entra ID: POST /Users (with the enterprise extension's schema and a meta it adds).
ENTRA_USER = {
    "schemas": [USER_SCHEMA, "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
    "externalId": "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
    "userName": "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1",
    "active": True,
    "emails": [
        {
            "primary": True,
            "type": "work",
            "value": "Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com",
        }
    ],
    "meta": {"resourceType": "User"},
    "name": {
        "formatted": "givenName familyName",
        "familyName": "familyName",
        "givenName": "givenName",
    },
    "roles": [],
}
# Entra ID disables a user with the value as a string ("False"), not JSON false.
ENTRA_DISABLE = {
    "schemas": [PATCH_OP],
    "Operations": [{"op": "Replace", "path": "active", "value": "False"}],
}


@pytest.fixture(autouse=True)
def provider_settings(settings, roles) -> None:
    settings.SCIM_TOKEN_SHA256 = [token_hash(TOKEN)]
    settings.OIDC_REVIEWERS_GROUPS = ["vetted-clinicians"]
    settings.OIDC_ADMINS_GROUPS = ["vetted-admins"]


def scim(method: str, path: str, body: Any = None, *, token: str | None = TOKEN) -> Any:
    """A request as the provider makes it: its bearer token, no session, no CSRF token."""
    client = Client(
        enforce_csrf_checks=True, headers={"Authorization": f"Bearer {token}"} if token else None
    )
    if method == "get":
        response: Any = client.get(f"/scim/v2/{path}")
    else:
        response = getattr(client, method)(
            f"/scim/v2/{path}",
            data=json.dumps(body) if body is not None else "",
            content_type=SCIM,
        )
    content = response.content.decode()
    response.body = json.loads(content) if content else None
    return response


def filtered(resource: str, expression: str) -> Any:
    return scim("get", f"{resource}?filter={quote(expression)}&startIndex=1&count=100")


def role_names(user: Any) -> set[str]:
    user.refresh_from_db()
    return set(user.groups.values_list("name", flat=True))


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def user_sessions(user: Any) -> int:
    return sum(
        1
        for s in Session.objects.all()
        if str(s.get_decoded().get("_auth_user_id")) == str(user.pk)
    )


def api_status(key: str) -> tuple[int, str]:
    response = Client(HTTP_AUTHORIZATION=f"Bearer {key}").get(UNKNOWN_DOCUMENT)
    return response.status_code, response.json().get("code", "")


# -- authentication -----------------------------------------------------------------------------


def test_scim_needs_the_providers_bearer_token(settings):
    for token in (None, "scim_wrong"):
        response = scim("get", "Users", token=token)
        assert response.status_code == 401
        assert response.body["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
        assert response["WWW-Authenticate"] == 'Bearer realm="scim"'
    assert scim("get", "ServiceProviderConfig").status_code == 200
    settings.SCIM_TOKEN_SHA256 = []
    refused = scim("get", "Users")
    assert refused.status_code == 401 and "not configured" in refused.body["detail"]


def test_the_service_provider_config_says_what_is_supported():
    config = scim("get", "ServiceProviderConfig").body
    assert config["patch"]["supported"] and config["filter"]["supported"]
    assert not config["changePassword"]["supported"] and not config["bulk"]["supported"]
    assert config["authenticationSchemes"][0]["type"] == "oauthbearertoken"


# -- Okta ---------------------------------------------------------------------------------------


def test_okta_creates_a_user_who_signs_in_through_sso_and_never_with_a_password():
    lookup = filtered("Users", 'userName eq "rita.okafor@hospital.example"')
    assert (lookup.status_code, lookup.body["totalResults"]) == (200, 0)

    created = scim("post", "Users", OKTA_USER)
    assert created.status_code == 201, created.body
    body = created.body
    assert body["userName"] == "rita.okafor@hospital.example" and body["active"] is True
    assert body["externalId"] == "00ujl29u0le5T6Aj10h7"
    assert created["Location"].endswith(f"/scim/v2/Users/{body['id']}")
    user = get_user_model().objects.get(username="rita.okafor@hospital.example")
    assert (user.first_name, user.last_name, user.email) == (
        "Rita",
        "Okafor",
        "rita.okafor@hospital.example",
    )
    assert not user.has_usable_password()  # the password Okta sent is not kept
    assert role_names(user) == set()  # roles come from groups

    # Okta looks the user up again by name (case-insensitive) and by id.
    found = filtered("Users", 'userName eq "Rita.Okafor@hospital.example"').body
    assert [r["id"] for r in found["Resources"]] == [body["id"]]
    assert scim("get", f"Users/{body['id']}").body["emails"][0]["value"] == user.email
    assert scim("get", "Users/00000000000000000000000000000000").status_code == 404


def test_okta_group_push_gives_and_takes_the_role_and_the_token_follows_at_once():
    user_id = scim("post", "Users", OKTA_USER).body["id"]
    user = ScimUser.objects.get(scim_id=user_id).user
    key = api_token_create(user=user, name="lims")[1]
    assert api_status(key) == (403, "no_role")

    group = scim(
        "post",
        "Groups",
        {"schemas": [GROUP_SCHEMA], "displayName": "vetted-clinicians", "members": []},
    )
    assert group.status_code == 201
    group_id = group.body["id"]
    added = scim(
        "patch",
        f"Groups/{group_id}",
        {
            "schemas": [PATCH_OP],
            "Operations": [
                {
                    "op": "add",
                    "path": "members",
                    "value": [{"value": user_id, "display": "rita.okafor@hospital.example"}],
                }
            ],
        },
    )
    assert added.status_code == 200, added.body
    assert [m["value"] for m in added.body["members"]] == [user_id]
    assert role_names(user) == {REVIEWERS} and not user.is_staff
    assert api_status(key) == (404, "not_found")  # live: the document is unknown
    assert scim("get", f"Users/{user_id}").body["groups"][0]["display"] == "vetted-clinicians"

    removed = scim(
        "patch",
        f"Groups/{group_id}",
        {
            "schemas": [PATCH_OP],
            "Operations": [{"op": "remove", "path": f'members[value eq "{user_id}"]'}],
        },
    )
    assert removed.status_code == 200 and removed.body["members"] == []
    assert role_names(user) == set()
    assert api_status(key) == (403, "no_role")  # at once, not at the next sign-in


def test_okta_renaming_a_group_to_an_unmapped_name_takes_its_role():
    user_id = scim("post", "Users", OKTA_USER).body["id"]
    group_id = scim(
        "post",
        "Groups",
        {
            "schemas": [GROUP_SCHEMA],
            "displayName": "vetted-admins",
            "members": [{"value": user_id}],
        },
    ).body["id"]
    user = ScimUser.objects.get(scim_id=user_id).user
    assert role_names(user) == {ADMINS} and user.is_staff
    renamed = scim(
        "patch",
        f"Groups/{group_id}",
        {
            "schemas": [PATCH_OP],
            "Operations": [
                {"op": "replace", "value": {"id": group_id, "displayName": "former admins"}}
            ],
        },
    )
    assert renamed.status_code == 200 and renamed.body["displayName"] == "former admins"
    assert role_names(user) == set() and not user.is_staff


def provisioned_clinician(payload: dict[str, Any]) -> tuple[str, Any]:
    """A user the identity provider creates and puts in the clinicians' group: its SCIM id and
    its account."""
    user_id = scim("post", "Users", payload).body["id"]
    scim(
        "post",
        "Groups",
        {
            "schemas": [GROUP_SCHEMA],
            "displayName": "vetted-clinicians",
            "members": [{"value": user_id}],
        },
    )
    return user_id, ScimUser.objects.get(scim_id=user_id).user


def test_okta_deactivation_ends_sessions_and_revokes_tokens_and_put_reactivates():
    user_id, user = provisioned_clinician(OKTA_USER)
    browser = signed_in(user)
    assert browser.get("/review/").status_code == 200
    key = api_token_create(user=user, name="lims")[1]
    other = get_user_model().objects.create_user("omar", password="x")
    signed_in(other)

    response = scim("patch", f"Users/{user_id}", OKTA_DEACTIVATE)
    assert response.status_code == 200 and response.body["active"] is False
    user.refresh_from_db()
    assert not user.is_active
    assert user_sessions(user) == 0 and user_sessions(other) == 1  # only theirs
    assert browser.get("/review/").status_code == 302  # signed out
    assert ApiToken.objects.get(user=user).revoked
    assert api_status(key) == (401, "token_invalid")

    # Okta's profile push: PUT with the whole user, active again.
    back = scim(
        "put",
        f"Users/{user_id}",
        {**OKTA_USER, "id": user_id, "name": {"givenName": "Rita", "familyName": "Okafor-Ade"}},
    )
    assert back.status_code == 200 and back.body["active"] is True
    user.refresh_from_db()
    assert user.is_active and user.last_name == "Okafor-Ade"
    assert api_status(key) == (401, "token_invalid")  # revoked tokens stay revoked
    assert ScimUser.objects.get(scim_id=user_id).external_id == "00ujl29u0le5T6Aj10h7"


# -- Microsoft Entra ID -------------------------------------------------------------------------


def test_entra_creates_updates_and_finds_a_user():
    created = scim("post", "Users", ENTRA_USER)
    assert created.status_code == 201, created.body
    user_id = created.body["id"]
    by_external = filtered("Users", f'externalId eq "{ENTRA_USER["externalId"]}"').body
    assert [r["id"] for r in by_external["Resources"]] == [user_id]

    updated = scim(
        "patch",
        f"Users/{user_id}",
        {
            "schemas": [PATCH_OP],
            "Operations": [
                {
                    "op": "Replace",
                    "path": 'emails[type eq "work"].value',
                    "value": "updatedEmail@microsoft.com",
                },
                {"op": "Replace", "path": "name.familyName", "value": "updatedFamilyName"},
            ],
        },
    )
    assert updated.status_code == 200, updated.body
    user = ScimUser.objects.get(scim_id=user_id).user
    assert (user.email, user.last_name, user.first_name) == (
        "updatedEmail@microsoft.com",
        "updatedFamilyName",
        "givenName",
    )
    # Entra's Add without a path, and attributes Vetted does not keep: accepted, ignored.
    added = scim(
        "patch",
        f"Users/{user_id}",
        {
            "schemas": [PATCH_OP],
            "Operations": [
                {"op": "Add", "path": "title", "value": "Consultant pathologist"},
                {
                    "op": "Add",
                    "value": {
                        "name.givenName": "Ngozi",
                        "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:"
                        "employeeNumber": "100009",
                    },
                },
            ],
        },
    )
    assert added.status_code == 200, added.body
    user.refresh_from_db()
    assert user.first_name == "Ngozi"


def test_entra_group_membership_gives_and_takes_the_admins_role():
    user_id = scim("post", "Users", ENTRA_USER).body["id"]
    user = ScimUser.objects.get(scim_id=user_id).user
    group = scim(
        "post",
        "Groups",
        {
            "schemas": [
                GROUP_SCHEMA,
                "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group",
            ],
            "externalId": "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
            "displayName": "vetted-admins",
            "meta": {"resourceType": "Group"},
        },
    )
    assert group.status_code == 201, group.body
    group_id = group.body["id"]
    lookup = scim(
        "get",
        "Groups?excludedAttributes=members&filter=" + quote('displayName eq "vetted-admins"'),
    ).body
    assert [g["id"] for g in lookup["Resources"]] == [group_id]

    def members(op: str) -> Any:
        return scim(
            "patch",
            f"Groups/{group_id}",
            {
                "schemas": [PATCH_OP],
                "Operations": [
                    {"op": op, "path": "members", "value": [{"$ref": None, "value": user_id}]}
                ],
            },
        )

    assert members("Add").status_code == 200
    assert role_names(user) == {ADMINS} and user.is_staff and not user.is_superuser
    assert members("Remove").status_code == 200
    assert role_names(user) == set() and not user.is_staff


def test_entra_disables_with_the_string_false_and_access_ends_at_once():
    user_id = scim("post", "Users", ENTRA_USER).body["id"]
    user = ScimUser.objects.get(scim_id=user_id).user
    signed_in(user)
    key = api_token_create(user=user, name="etl")[1]
    response = scim("patch", f"Users/{user_id}", ENTRA_DISABLE)
    assert response.status_code == 200, response.body
    assert response.body["active"] is False
    user.refresh_from_db()
    assert not user.is_active and user_sessions(user) == 0
    assert api_status(key) == (401, "token_invalid")
    # Later Entra versions send JSON booleans; both are read. Anything else is refused.
    enable = {
        "schemas": [PATCH_OP],
        "Operations": [{"op": "Replace", "path": "active", "value": True}],
    }
    assert scim("patch", f"Users/{user_id}", enable).body["active"] is True
    bad = {
        "schemas": [PATCH_OP],
        "Operations": [{"op": "Replace", "path": "active", "value": "no"}],
    }
    assert scim("patch", f"Users/{user_id}", bad).status_code == 400


def test_entra_hard_delete_keeps_the_account_for_the_history_but_ends_it():
    user_id, user = provisioned_clinician(ENTRA_USER)
    key = api_token_create(user=user, name="etl")[1]
    assert scim("delete", f"Users/{user_id}").status_code == 204
    assert scim("get", f"Users/{user_id}").status_code == 404
    user.refresh_from_db()
    assert not user.is_active and role_names(user) == set()
    assert api_status(key) == (401, "token_invalid")
    assert ScimGroup.objects.get().members.count() == 0


# -- what SCIM may not do -------------------------------------------------------------------------


def test_a_superuser_is_never_changed_by_scim():
    user_id = scim("post", "Users", OKTA_USER).body["id"]
    user = ScimUser.objects.get(scim_id=user_id).user
    user.is_superuser = True  # promoted in Vetted since
    user.save()
    group_id = scim(
        "post", "Groups", {"schemas": [GROUP_SCHEMA], "displayName": "vetted-clinicians"}
    ).body["id"]
    for method, path, body in (
        ("patch", f"Users/{user_id}", OKTA_DEACTIVATE),
        ("put", f"Users/{user_id}", {**OKTA_USER, "active": False}),
        ("delete", f"Users/{user_id}", None),
        (
            "patch",
            f"Groups/{group_id}",
            {
                "schemas": [PATCH_OP],
                "Operations": [{"op": "add", "path": "members", "value": [{"value": user_id}]}],
            },
        ),
    ):
        response = scim(method, path, body)
        assert response.status_code == 403, (method, path, response.body)
        assert "managed in Vetted" in response.body["detail"]
    user.refresh_from_db()
    assert user.is_active and user.is_superuser and role_names(user) == set()


def test_a_local_account_is_not_taken_over_by_name_but_an_sso_one_is(django_user_model):
    django_user_model.objects.create_user("rita.okafor@hospital.example", password="x")
    conflict = scim("post", "Users", OKTA_USER)
    assert conflict.status_code == 409 and conflict.body["scimType"] == "uniqueness"

    sso_user = django_user_model.objects.create_user(ENTRA_USER["userName"])
    SsoIdentity.objects.create(user=sso_user, issuer="https://idp.example", subject="s-1")
    adopted = scim("post", "Users", ENTRA_USER)
    assert adopted.status_code == 201
    assert ScimUser.objects.get(scim_id=adopted.body["id"]).user == sso_user


def test_a_malformed_patch_is_a_scim_400():
    user_id = scim("post", "Users", OKTA_USER).body["id"]
    for operations in ("nope", [{"op": "move", "path": "active", "value": False}]):
        response = scim(
            "patch", f"Users/{user_id}", {"schemas": [PATCH_OP], "Operations": operations}
        )
        assert response.status_code == 400
    unknown = scim(
        "patch",
        f"Groups/{scim('post', 'Groups', {'displayName': 'g'}).body['id']}",
        {
            "schemas": [PATCH_OP],
            "Operations": [{"op": "add", "path": "members", "value": [{"value": "nobody"}]}],
        },
    )
    assert unknown.status_code == 400 and "No such user" in unknown.body["detail"]


def test_a_superuser_reads_what_was_provisioned_in_admin(superuser):
    user_id = scim("post", "Users", OKTA_USER).body["id"]
    scim("post", "Groups", {"displayName": "vetted-clinicians", "members": [{"value": user_id}]})
    client = signed_in(superuser)
    users = client.get("/admin/integrations/scimuser/").content.decode()
    groups = client.get("/admin/integrations/scimgroup/").content.decode()
    assert "rita.okafor@hospital.example" in users and "00ujl29u0le5T6Aj10h7" in users
    assert "vetted-clinicians" in groups


@pytest.mark.parametrize("kind", ["Users", "Groups"])
def test_a_patch_without_a_path_needs_an_object_and_changes_nothing_without_one(kind):
    if kind == "Users":
        created = scim("post", "Users", OKTA_USER).body
    else:
        created = scim(
            "post", "Groups", {"schemas": [GROUP_SCHEMA], "displayName": "vetted-clinicians"}
        ).body
    name = "userName" if kind == "Users" else "displayName"
    refused = scim(
        "patch",
        f"{kind}/{created['id']}",
        {
            "schemas": [PATCH_OP],
            "Operations": [
                {"op": "replace", "path": name, "value": "renamed"},
                {"op": "replace", "value": "not an object"},
            ],
        },
    )
    assert refused.status_code == 400
    assert refused.body["scimType"] == "invalidValue"
    assert "needs an object value" in refused.body["detail"]
    assert scim("get", f"{kind}/{created['id']}").body[name] == created[name]
