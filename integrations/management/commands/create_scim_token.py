from __future__ import annotations

import secrets
from typing import Any

from django.core.management.base import BaseCommand

from integrations.scim import token_hash


class Command(BaseCommand):
    help = (
        "Make a bearer token for the identity provider's SCIM client: prints the token (give "
        "it to the provider) and its SHA-256 (put it in SCIM_TOKEN_SHA256; Vetted keeps only "
        "that)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        token = f"scim_{secrets.token_urlsafe(32)}"
        self.stdout.write("Token for the identity provider (shown once):")
        self.stdout.write(token)
        self.stdout.write("Set in Vetted's environment (add it after the old one to rotate):")
        self.stdout.write(f"SCIM_TOKEN_SHA256={token_hash(token)}")
