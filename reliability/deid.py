"""De-identification where Vetted meets the language model: with LLM_DEIDENTIFY on, the
client a run (or any other caller) uses sends surrogates instead of PHI and maps the answers
back to the original text (engine.deid.llm). The key behind the surrogates comes from the
settings, so every worker gives the same surrogates for the same document and the response
cache keeps answering."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import TypeVar

from django.conf import settings

from engine.deid import Surrogates, statistical
from engine.deid.llm import DeidentifyingClient

C = TypeVar("C")


def deid_key() -> bytes:
    """DEID_KEY, or a key derived from SECRET_KEY (never SECRET_KEY itself)."""
    if settings.DEID_KEY:
        return str(settings.DEID_KEY).encode()
    return hmac.new(settings.SECRET_KEY.encode(), b"vetted-deid", hashlib.sha256).digest()


_configured: list[str] = []


def configure_model() -> None:
    """The statistical recogniser's model as the settings say (DEID_MODEL, a site model), set
    once per process and again when the setting changes."""
    path = str(getattr(settings, "DEID_MODEL", "") or "")
    if _configured != [path]:
        statistical.configure(path or None)
        _configured[:] = [path]


def surrogates() -> Surrogates:
    configure_model()
    return Surrogates(deid_key())


def llm_client(client: C, *, pages: Sequence[str] = ()) -> C:
    """``client`` as it is, or with LLM_DEIDENTIFY on, behind a de-identifying client that
    knows the document's ``pages`` (their PHI is replaced in every prompt, whichever part of
    the document a prompt holds). A client already wrapped is wrapped again around the same
    inner client with these pages. None stays None."""
    if client is None or not settings.LLM_DEIDENTIFY:
        return client
    inner = client.inner if isinstance(client, DeidentifyingClient) else client
    return DeidentifyingClient(inner, surrogates=surrogates(), pages=pages)  # type: ignore[return-value]
