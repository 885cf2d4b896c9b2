"""Single sign-on with OpenID Connect (authorization code flow with PKCE), on top of
mozilla-django-oidc.

What Vetted adds to the library:
- endpoints come from the issuer's discovery document when not configured one by one, and are
  resolved when someone signs in (not whenever a session is loaded: signed-in users keep
  working while the provider is down);
- the ID token's issuer and audience are checked (the library checks signature and nonce),
  and the userinfo answer must be about the same subject;
- users are matched by the provider's stable subject; an existing local account is linked
  once by email, only when the provider says the address is verified (``email_verified`` is
  JSON ``true``, nothing else), and never a superuser's account: a superuser signs in with
  its password, never through the provider (docs/security.md);
- the groups claim decides the role at every sign-in: Reviewers, Admins (with staff status),
  both, or none, in which case the sign-in is refused with a message (the mapping is
  integrations.identity's, shared with SCIM);
- an account provisioned through SCIM is the one its person signs in to the first time: its
  externalId equals the ID-token claim named by SCIM_SSO_CLAIM;
- a session loads only while its user is active.
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.views import LoginView
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from integrations.identity import roles_apply, roles_for_groups
from integrations.models import ScimUser, SsoIdentity

logger = logging.getLogger(__name__)

ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
FAILURE_KEY = "_sso_failure"
FAILURES = {
    "no_role": "You signed in at {provider}, but your account is in no group that gives a "
    "Vetted role. Ask your administrator to add you to the reviewers' or admins' group.",
    "unreachable": "{provider} could not be reached. Try again in a few minutes; if it keeps "
    "failing, tell an administrator.",
    "rejected": "Single sign-on did not complete: the answer from {provider} could not be "
    "trusted. Try again; if it keeps failing, tell an administrator.",
    "cancelled": "Single sign-on was cancelled or refused at {provider}.",
    "local_only": "This account signs in with its password, not through {provider}.",
}
_discovered: dict[str, dict[str, Any]] = {}


class ProviderUnreachable(Exception):
    pass


def discovery(issuer: str) -> dict[str, Any]:
    """The provider's metadata (/.well-known/openid-configuration), fetched once per process."""
    if issuer not in _discovered:
        url = f"{issuer}/.well-known/openid-configuration"
        try:
            response = requests.get(
                url, timeout=settings.OIDC_TIMEOUT, verify=settings.OIDC_VERIFY_SSL
            )
            response.raise_for_status()
            document = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise ProviderUnreachable(f"discovery failed for {url}: {exc}") from exc
        if document.get("issuer", "").rstrip("/") != issuer:
            raise ProviderUnreachable(f"{url} names another issuer: {document.get('issuer')!r}")
        _discovered[issuer] = document
    return _discovered[issuer]


def oidc_setting(attr: str, *default: Any) -> Any:
    """A mozilla-django-oidc setting; an endpoint left empty comes from discovery."""
    value = import_from_settings(attr, *default)
    if attr in ENDPOINTS and not value and settings.OIDC_OP_ISSUER:
        value = discovery(settings.OIDC_OP_ISSUER).get(ENDPOINTS[attr])
        if not value:
            raise ProviderUnreachable(f"the provider's discovery document has no {attr}")
    return value


def claim(claims: dict[str, Any], path: str) -> Any:
    """A claim by dotted path (``realm_access.roles``)."""
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def roles_for(claims: dict[str, Any]) -> set[str]:
    groups = claim(claims, settings.OIDC_GROUPS_CLAIM)
    if isinstance(groups, str):
        groups = re.split(r"[\s,]+", groups)
    return roles_for_groups(str(g) for g in groups or [] if g)


def _fail(request: HttpRequest | None, reason: str) -> None:
    if request is not None:
        setattr(request, FAILURE_KEY, reason)


