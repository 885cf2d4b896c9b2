"""Writing a row's fields: all at once, named once."""

from __future__ import annotations

from typing import Any

from django.db import models


def save_fields(row: models.Model, **fields: Any) -> None:
    """Set ``fields`` on ``row`` and save exactly those columns (one UPDATE)."""
    for name, value in fields.items():
        setattr(row, name, value)
    row.save(update_fields=list(fields))
