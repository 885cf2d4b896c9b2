"""Password spraying: django-axes counts wrong passwords per (username, address), and this
handler adds a second, higher limit per address across every username.

Axes compares one failure count with one limit (AXES_FAILURE_LIMIT) and takes the largest count
of its lockout parameter sets. The sets are ``[["username", "ip_address"], "ip_address"]``
(settings); this handler reports the address's count scaled so that it reaches
AXES_FAILURE_LIMIT exactly when the address reaches LOGIN_ADDRESS_FAILURE_LIMIT. A hospital's
users behind one NAT address can mistype a few passwords each without locking each other out;
one address trying a password over many usernames is stopped after
LOGIN_ADDRESS_FAILURE_LIMIT, whatever the usernames, for AXES_COOLOFF_TIME.

A successful sign-in clears only that username's failures from that address (axes would
clear the address's too, which would let a sprayer with one valid account reset the count).
"""

from __future__ import annotations

from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.db.models import QuerySet, Sum


def _failures(attempts: QuerySet[Any]) -> int:
    return int(attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0)


class AddressAwareHandler(AxesDatabaseHandler):
    def get_failures(self, request: Any, credentials: dict[str, Any] | None = None) -> int:
        pair, address = self.get_user_attempts(request, credentials)
        limit = int(settings.AXES_FAILURE_LIMIT)
        spread = _failures(address) * limit // int(settings.LOGIN_ADDRESS_FAILURE_LIMIT)
        return max(_failures(pair), spread)

    def reset_user_attempts(self, request: Any, credentials: dict[str, Any] | None = None) -> int:
        pair = self.filter_user_attempts(request, credentials)[0]
        deleted, _ = pair.delete()
        return int(deleted)
