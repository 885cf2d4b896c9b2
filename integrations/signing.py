"""Webhook signatures: Standard Webhooks (https://www.standardwebhooks.com), through the
``standardwebhooks`` package, plus the headers of Vetted's first scheme for one more release.

Standard Webhooks: ``webhook-id`` (the delivery's id: the same on every retry, so receivers
de-duplicate on it, and it is signed), ``webhook-timestamp`` (Unix seconds) and
``webhook-signature`` (``v1,<base64 HMAC-SHA256>`` over ``<id>.<timestamp>.<body>``). The
endpoint's secret is ``whsec_`` and the base64 of the key (24 to 64 random bytes); any
Standard Webhooks library verifies a delivery with it: ``Webhook(secret).verify(body, headers)``.

The old headers (``Vetted-Event``, ``Vetted-Delivery``, ``Vetted-Timestamp``,
``Vetted-Signature: v1=<hex HMAC-SHA256 over <timestamp>.<body>>``) are still sent while
WEBHOOK_LEGACY_HEADERS is on (the default for this release). Their HMAC key is the same bytes
as the standard one: for endpoints made before the change, the migration turned the old secret
into ``whsec_`` + base64(old secret), so those bytes are exactly the old secret, and receivers
that verify the old way with the old secret keep working until they move.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from datetime import UTC, datetime

from standardwebhooks import Webhook

PREFIX = "whsec_"
MIN_KEY_BYTES = 24  # the standard's range
MAX_KEY_BYTES = 64
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER_STD = "webhook-timestamp"
SIGNATURE_HEADER_STD = "webhook-signature"
# Vetted's first scheme (WEBHOOK_LEGACY_HEADERS): removed in the next release.
EVENT_HEADER = "Vetted-Event"
DELIVERY_HEADER = "Vetted-Delivery"
TIMESTAMP_HEADER = "Vetted-Timestamp"
SIGNATURE_HEADER = "Vetted-Signature"
LEGACY_SCHEME = "v1"
DEFAULT_TOLERANCE_SECONDS = 300


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def secret_key(secret: str) -> bytes:
    """The key a ``whsec_`` secret carries (strict base64); ValueError for anything else."""
    if not secret.startswith(PREFIX):
        raise ValueError(f"A webhook secret starts with {PREFIX}.")
    try:
        key = base64.b64decode(secret[len(PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"A webhook secret is {PREFIX} and base64 (A-Z a-z 0-9 + / =).") from None
    return key


def secret_problem(secret: str, *, min_bytes: int = MIN_KEY_BYTES) -> str:
    """Why ``secret`` is not a good Standard Webhooks secret, or "" when it is."""
    try:
        key = secret_key(secret)
    except ValueError as exc:
        return str(exc)
    if not min_bytes <= len(key) <= MAX_KEY_BYTES:
        return f"The key must be {min_bytes} to {MAX_KEY_BYTES} bytes (it is {len(key)})."
    return ""


def standard_headers(*, secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    signature = Webhook(secret_key(secret)).sign(
        msg_id=msg_id, timestamp=datetime.fromtimestamp(timestamp, UTC), data=body.decode()
    )
    return {
        ID_HEADER: msg_id,
        TIMESTAMP_HEADER_STD: str(timestamp),
        SIGNATURE_HEADER_STD: signature,
    }


def sign_legacy(*, key: bytes, timestamp: int, body: bytes) -> str:
    digest = hmac.new(key, str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"{LEGACY_SCHEME}={digest}"


def legacy_headers(
    *, secret: str, event: str, delivery_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    return {
        EVENT_HEADER: event,
        DELIVERY_HEADER: delivery_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign_legacy(key=secret_key(secret), timestamp=timestamp, body=body),
    }


def verify_legacy(
    *,
    key: bytes,
    body: bytes,
    timestamp: str,
    signature: str,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> bool:
    """The old scheme's check, as its receivers do it (``key``: the old secret's bytes)."""
    try:
        sent = int(timestamp)
    except (TypeError, ValueError):
        return False
    if abs((time.time() if now is None else now) - sent) > tolerance:
        return False
    expected = sign_legacy(key=key, timestamp=sent, body=body)
    return any(hmac.compare_digest(expected, part.strip()) for part in signature.split(","))
