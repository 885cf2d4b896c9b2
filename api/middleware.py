"""Everything under /api/ answers in JSON: the routes' own refusals already do (api.urls);
this middleware covers what Django answers before or around them (an unknown path or a
malformed id: 404; a method a route does not serve: 405; a body over Django's limits: 413;
a crash outside django-ninja: 500), and serves a path written without its trailing slash as
the path with it, so a POST keeps its body (Django's APPEND_SLASH would redirect it away)."""

from __future__ import annotations

import json
from collections.abc import Callable
from http import HTTPStatus

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve

API_PREFIX = "/api/"

# The code of an error answer that carries none of its own, by status.
STATUS_CODES = {
    400: "invalid_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    500: "server_error",
    503: "unavailable",
}


def status_code(status: int) -> str:
    return STATUS_CODES.get(status, "error" if status >= 500 else "invalid_request")


def _resolves(path: str) -> bool:
    try:
        resolve(path)
    except Resolver404:
        return False
    return True


def _is_json(response: HttpResponse) -> bool:
    content_type = response.get("Content-Type", "").split(";")[0].strip().lower()
    return content_type == "application/json" or content_type.endswith("+json")


def _json_error(response: HttpResponse) -> HttpResponse:
    """The same status as a JSON body {"error", "code"} (headers that matter kept)."""
    status = response.status_code
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "The request failed."
    message = {
        404: "No such resource: check the path and the id (a document id is a UUID).",
        405: "This method is not allowed here.",
        413: "The request is too large.",
    }.get(status, phrase)
    answer = JsonResponse({"error": message, "code": status_code(status)}, status=status)
    for header in ("Allow", "Retry-After", "WWW-Authenticate"):
        if header in response:
            answer[header] = response[header]
    return answer


def _with_code(response: HttpResponse) -> HttpResponse:
    """A JSON error body without a ``code`` gets the code of its status."""
    try:
        body = json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        return _json_error(response)
    if isinstance(body, dict) and "error" in body and not body.get("code"):
        body["code"] = status_code(response.status_code)
        response.content = json.dumps(body).encode()
        response["Content-Length"] = str(len(response.content))
    return response


class ApiJsonMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        if not path.startswith(API_PREFIX):
            return self.get_response(request)
        if not path.endswith("/") and not _resolves(path) and _resolves(path + "/"):
            # Served, not redirected: a redirect drops a POST's body.
            request.path_info = path + "/"
            request.path = request.path + "/"
        response = self.get_response(request)
        if response.status_code < 400 or getattr(response, "streaming", False):
            return response
        return _with_code(response) if _is_json(response) else _json_error(response)
