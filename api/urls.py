"""The JSON API (django-ninja) at /api/v1/: one NinjaAPI, its routers (documents, ground
truth, evaluate), and one exception handler per kind of failure, all answering in JSON. A
``Refused`` from any service is answered with its status and ``{"error", "code", ...}``."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from django.urls import URLPattern, URLResolver
from ninja import NinjaAPI
from ninja.errors import HttpError
from ninja.errors import ValidationError as NinjaValidationError

from api import documents, evaluate, ground_truth
from api.auth import LimitedParser, bearer
from api.middleware import status_code
from core.errors import Refused
from engine.llm import providers

logger = logging.getLogger(__name__)


class VettedApi(NinjaAPI):
    def get_openapi_schema(self, *args: Any, **kwargs: Any) -> Any:
        """The schema of what this server serves: /evaluate/ only where a language model is
        configured (without one it answers 503 llm_not_configured to every request)."""
        schema = super().get_openapi_schema(*args, **kwargs)
        if not providers.configured(settings):
            for path in [p for p in schema["paths"] if p.rstrip("/").endswith("/evaluate")]:
                del schema["paths"][path]
        return schema


api = VettedApi(
    title="Vetted API",
    parser=LimitedParser(),
    version="1.0.0",
    description="Submit clinical documents, poll, and fetch the verified classification and "
    "extracted fields.",
    urls_namespace="api",
    auth=bearer(),
    docs_url=None,  # no CDN-hosted documentation page; the schema is at openapi.json
)
api.add_router("", documents.router)
api.add_router("", ground_truth.router)
api.add_router("", evaluate.router)


@api.exception_handler(Refused)
def _refused(request: HttpRequest, exc: Refused) -> HttpResponse:
    body = exc.as_json()
    body.setdefault("code", status_code(exc.status))
    response = api.create_response(request, body, status=exc.status)
    if "retry_after" in exc.extra:  # seconds, for clients that honour the header
        response["Retry-After"] = str(exc.extra["retry_after"])
    return response


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    """django-ninja wraps a refusal raised while parsing the body: answer with the refusal."""
    if isinstance(exc.__cause__, Refused):
        return _refused(request, exc.__cause__)
    body = {"error": str(exc), "code": status_code(exc.status_code)}
    return api.create_response(request, body, status=exc.status_code)


@api.exception_handler(Exception)
def _crash(request: HttpRequest, exc: Exception) -> HttpResponse:
    """Whatever else goes wrong is answered in JSON too (never Django's HTML error page);
    the details stay in the server log."""
    if isinstance(exc, RequestDataTooBig):
        return api.create_response(
            request, {"error": "The request is too large.", "code": "too_large"}, status=413
        )
    if isinstance(exc, MultiPartParserError):
        body = {
            "error": "The request body is not valid multipart/form-data: send the document as "
            "the multipart field 'file'.",
            "code": "invalid_multipart",
        }
        return api.create_response(request, body, status=400)
    logger.exception("API request crashed: %s %s", request.method, request.path)
    body = {"error": "The server failed to handle the request; it is logged.", "code": "error"}
    return api.create_response(request, body, status=500)


@api.exception_handler(NinjaValidationError)
def _invalid(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    details = [
        {"option": ".".join(str(part) for part in e["loc"][1:]), "message": e["msg"]}
        for e in exc.errors
    ]
    message = "Invalid request: " + "; ".join(f"{d['option']}: {d['message']}" for d in details)
    body = {"error": message, "code": "invalid_request", "details": details}
    return api.create_response(request, body, status=400)


def openapi_schema() -> dict[str, Any]:
    return dict(api.get_openapi_schema(path_prefix="/api/v1/"))


def urls() -> tuple[list[URLResolver | URLPattern], str, str]:
    """The API's URL patterns. Tokens, not sessions, guard them: they opt out of the login
    redirect that every page has."""
    patterns, app_name, namespace = api.urls
    for pattern in patterns:
        if isinstance(pattern, URLPattern):
            login_not_required(pattern.callback)
    return patterns, app_name, namespace
