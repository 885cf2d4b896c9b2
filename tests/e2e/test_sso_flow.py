"""A clinician signs in with the hospital's identity provider in a real browser."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.integrations.oidc_provider import OidcProvider, use_provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_with_only_single_sign_on_a_clinician_reaches_the_queue(
    page, live_server, settings, roles, screenshot
):
    with OidcProvider(client_id="vetted", client_secret="s3cret") as idp:
        use_provider(settings, idp)
        settings.LOCAL_LOGIN = False
        settings.AUTHENTICATION_BACKENDS = ["integrations.sso.VettedOIDCBackend"]
        idp.user = {
            "sub": "u-1",
            "email": "a.chen@hospital.example",
            "preferred_username": "achen",
            "given_name": "Amy",
            "family_name": "Chen",
            "groups": ["vetted-clinicians"],
        }

        page.goto(f"{live_server.url}/review/")
        assert "/accounts/login/" in page.url
        expect(page.get_by_label("Password")).to_have_count(0)
        screenshot("login-sso-only")
        page.get_by_role("link", name="Sign in with St Elsewhere SSO").click()

        page.wait_for_url(f"{live_server.url}/review/")
        expect(page.get_by_role("heading", level=1)).to_contain_text("Review")
        expect(page.locator(".who")).to_have_text("Amy Chen")
