"""Bulk inserts of many large rows through PostgreSQL's COPY.

On PostgreSQL, Django's ``bulk_create`` sends each column as one array (``INSERT ... SELECT *
FROM UNNEST(%s::jsonb[], ...)``), and psycopg writes a text array in Python, escaping every
quote of every JSON value in it. For the pages of a 50-page document (their word boxes are
about 240 KB of JSON) that took about twice as long as the rest of the insert. COPY sends
the same rows through psycopg's C writer, with the same adapters and the same constraints.
Other databases (SQLite in the embedded default) get ``bulk_create``.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connections, models, router


def bulk_insert(objs: Sequence[models.Model]) -> None:
    """Insert ``objs`` (new instances of one model) in one statement. Unlike
    ``bulk_create`` on PostgreSQL, an auto-incremented primary key is not set on them."""
    if not objs:
        return
    model = type(objs[0])
    connection = connections[router.db_for_write(model)]
    if connection.vendor != "postgresql":
        model._default_manager.bulk_create(objs)
        return
    meta = model._meta
    fields = [
        field
        for field in meta.concrete_fields
        if not (field.primary_key and getattr(field, "db_returning", False))
    ]
    values = [[field.pre_save(obj, True) for field in fields] for obj in objs]
    if any(hasattr(value, "resolve_expression") for row in values for value in row):
        # An expression (a database default, say) has no place in COPY's rows.
        model._default_manager.bulk_create(objs)
        return
    rows = [
        [
            field.get_db_prep_save(value, connection)
            for field, value in zip(fields, row, strict=True)
        ]
        for row in values
    ]
    columns = ", ".join(connection.ops.quote_name(str(field.column)) for field in fields)
    table = connection.ops.quote_name(meta.db_table)
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
    ):
        for row in rows:
            copy.write_row(row)
