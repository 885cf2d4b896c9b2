"""A small OpenID Connect provider on 127.0.0.1 for tests: discovery, authorize (the person is
already signed in at the provider: it answers at once with a code), token (client secret and
PKCE checked, an RS256-signed ID token), JWKS and userinfo. No network beyond loopback."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm


def rsa_key() -> Any:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class OidcProvider:
    def __init__(self, *, client_id: str, client_secret: str) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.key = rsa_key()
        self.kid = "test-key-1"
        self.signing_key = self.key  # tests may swap in a key the JWKS does not publish
        self.user: dict[str, Any] = {}  # the claims of whoever is signed in at the provider
        self.id_token_overrides: dict[str, Any] = {}
        self.userinfo_overrides: dict[str, Any] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, dict[str, Any]] = {}
        self.requests: list[str] = []
        self.authorize_queries: list[dict[str, str]] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def _json(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                provider.requests.append(parts.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if parts.path == "/.well-known/openid-configuration":
                    return self._json(200, provider.metadata())
                if parts.path == "/jwks":
                    return self._json(200, {"keys": [provider.jwk()]})
                if parts.path == "/authorize":
                    return self._authorize(query)
                if parts.path == "/userinfo":
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    if token not in provider.tokens:
                        return self._json(401, {"error": "invalid_token"})
                    return self._json(
                        200, {**provider.tokens[token], **provider.userinfo_overrides}
                    )
                return self._json(404, {"error": "not_found"})

            def _authorize(self, query: dict[str, str]) -> None:
                if query.get("client_id") != provider.client_id:
                    return self._json(400, {"error": "unauthorized_client"})
                provider.authorize_queries.append(query)
                code = secrets.token_urlsafe(16)
                provider.codes[code] = {"claims": dict(provider.user), **query}
                target = (
                    query["redirect_uri"] + "?" + urlencode({"code": code, "state": query["state"]})
                )
                self.send_response(302)
                self.send_header("Location", target)
                self.end_headers()

            def do_POST(self) -> None:
                provider.requests.append(self.path)
                length = int(self.headers.get("Content-Length", 0))
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                if self.path != "/token":
                    return self._json(404, {"error": "not_found"})
                grant = provider.codes.pop(form.get("code", ""), None)
                if (
                    grant is None
                    or form.get("client_id") != provider.client_id
                    or form.get("client_secret") != provider.client_secret
                    or form.get("redirect_uri") != grant["redirect_uri"]
                ):
                    return self._json(400, {"error": "invalid_grant"})
                if "code_challenge" in grant:
                    digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
                    expected = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
                    if expected != grant["code_challenge"]:
                        return self._json(400, {"error": "invalid_grant", "pkce": "mismatch"})
                access = secrets.token_urlsafe(16)
                provider.tokens[access] = grant["claims"]
                return self._json(
                    200,
                    {
                        "access_token": access,
                        "token_type": "Bearer",
                        "expires_in": 300,
                        "id_token": provider.id_token(grant["claims"], grant.get("nonce")),
                    },
                )

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
        }

    def jwk(self) -> dict[str, Any]:
        key = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {**key, "kid": self.kid, "alg": "RS256", "use": "sig"}

    def id_token(self, claims: dict[str, Any], nonce: str | None) -> str:
        now = int(time.time())
        body = {
            "iss": self.issuer,
            "aud": self.client_id,
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            **claims,
            **self.id_token_overrides,
        }
        return jwt.encode(body, self.signing_key, algorithm="RS256", headers={"kid": self.kid})

    def __enter__(self) -> OidcProvider:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def use_provider(settings: Any, idp: OidcProvider) -> None:
    """Point Vetted's single sign-on at ``idp`` (settings is pytest-django's fixture)."""
    from integrations import sso

    settings.OIDC_ENABLED = True
    settings.OIDC_RP_CLIENT_ID = idp.client_id
    settings.OIDC_RP_CLIENT_SECRET = idp.client_secret
    settings.OIDC_OP_ISSUER = idp.issuer
    settings.OIDC_PROVIDER_NAME = "St Elsewhere SSO"
    settings.OIDC_REVIEWERS_GROUPS = ["vetted-clinicians"]
    settings.OIDC_ADMINS_GROUPS = ["vetted-admins"]
    settings.AUTHENTICATION_BACKENDS = [
        "integrations.sso.VettedOIDCBackend",
        "django.contrib.auth.backends.ModelBackend",
    ]
    sso._discovered.clear()
