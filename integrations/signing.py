"""Webhook signatures: HMAC-SHA256 over the timestamp and the body, as Stripe and GitHub do.

The signed string is ``<Vetted-Timestamp>.<raw request body>`` (the decimal Unix time, a full
stop, then the body bytes exactly as received). ``Vetted-Signature`` carries
``v1=<lowercase hex digest>``. A receiver recomputes the digest with its copy of the endpoint's
secret, compares in constant time and rejects a timestamp older than a few minutes (replay).
``verify`` below is the reference implementation; it needs only the standard library.
"""

from __future__ import annotations

import hashlib
import hmac
import time

EVENT_HEADER = "Vetted-Event"
DELIVERY_HEADER = "Vetted-Delivery"
TIMESTAMP_HEADER = "Vetted-Timestamp"
SIGNATURE_HEADER = "Vetted-Signature"
SCHEME = "v1"
DEFAULT_TOLERANCE_SECONDS = 300


def sign(*, secret: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(
        secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256
    ).hexdigest()
    return f"{SCHEME}={digest}"


def verify(
    *,
    secret: str,
    body: bytes,
    timestamp: str,
    signature: str,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> bool:
    """True when ``signature`` (the Vetted-Signature header) signs this body at ``timestamp``
    (the Vetted-Timestamp header) with ``secret``, and the timestamp is recent."""
    try:
        sent = int(timestamp)
    except (TypeError, ValueError):
        return False
    if abs((time.time() if now is None else now) - sent) > tolerance:
        return False
    expected = sign(secret=secret, timestamp=sent, body=body)
    # Several signatures may be sent comma-separated while a secret is being rotated.
    return any(hmac.compare_digest(expected, part.strip()) for part in signature.split(","))
