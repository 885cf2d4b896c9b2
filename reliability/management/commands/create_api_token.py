from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from reliability.services import api_token_create


class Command(BaseCommand):
    help = "Create an API token for a user and print its key (shown once; only a hash is kept)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="api")
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help="how long the token lasts (default and most: API_TOKEN_DAYS)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"No user named {options['username']!r}.")
        if not user.is_active:
            raise CommandError(f"{user.username} is deactivated: its tokens would be refused.")
        try:
            token, key = api_token_create(user=user, name=options["name"], days=options["days"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Token {token.name} ({token.prefix}…) for {user.username}, expires "
            f"{token.expires_at:%Y-%m-%d %H:%M} UTC:"
        )
        self.stdout.write(key)
        if not user.has_perm("documents.view_document"):
            self.stderr.write(
                f"{user.username} has no role: the token is refused (403) until the user is "
                "added to Reviewers or Admins."
            )
