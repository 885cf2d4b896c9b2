"""The walker: every route of the URL configuration, as every role, in every state of a
check, shows no answer, decider or note the documented table hides from that role; nor do
the webhook payloads published meanwhile. A route without a visibility decision
(review.visibility.ROUTES) fails, so no page, partial or endpoint is added without one."""

from __future__ import annotations

import inspect
import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from review import visibility
from tests.review import check_states

pytestmark = pytest.mark.django_db


HTMX: set[str] = set()  # routes whose view renders a partial for an HTMX request


def _reads_htmx(callback: Any) -> bool:
    try:
        return "htmx" in inspect.getsource(inspect.unwrap(callback))
    except (OSError, TypeError):
        return False


def routes() -> Iterator[tuple[str, str, list[str]]]:
    """(full pattern, name to reverse, parameter names) of every route."""

    def walk(
        patterns: list[Any], prefix: str, namespace: str
    ) -> Iterator[tuple[str, str, list[str]]]:
        for p in patterns:
            if isinstance(p, URLResolver):
                space = f"{namespace}{p.namespace}:" if p.namespace else namespace
                yield from walk(p.url_patterns, prefix + str(p.pattern), space)
            elif isinstance(p, URLPattern):
                params = list(getattr(p.pattern, "converters", {}) or {})
                if not params:
                    params = list(p.pattern.regex.groupindex)
                name = f"{namespace}{p.name}" if p.name else ""
                if _reads_htmx(p.callback):
                    HTMX.add(prefix + str(p.pattern))
                yield prefix + str(p.pattern), name, params

    yield from walk(get_resolver().url_patterns, "", "")


def test_every_route_has_a_visibility_decision():
    undecided = sorted({r for r, _, _ in routes() if visibility.route_decision(r) is None})
    assert not undecided, f"routes without a visibility decision: {undecided}"
    stale = sorted(set(visibility.ROUTES) - {r for r, _, _ in routes()} - {"admin/"})
    assert not stale, f"decisions for routes that no longer exist: {stale}"


def _values(states: check_states.States) -> dict[str, list[Any]]:
    """What fills each URL parameter: the objects of every state."""
    return {
        "document_id": [d.pk for d in states.documents.values()],
        "run_id": [r.pk for r in states.runs.values()],
        "packet_id": [p.pk for p in states.packets.values()],
        "sample_id": [s.pk for s in states.samples.values()],
        "second_id": [s.pk for s in states.seconds.values()],
        "number": [1],
        "uidb64": ["MQ"],
        "token": ["set-password"],
    }


def urls(states: check_states.States) -> list[tuple[str, str]]:
    """(route, URL) for every route, each parameter filled with each object it can name.
    Django admin's routes that name an object are left out (one decision covers the admin,
    and its object pages answer only to those who see every label); so are the page images
    (pictures of the document, no label), which take a renderer's time."""
    values = _values(states)
    found = []
    for route, name, params in routes():
        if route.endswith(".png") or (route.startswith("admin/") and params):
            continue
        if not name:
            found.append((route, "/" + route))
            continue
        optional = route.startswith("scim/")  # its regex groups are optional: list URLs
        if not params or optional:
            found.append((route, reverse(name)))
            continue
        for combination in itertools.product(*(values[p] for p in params)):
            found.append((route, reverse(name, kwargs=dict(zip(params, combination, strict=True)))))
    return found


@pytest.fixture
def states(django_user_model, roles, settings) -> Iterator[check_states.States]:
    from core import events

    built = check_states.build(django_user_model, roles, settings)
    yield built
    events.published.disconnect(built.heard)


def _assert_no_leak(states: check_states.States, username: str, response: Any, where: str) -> None:
    assert response.status_code < 500, f"{where} as {username}: {response.status_code}"
    if getattr(response, "streaming", False):
        body = b"".join(response.streaming_content)
    else:
        body = response.content
    text = body.decode("utf-8", "replace")
    leaks = states.leaks(username, text, where)
    assert not leaks, f"{username} sees what is hidden from them: {leaks}"


@pytest.mark.slow  # ~1000 requests: 225 s at a load of 23 on 2 cores; see the docstring
def test_no_route_shows_a_hidden_answer_decider_or_note_to_any_role(states, settings):
    from reliability.services import api_token_create

    started = time.monotonic()
    walked = 0
    pages = urls(states)
    api = [(r, u) for r, u in pages if r.startswith("api/v1/")]
    site = [(r, u) for r, u in pages if not r.startswith("api/v1/")]
    for role, user in states.users.items():
        username = user.username
        if username == check_states.PEOPLE["admin"]:
            continue  # sees every label: nothing to hide from them (walked below for errors)
        client = Client()
        client.force_login(user)
        for route, url in site:
            if route.startswith("admin/") and role != "unrelated":
                continue  # the admin answers every reviewer alike (not staff): walked once
            _assert_no_leak(states, username, client.get(url), f"GET {url}")
            walked += 1
            if route in HTMX:
                response = client.get(url, HTTP_HX_REQUEST="true")
                _assert_no_leak(states, username, response, f"HX {url}")
                walked += 1
            if visibility.route_decision(route) == visibility.ASKS:
                # A write answered with a page (a refusal, a form with errors) shows no more:
                # posted empty, in a transaction rolled back so the states stay as built.
                with transaction.atomic():
                    response = client.post(url, {})
                    transaction.set_rollback(True)
                _assert_no_leak(states, username, response, f"POST {url}")
                walked += 1
        _, key = api_token_create(user=user, name=f"walk-{role}")
        for _route, url in api:
            response = client.get(url, HTTP_AUTHORIZATION=f"Bearer {key}")
            _assert_no_leak(states, username, response, f"API {url}")
            walked += 1
    # Admins see everything; their pages are walked for errors only.
    admin = Client()
    admin.force_login(states.users["admin"])
    for route, url in site:
        if not route.startswith("admin/"):
            assert admin.get(url).status_code < 500, url
        walked += 1
    # Webhook receivers are told no hidden answer, decider or note either.
    for kind, data in states.events:
        leaks = states.leaks(check_states.PEOPLE["unrelated"], json.dumps(data), f"event {kind}")
        assert not leaks, leaks
        if data.get("state") == "provisional":
            assert not {"dominant_type", "outcome", "source"} & set(data), (kind, data)
    assert states.events, "the states were built through the services that publish events"
    routes_walked = len({r for r, _ in pages})
    print(
        f"walked {walked} requests, {len(pages)} URLs of {routes_walked} routes, in "
        f"{time.monotonic() - started:.1f} s"
    )
