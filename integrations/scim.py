"""SCIM 2.0 (RFC 7643/7644) for the identity provider, on django-scim2: ``/scim/v2/Users`` and
``/scim/v2/Groups``, authenticated by the provider's bearer token (SCIM_TOKEN_SHA256).

django-scim2 gives the views, the filter parser and the protocol's shapes; the adapters below
read and write SCIM resources through integrations.provisioning, which holds the rules. PATCH
is read here (not by the library's handlers) because the two providers that matter send
different shapes: Okta ``{"op": "replace", "value": {"active": false}}`` and
``{"op": "remove", "path": "members[value eq \\"id\\"]"}``; Microsoft Entra ID
``{"op": "Replace", "path": "active", "value": "False"}`` (a string) and
``{"op": "Remove", "path": "members", "value": [{"value": "id"}]}``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urljoin

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.urls import re_path, reverse
from django_scim import constants, exceptions
from django_scim.adapters import SCIMGroup, SCIMUser
from django_scim.middleware import SCIMAuthCheckMiddleware
from django_scim.models import SCIMServiceProviderConfig

from core.errors import Refused
from core.ratelimit import rate_check
from integrations import provisioning
from integrations.models import ScimGroup, ScimUser

logger = logging.getLogger(__name__)

CORE_USER = constants.SchemaURI.USER + ":"
CORE_GROUP = constants.SchemaURI.GROUP + ":"
MEMBER_FILTER = re.compile(r'^members\[\s*value\s+eq\s+"([^"]*)"\s*\]$', re.IGNORECASE)
SCIM_TYPES = {409: "uniqueness", 400: "invalidValue"}


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_valid(token: str) -> bool:
    digest = token_hash(token)
    # Every configured hash is compared, in constant time: two during a rotation.
    return any(hmac.compare_digest(digest, wanted.lower()) for wanted in settings.SCIM_TOKEN_SHA256)


def _scim_error(status: int, detail: str, scim_type: str | None = None) -> HttpResponse:
    error = exceptions.SCIMException(detail, status=status, scim_type=scim_type)
    return HttpResponse(
        json.dumps(error.to_dict()), content_type=constants.SCIM_CONTENT_TYPE, status=status
    )


class ScimBearerAuth(SCIMAuthCheckMiddleware):
    """django-scim2's AUTH_CHECK_MIDDLEWARE: the request must carry the provider's bearer
    token. Request and response bodies (names, email addresses) are not logged."""

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if not settings.SCIM_TOKEN_SHA256:
            return _scim_error(401, "SCIM provisioning is not configured (SCIM_TOKEN_SHA256).")
        if scheme.lower() != "bearer" or not token_valid(token.strip()):
            response = _scim_error(401, "A valid bearer token is required.")
            response["WWW-Authenticate"] = 'Bearer realm="scim"'
            return response
        try:
            rate_check(
                scope="scim",
                key=token_hash(token.strip()),
                limit=settings.SCIM_RATE_LIMIT,
                window=settings.RATE_LIMIT_WINDOW_SECONDS,
                what="the SCIM token",
            )
        except Refused as refused:
            response = _scim_error(429, refused.message)
            response["Retry-After"] = str(refused.extra["retry_after"])
            return response
        return None

    def should_log_request(self, request: HttpRequest) -> bool:
        return False


class ServiceProviderConfig(SCIMServiceProviderConfig):
    def to_dict(self) -> dict[str, Any]:
        config: dict[str, Any] = super().to_dict()
        config.update(
            {
                "filter": {"supported": True, "maxResults": 200},
                "changePassword": {"supported": False},
                "documentationUri": settings.SITE_URL + "/",
            }
        )
        return config


@contextmanager
def _as_scim_errors() -> Iterator[None]:
    """A refusal of the provisioning rules, answered as a SCIM error."""
    try:
        yield
    except Refused as refused:
        raise exceptions.SCIMException(
            refused.message, status=refused.status, scim_type=SCIM_TYPES.get(refused.status)
        ) from None


def _bool(value: Any, what: str) -> bool:
    """JSON true/false, or the strings "True"/"False" as Entra ID sends them in PATCH."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise exceptions.BadRequestError(f'"{what}" must be true or false.', scim_type="invalidValue")


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str | int):
        raise exceptions.BadRequestError(f'"{what}" must be a string.', scim_type="invalidValue")
    return str(value)


def _email(emails: Any) -> str:
    """The primary address of a SCIM ``emails`` list (else the work one, else the first)."""
    if isinstance(emails, dict):  # OneLogin sends one object
        emails = [emails]
    if not isinstance(emails, list):
        raise exceptions.BadRequestError('"emails" must be a list.', scim_type="invalidValue")
    entries = [e for e in emails if isinstance(e, dict) and e.get("value")]
    if not entries:
        return ""
    ranked = sorted(entries, key=lambda e: (not e.get("primary"), e.get("type") != "work"))
    return _text(ranked[0]["value"], "emails").strip()