class VettedOIDCBackend(OIDCAuthenticationBackend):
    """Signs users in from the provider's answer; answers permission checks like
    ModelBackend (it is one), so it can be the only backend when local login is off."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Deliberately not the library's __init__: that resolves the endpoints, which would
        # contact the provider whenever a signed-in user's session is loaded.
        ModelBackend.__init__(self)
        self.UserModel = get_user_model()
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None

    get_settings = staticmethod(oidc_setting)

    def get_user(self, user_id: Any) -> Any:
        """The session's user, only while active (as ModelBackend answers): the library's own
        get_user would keep a deactivated user's sessions working."""
        user = super().get_user(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None

    @property
    def issuer(self) -> str:
        if settings.OIDC_OP_ISSUER:
            return str(settings.OIDC_OP_ISSUER)
        return str(settings.OIDC_OP_AUTHORIZATION_ENDPOINT)

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        if request is None or "code" not in request.GET or "state" not in request.GET:
            return None  # a password sign-in, or not a callback: not ours
        try:
            self.OIDC_OP_TOKEN_ENDPOINT = self.get_settings("OIDC_OP_TOKEN_ENDPOINT")
            self.OIDC_OP_USER_ENDPOINT = self.get_settings("OIDC_OP_USER_ENDPOINT")
            self.OIDC_OP_JWKS_ENDPOINT = self.get_settings("OIDC_OP_JWKS_ENDPOINT", None)
            with transaction.atomic():
                return super().authenticate(request, **kwargs)
        except (ProviderUnreachable, requests.RequestException) as exc:
            logger.warning("single sign-on failed: provider unreachable (%s)", exc)
            _fail(request, "unreachable")
        except SuspiciousOperation as exc:
            logger.warning("single sign-on refused: %s", exc)
            if not getattr(request, FAILURE_KEY, ""):
                _fail(request, "rejected")
        return None

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """Signature and nonce (the library), then who issued the token and for whom."""
        payload: dict[str, Any] = super().verify_token(token, **kwargs)
        if kwargs.get("nonce") is None:
            return payload  # a signed userinfo answer, not an ID token
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("The ID token was issued for another client.")
        if settings.OIDC_OP_ISSUER and payload.get("iss", "").rstrip("/") != self.issuer:
            raise SuspiciousOperation("The ID token was issued by another provider.")
        return payload

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        info = super().get_userinfo(access_token, id_token, payload)
        if info.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("The userinfo answer is about another subject.")
        # Some providers put the groups in the ID token only: the userinfo answer wins.
        return {**payload, **info}

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        if not claims.get("sub"):
            return False
        if not roles_for(claims):
            _fail(self.request, "no_role")
            logger.info("single sign-on refused: subject has no mapped group")
            return False
        return True

    def filter_users_by_claims(self, claims: dict[str, Any]) -> Any:
        """The account this identity signs in to: the one linked to its subject, else an
        unlinked local account with the same email, only if the provider vouches for the
        address and never a superuser's; none means a new account (the library's
        create_user)."""
        identity = (
            SsoIdentity.objects.select_related("user")
            .filter(issuer=self.issuer, subject=str(claims["sub"]))
            .first()
        )
        if identity is not None:
            if identity.user.is_superuser:
                # Linked before this rule, or promoted since: superuser power never rides on
                # the provider's word.
                _fail(self.request, "local_only")
                raise SuspiciousOperation("A superuser's account signs in with its password.")
            return [identity.user]
        provisioned = self._provisioned(claims)
        if provisioned is not None:
            return [provisioned]
        email = claims.get("email")
        # Exactly JSON true: a missing claim, "true", 1 and the like vouch for nothing.
        if email and claims.get("email_verified") is True:
            return self.UserModel.objects.filter(
                email__iexact=email, sso_identity__isnull=True, is_superuser=False
            )
        return self.UserModel.objects.none()

    def _provisioned(self, claims: dict[str, Any]) -> Any:
        """The account SCIM provisioned for this person, not yet linked to a subject: its
        SCIM externalId equals the claim named by SCIM_SSO_CLAIM (``sub`` by default; Okta
        sends its user id as both; with Entra ID, map externalId to objectId and set ``oid``).
        Never a superuser's."""
        value = claim(claims, settings.SCIM_SSO_CLAIM)
        if not value or not isinstance(value, str | int):
            return None
        account = (
            ScimUser.objects.select_related("user")
            .filter(
                external_id=str(value),
                user__sso_identity__isnull=True,
                user__is_superuser=False,
            )
            .first()
        )
        return account.user if account is not None else None

    def _username(self, claims: dict[str, Any]) -> str:
        wanted = str(claims.get("preferred_username") or "").strip()
        if not wanted and claims.get("email"):
            wanted = str(claims["email"]).split("@")[0]
        wanted = re.sub(r"[^\w.@+-]", "", wanted)[:140]
        if wanted and not self.UserModel.objects.filter(username__iexact=wanted).exists():
            return wanted
        return "sso-" + hashlib.sha256(f"{self.issuer} {claims['sub']}".encode()).hexdigest()[:16]

    def create_user(self, claims: dict[str, Any]) -> Any:
        user = self.UserModel.objects.create_user(self._username(claims))
        return self.update_user(user, claims)

    def update_user(self, user: Any, claims: dict[str, Any]) -> Any:
        """Take name and email from the provider, and the role from its groups."""
        user.email = claims.get("email") or user.email
        user.first_name = (claims.get("given_name") or user.first_name)[:150]
        user.last_name = (claims.get("family_name") or user.last_name)[:150]
        roles = roles_for(claims)
        user.save()
        roles_apply(user, roles)  # never a superuser here: filter_users_by_claims
        SsoIdentity.objects.update_or_create(
            user=user, defaults={"issuer": self.issuer, "subject": str(claims["sub"])}
        )
        logger.info("single sign-on: user %s signed in with roles %s", user.pk, sorted(roles))
        return user


def _failure_message(request: HttpRequest, reason: str) -> None:
    text = FAILURES.get(reason, FAILURES["rejected"]).format(provider=settings.OIDC_PROVIDER_NAME)
    messages.error(request, text)


class SignInStart(OIDCAuthenticationRequestView):
    """Sends the browser to the provider (state, nonce and PKCE kept in the session)."""

    def __init__(self, **kwargs: Any) -> None:
        super(OIDCAuthenticationRequestView, self).__init__(**kwargs)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    get_settings = staticmethod(oidc_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.OIDC_ENABLED:
            raise Http404("Single sign-on is not configured.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = self.get_settings("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except ProviderUnreachable as exc:
            logger.warning("single sign-on unavailable: %s", exc)
            _failure_message(request, "unreachable")
            return redirect("login")
        response: HttpResponse = super().get(request)
        return response


class SignInCallback(OIDCAuthenticationCallbackView):
    """The provider sends the browser back here with a code; failures explain themselves."""

    get_settings = staticmethod(oidc_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.OIDC_ENABLED:
            raise Http404("Single sign-on is not configured.")
        response: HttpResponse = super().get(request)
        return response

    def login_failure(self) -> HttpResponseRedirect:
        reason = getattr(self.request, FAILURE_KEY, "")
        if not reason:
            reason = "cancelled" if self.request.GET.get("error") else "rejected"
        _failure_message(self.request, reason)
        return HttpResponseRedirect(reverse("login"))


class VettedLoginView(LoginView):
    """The login page: the single sign-on button, the password form, or both."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context.update(
            sso_enabled=settings.OIDC_ENABLED,
            local_login=settings.LOCAL_LOGIN,
            provider_name=settings.OIDC_PROVIDER_NAME,
        )
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.LOCAL_LOGIN:
            messages.error(request, "Passwords are switched off here: sign in with single sign-on.")
            context = self.get_context_data(form=self.get_form_class()(request))
            return render(request, str(self.template_name), context, status=403)
        response: HttpResponse = super().post(request, *args, **kwargs)
        return response


def admin_login(request: HttpRequest) -> HttpResponse:
    """Django admin's own password form, unless local login is switched off."""
    from django.contrib import admin

    if not settings.LOCAL_LOGIN:
        following = request.GET.get("next")
        query = f"?{urlencode({'next': following})}" if following else ""
        return redirect(reverse("login") + query)
    return admin.site.login(request)


def check_settings() -> None:
    """Start-up check (AppConfig.ready): single sign-on needs its client secret."""
    if settings.OIDC_ENABLED and not settings.OIDC_RP_CLIENT_SECRET:
        raise ImproperlyConfigured("OIDC_RP_CLIENT_ID is set: set OIDC_RP_CLIENT_SECRET too.")
