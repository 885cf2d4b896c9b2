"""Throttles: password spraying per address across usernames (django-axes with
core.login_throttle), and requests per token on the JSON API and SCIM (core.ratelimit), each
answered with a 429 that says when to come back."""

from __future__ import annotations

import secrets

import pytest
from django.test import Client
from django.urls import reverse

from core.ratelimit import rate_hit
from integrations.scim import token_hash
from reliability.services import api_token_create
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

UNKNOWN_DOCUMENT = "/api/v1/documents/00000000-0000-0000-0000-000000000000/"


def from_address(address: str) -> Client:
    return Client(REMOTE_ADDR=address)


def login(client: Client, username: str, password: str) -> int:
    return client.post(reverse("login"), {"username": username, "password": password}).status_code


@pytest.fixture
def spray_limits(settings) -> None:
    settings.AXES_FAILURE_LIMIT = 3  # per username and address
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 6  # per address, across usernames


def test_one_wrong_password_for_each_of_many_usernames_locks_the_address(spray_limits, reviewer):
    sprayer = from_address("203.0.113.7")
    for n in range(5):
        assert login(sprayer, f"user{n}", "Winter2026!") == 200  # the form again, not locked
    assert login(sprayer, "user5", "Winter2026!") == 429  # the sixth failure locks
    # Locked for every username from that address, the right password included ...
    assert login(sprayer, reviewer.username, PASSWORD) == 429
    # ... and for no one else.
    assert login(from_address("198.51.100.9"), reviewer.username, PASSWORD) == 302


def test_colleagues_behind_one_address_mistyping_a_little_are_not_locked(
    spray_limits, reviewer, other_reviewer
):
    office = from_address("192.0.2.50")
    for username in ("nurse1", "nurse2", "nurse3", "nurse4", "nurse5"):
        assert login(office, username, "typo") == 200
    assert login(office, reviewer.username, PASSWORD) == 302  # 5 of 6: still allowed


def test_a_sprayer_cannot_reset_the_address_count_with_an_account_of_their_own(
    spray_limits, reviewer
):
    sprayer = from_address("203.0.113.8")
    for n in range(5):
        login(sprayer, f"user{n}", "Winter2026!")
    assert login(sprayer, reviewer.username, PASSWORD) == 302  # their own account
    assert login(from_address("203.0.113.8"), "user5", "Winter2026!") == 429


def test_the_per_username_limit_still_holds_below_the_address_limit(spray_limits, reviewer):
    client = from_address("203.0.113.9")
    for _ in range(3):
        login(client, reviewer.username, "guess")
    assert login(client, reviewer.username, PASSWORD) == 429


def test_the_api_answers_429_in_json_past_a_tokens_budget(settings, reviewer):
    settings.API_RATE_LIMIT = 3
    key = api_token_create(user=reviewer, name="lims")[1]
    other = api_token_create(user=reviewer, name="other")[1]
    client = Client()
    for _ in range(3):
        response = client.get(UNKNOWN_DOCUMENT, headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 404
    response = client.get(UNKNOWN_DOCUMENT, headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 429
    body = response.json()
    assert body["code"] == "rate_limited" and "Too many requests" in body["error"]
    assert 1 <= int(response["Retry-After"]) <= settings.RATE_LIMIT_WINDOW_SECONDS
    assert body["retry_after"] == int(response["Retry-After"])
    # Another token has its own budget; a wrong key is still a 401, not a 429.
    assert (
        client.get(UNKNOWN_DOCUMENT, headers={"Authorization": f"Bearer {other}"}).status_code
        == 404
    )
    wrong = client.get(UNKNOWN_DOCUMENT, headers={"Authorization": "Bearer vt_wrong"})
    assert wrong.status_code == 401


def test_scim_answers_429_past_the_provider_tokens_budget(settings):
    token = f"scim_{secrets.token_urlsafe(16)}"
    settings.SCIM_TOKEN_SHA256 = [token_hash(token)]
    settings.SCIM_RATE_LIMIT = 2
    client = Client(headers={"Authorization": f"Bearer {token}"})
    assert [client.get("/scim/v2/Users").status_code for _ in range(2)] == [200, 200]
    refused = client.get("/scim/v2/Users")
    assert refused.status_code == 429
    assert "Too many requests" in refused.json()["detail"]
    assert int(refused["Retry-After"]) >= 1


def test_the_counter_opens_a_new_window_when_the_last_one_ends():
    hits = [rate_hit(scope="t", key="k", limit=2, window=10, now=100.0 + i) for i in range(3)]
    assert [h.allowed for h in hits] == [True, True, False]
    assert hits[-1].retry_after == 8  # the window [100, 110) ends in 8 s
    assert rate_hit(scope="t", key="k", limit=2, window=10, now=110.0).allowed
    assert rate_hit(scope="t", key="other", limit=2, window=10, now=102.0).allowed