def _path(path: str, core: str) -> str:
    """A PATCH path without the core schema's URN, lower case: ``name.givenname``."""
    if path.lower().startswith(core.lower()):
        path = path[len(core) :]
    return path.strip().lower()


def _member_ids(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
        raise exceptions.BadRequestError(
            '"members" must be a list of {"value": id}.', scim_type="invalidValue"
        )
    return [_text(m.get("value"), "members.value") for m in value]


def _operations(body_operations: Any) -> list[tuple[str, str | None, Any]]:
    """(op in lower case, path or None, value) for each PATCH operation."""
    if not isinstance(body_operations, list):
        raise exceptions.BadRequestError('"Operations" must be a list.', scim_type="invalidSyntax")
    found = []
    for operation in body_operations:
        if not isinstance(operation, dict):
            raise exceptions.BadRequestError("An operation must be an object.")
        op = str(operation.get("op", "")).lower()
        if op not in constants.VALID_PATCH_OPS:
            raise exceptions.BadRequestError(f'Unknown PATCH op "{op}".', scim_type="invalidSyntax")
        path = operation.get("path")
        found.append((op, str(path) if path else None, operation.get("value")))
    return found


def _changes(body_operations: Any) -> Iterator[tuple[str, str, Any]]:
    """(op, path, value) for each change a PATCH asks for, users' and groups' alike: an
    operation without a path sets each key of its object value. Every operation is checked
    (_operations) before the first change is made."""
    for op, path, value in _operations(body_operations):
        if path is not None:
            yield op, path, value
            continue
        if not isinstance(value, dict):
            raise exceptions.BadRequestError(
                "An operation without a path needs an object value.",
                scim_type="invalidValue",
            )
        for key, each in value.items():
            yield op, str(key), each


class ScimUserAdapter(SCIMUser):
    """A SCIM User over an account: userName, externalId, name, emails, active, groups. Other
    attributes a provider sends (title, phone numbers, the enterprise extension) are not
    kept."""

    id_field = "scim_id"
    obj: ScimUser

    def __init__(self, obj: ScimUser, request: HttpRequest | None = None) -> None:
        super().__init__(obj, request)
        self.data = provisioning.UserData()

    @property
    def display_name(self) -> str:
        user = self.obj.user
        full = f"{user.first_name} {user.last_name}".strip()
        return full or user.username

    def to_dict(self) -> dict[str, Any]:
        user = self.obj.user
        return {
            "schemas": [constants.SchemaURI.USER],
            "id": self.obj.scim_id,
            "externalId": self.obj.external_id or None,
            "userName": self.obj.user_name,
            "name": {
                "givenName": user.first_name,
                "familyName": user.last_name,
                "formatted": self.display_name,
            },
            "displayName": self.display_name,
            "emails": [{"value": user.email, "type": "work", "primary": True}]
            if user.email
            else [],
            "active": user.is_active,
            "groups": [
                {
                    "value": group.scim_id,
                    "display": group.display_name,
                    "$ref": self._location(ScimGroupAdapter.url_name, group.scim_id),
                }
                for group in self.obj.groups.all()
            ],
            "meta": {
                "resourceType": self.resource_type,
                "created": self.obj.created_at.isoformat(),
                "lastModified": self.obj.updated_at.isoformat(),
                "location": self.location,
            },
        }

    def _location(self, url_name: str, scim_id: str) -> str:
        from django_scim.utils import get_base_scim_location_getter

        path = reverse(url_name, kwargs={"uuid": scim_id})
        return urljoin(get_base_scim_location_getter()(self.request), path)

    def validate_dict(self, d: dict[str, Any]) -> None:
        if not isinstance(d, dict):
            raise exceptions.BadRequestError("A user must be a JSON object.")

    def from_dict(self, d: dict[str, Any]) -> None:
        """POST and PUT: the attributes the body carries (one it leaves out is kept: a PUT
        without externalId must not unlink the account from its single sign-on identity)."""
        name = d.get("name") if isinstance(d.get("name"), dict) else None
        self.data = provisioning.UserData(
            user_name=_text(d["userName"], "userName") if "userName" in d else None,
            external_id=_text(d["externalId"], "externalId") if "externalId" in d else None,
            given_name=_text(name.get("givenName"), "name.givenName") if name else None,
            family_name=_text(name.get("familyName"), "name.familyName") if name else None,
            email=_email(d["emails"]) if "emails" in d else None,
            active=_bool(d["active"], "active") if d.get("active") is not None else None,
        )

    def save(self) -> None:
        with _as_scim_errors():
            if self.obj.pk is None:
                self.obj = provisioning.scim_user_create(data=self.data)
            else:
                self.obj = provisioning.scim_user_update(account=self.obj, data=self.data)

    def delete(self) -> None:
        with _as_scim_errors():
            provisioning.scim_user_delete(account=self.obj)

    def handle_operations(self, operations: Any) -> None:
        data = provisioning.UserData()
        for op, path, value in _changes(operations):
            self._set(data, op, path, value)
        self.data = data
        self.save()

    def _set(self, data: provisioning.UserData, op: str, path: str, value: Any) -> None:
        key = _path(path, CORE_USER)
        if op == "remove":
            value = None
        if key == "active":
            if op != "remove":
                data.active = _bool(value, "active")
        elif key == "username":
            if op != "remove":
                data.user_name = _text(value, "userName")
        elif key == "externalid":
            data.external_id = _text(value, "externalId")
        elif key == "name":
            name = value if isinstance(value, dict) else {}
            data.given_name = _text(name.get("givenName"), "name.givenName")
            data.family_name = _text(name.get("familyName"), "name.familyName")
        elif key == "name.givenname":
            data.given_name = _text(value, "name.givenName")
        elif key == "name.familyname":
            data.family_name = _text(value, "name.familyName")
        elif key == "emails":
            data.email = _email(value) if value is not None else ""
        elif key.startswith("emails[") and key.endswith("].value"):
            data.email = _text(value, "emails.value").strip()
        else:
            # displayName, title, phoneNumbers, the enterprise extension...: not kept.
            logger.debug("SCIM: user attribute %s not kept", key)


class ScimGroupAdapter(SCIMGroup):
    """A SCIM Group: displayName, externalId, members (the accounts' SCIM ids)."""

    id_field = "scim_id"
    obj: ScimGroup

    def __init__(self, obj: ScimGroup, request: HttpRequest | None = None) -> None:
        super().__init__(obj, request)
        self.change = provisioning.GroupChange()

    @property
    def display_name(self) -> str:
        return self.obj.display_name

    def to_dict(self) -> dict[str, Any]:
        members = self.obj.members.select_related("user") if self.obj.pk else []
        return {
            "schemas": [constants.SchemaURI.GROUP],
            "id": self.obj.scim_id,
            "externalId": self.obj.external_id or None,
            "displayName": self.obj.display_name,
            "members": [
                {
                    "value": account.scim_id,
                    "display": account.user_name,
                    "$ref": ScimUserAdapter(account, self.request).location,
                }
                for account in members
            ],
            "meta": {
                "resourceType": self.resource_type,
                "created": self.obj.created_at.isoformat(),
                "lastModified": self.obj.updated_at.isoformat(),
                "location": self.location,
            },
        }

    def validate_dict(self, d: dict[str, Any]) -> None:
        if not isinstance(d, dict):
            raise exceptions.BadRequestError("A group must be a JSON object.")

    def from_dict(self, d: dict[str, Any]) -> None:
        self.change = provisioning.GroupChange(
            display_name=_text(d["displayName"], "displayName") if "displayName" in d else None,
            external_id=_text(d["externalId"], "externalId") if "externalId" in d else None,
            members=_member_ids(d.get("members")),
        )

    def save(self) -> None:
        with _as_scim_errors():
            group = self.obj if self.obj.pk else None
            self.obj = provisioning.scim_group_save(group=group, change=self.change)

    def delete(self) -> None:
        with _as_scim_errors():
            provisioning.scim_group_delete(group=self.obj)

    def handle_operations(self, operations: Any) -> None:
        change = provisioning.GroupChange(add=[], remove=[])
        for op, path, value in _changes(operations):
            self._set(change, op, path, value)
        self.change = change
        self.save()

    def _set(self, change: provisioning.GroupChange, op: str, path: str, value: Any) -> None:
        assert change.add is not None and change.remove is not None
        key = _path(path, CORE_GROUP)
        single = MEMBER_FILTER.match(path.strip())
        if single is not None and op == "remove":  # Okta: members[value eq "id"]
            change.remove.append(single.group(1))
        elif key == "members":
            ids = _member_ids(value)
            if op == "add":
                change.add.extend(ids)
            elif op == "remove":
                if value is None:
                    change.remove_all = True  # no value: every member (RFC 7644 3.5.2.2)
                change.remove.extend(ids)
            else:
                change.members, change.add, change.remove = ids, [], []
        elif key == "displayname" and op != "remove":
            change.display_name = _text(value, "displayName")
        elif key == "externalid":
            change.external_id = _text(value, "externalId") if op != "remove" else ""
        elif key == "id":
            pass  # Okta repeats the group's id in a replace: nothing to change
        else:
            raise exceptions.NotImplementedError(f'Group attribute "{path}" is not supported.')


def urlpatterns() -> list[Any]:
    """django-scim2's URLs, open to requests without a session (the bearer token is checked by
    ScimBearerAuth); include them under the "scim" namespace, which the library reverses."""
    from django_scim import urls

    return [
        re_path(
            pattern.pattern.regex.pattern,
            login_not_required(pattern.callback),
            name=pattern.name,
        )
        for pattern in urls.urlpatterns
    ]
