"""Who is asking, and how much JSON they may send. Bearer tokens (``Authorization: Bearer
<key>``): only the key's SHA-256 is stored; the request then acts as the token's user, with
the same roles as in the browser."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.parser import Parser
from ninja.security import HttpBearer

from core.errors import Refused
from core.ratelimit import rate_check
from reliability.services import api_token_authenticate

VIEW_PERMISSION = "documents.view_document"


class bearer(HttpBearer):
    """A valid, unrevoked, unexpired token of an active user who holds a role; the request
    then acts as that user. Every request checks all of it again: a token stops at once when
    it expires, when its user is deactivated, and when its user loses its role."""

    def __call__(self, request: HttpRequest) -> Any:
        scheme, _, key = request.headers.get("Authorization", "").strip().partition(" ")
        # RFC 9110: the scheme is case-insensitive ("bearer", "BEARER").
        if scheme.lower() != "bearer" or not key.strip():
            raise Refused(
                status=401,
                message="Authentication required: send 'Authorization: Bearer <token>'.",
                code="unauthenticated",
            )
        return self.authenticate(request, key.strip())

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        found = api_token_authenticate(key=token)  # Refused (401) when not live
        # Counted per live token (an unknown key costs a lookup and gets a 401 anyway).
        rate_check(
            scope="api",
            key=str(found.pk),
            limit=settings.API_RATE_LIMIT,
            window=settings.RATE_LIMIT_WINDOW_SECONDS,
            what=f"the API token {found.prefix}\u2026",
        )
        request.user = found.user
        # The same roles as the browser: documents are patient data.
        if not found.user.has_perm(VIEW_PERMISSION):
            raise Refused(
                status=403,
                message="This token's user has no role (Reviewers or Admins): ask an "
                "administrator.",
                code="no_role",
            )
        return found.user


def json_too_deep(text: str, max_depth: int) -> bool:
    """Whether objects and lists nest deeper than ``max_depth`` (checked before parsing: the
    parser itself would recurse, and a deep enough document ends in RecursionError)."""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif char in "]}":
            depth -= 1
    return False


def json_load_limited(raw: str | bytes, *, what: str) -> Any:
    """Parse JSON from a client within API_JSON_MAX_BYTES and API_JSON_MAX_DEPTH; an
    a Refused (413 or 400, answered in JSON) otherwise."""
    if len(raw) > settings.API_JSON_MAX_BYTES:
        raise Refused(
            status=413,
            message=f"{what} is larger than {settings.API_JSON_MAX_BYTES} bytes.",
            code="too_large",
        )
    try:
        text = raw.decode() if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        raise Refused(
            status=400, message=f"{what} is not UTF-8 text.", code="invalid_json"
        ) from None
    if json_too_deep(text, settings.API_JSON_MAX_DEPTH):
        raise Refused(
            status=400,
            message=f"{what} nests deeper than {settings.API_JSON_MAX_DEPTH} levels.",
            code="too_deep",
        )
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise Refused(
            status=400, message=f"{what} is not valid JSON.", code="invalid_json"
        ) from None


class LimitedParser(Parser):
    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        body = json_load_limited(request.body, what="The request body")
        if not isinstance(body, dict):
            raise Refused(
                status=400, message="The request body must be a JSON object.", code="invalid_json"
            )
        return body
