from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from review.roles import ADMINS, REVIEWERS, ensure_roles

DEMO_DIR = Path(settings.BASE_DIR) / "demo" / "documents"


class Command(BaseCommand):
    help = "Create the demo reviewer and admin accounts; load the demo documents (fictional)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="reviewer")
        parser.add_argument(
            "--password", help="password for the demo reviewer (default: a new random one)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        password = options["password"] or secrets.token_urlsafe(9)
        user_model = get_user_model()
        user, _ = user_model.objects.get_or_create(
            username=options["username"],
            defaults={"first_name": "Demo", "last_name": "Reviewer"},
        )
        user.set_password(password)
        user.save()
        roles = ensure_roles()
        user.groups.add(roles[REVIEWERS])
        admin, _ = user_model.objects.get_or_create(
            username="admin", defaults={"first_name": "Demo", "last_name": "Admin"}
        )
        admin.is_staff = admin.is_superuser = True
        admin.set_password(password)
        admin.save()
        admin.groups.add(roles[ADMINS])

        call_command("ingest", str(DEMO_DIR), user=user.username, stdout=self.stdout)
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS("Demo accounts (same password)"))
        self.stdout.write(f"  username: {user.username}   (clinician: review queue)")
        self.stdout.write(f"  username: {admin.username}   (admin: export, metrics, Django admin)")
        self.stdout.write(f"  password: {password}")
