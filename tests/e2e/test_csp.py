"""Under the Content-Security-Policy the pages' own scripts run and nothing is blocked."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.conftest import PASSWORD
from tests.e2e.conftest import log_in
from tests.review.conftest import make_packet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_pages_run_their_scripts_and_the_policy_blocks_nothing(page, live_server, reviewer):
    packet = make_packet()
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    log_in(page, live_server, reviewer.username, PASSWORD)
    for url in (
        reverse("documents:list"),
        reverse("documents:upload"),
        reverse("review:queue"),
        reverse("review:packet", args=[packet.pk]),
    ):
        response = page.goto(f"{live_server.url}{url}")
        assert (
            response is not None
            and "script-src 'self'" in response.headers["content-security-policy"]
        )
        assert page.evaluate("typeof window.htmx") == "object", url
    assert violations == []
