"""Response headers for pages and files that carry patient data."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import add_never_cache_headers


class NoStoreMiddleware:
    """``Cache-Control: no-store`` (and no-cache, private, max-age=0) on every response that
    reaches Django: pages, page images, exports, the API. Static files are served earlier by
    WhiteNoise and keep their long cache lifetimes; nothing else here is safe to keep."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Cache-Control" in response:
            del response["Cache-Control"]
        add_never_cache_headers(response)
        return response
