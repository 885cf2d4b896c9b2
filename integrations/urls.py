"""Single sign-on URLs. The provider sends anonymous browsers here: no login required."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from integrations.sso import SignInCallback, SignInStart

# Unnamespaced: mozilla-django-oidc reverses "oidc_authentication_callback" by that name.
urlpatterns = [
    path(
        "authenticate/",
        login_not_required(SignInStart.as_view()),
        name="oidc_authentication_init",
    ),
    path(
        "callback/",
        login_not_required(SignInCallback.as_view()),
        name="oidc_authentication_callback",
    ),
]
