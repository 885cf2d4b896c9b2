"""Typed readers for settings taken from environment variables.

Each helper fails loudly (ImproperlyConfigured) on a value it cannot parse, so a typo in a
deployment is caught at start-up rather than silently replaced by a default.
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no).")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a whole number.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number.") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_json(name: str, default: Any) -> Any:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not valid JSON ({exc}).") from None


# SQLite as Vetted uses it, from DATABASE_URL=sqlite:///... as for the built-in default: jobs
# run inline, with page images drawn beside the runs, so a transaction takes the write lock
# when it begins (IMMEDIATE), waiting up to 20 s for it, instead of failing "database is
# locked" when a read would turn into a write; WAL lets pages be read while a job writes.
SQLITE_OPTIONS: dict[str, Any] = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
}


def sqlite_database(path: Any) -> dict[str, Any]:
    """The DATABASES entry of a SQLite file at ``path``, with SQLITE_OPTIONS."""
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": path, "OPTIONS": dict(SQLITE_OPTIONS)}


def database_from_url(url: str, *, base_dir: str) -> dict[str, Any]:
    """Translate a DATABASE_URL into a Django DATABASES entry.

    Supports ``postgres://`` / ``postgresql://`` (psycopg 3) and ``sqlite:///path``.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in {"postgres", "postgresql", "pgsql"}:
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured(
                "DATABASE_URL names no database (postgres://user@host/NAME)."
            )
        options = dict(parse_qsl(parts.query))
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": env_int("CONN_MAX_AGE", 60, minimum=0),
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": options,
        }
    if scheme == "sqlite":
        path = unquote(parts.path)
        if path.startswith("//") or path.startswith("/"):  # sqlite:////abs/path
            path = path[1:]
        if not path:
            raise ImproperlyConfigured("DATABASE_URL sqlite:/// names no file.")
        if not os.path.isabs(path):
            path = os.path.join(base_dir, path)
        return sqlite_database(path)
    raise ImproperlyConfigured(
        f"DATABASE_URL scheme {scheme!r} is not supported (use postgres:// or sqlite:///)."
    )


# Query parameters a STORAGE_URL may carry, and the S3Storage option each sets.
_S3_PARAMETERS = {
    "endpoint_url": "endpoint_url",
    "region": "region_name",
    "addressing_style": "addressing_style",
}
_ADDRESSING_STYLES = {"auto", "path", "virtual"}


def storage_from_url(url: str) -> dict[str, Any]:
    """The STORAGES["default"] entry for a STORAGE_URL: empty means this machine's disk
    (MEDIA_ROOT); ``s3://BUCKET/PREFIX?endpoint_url=URL&region=REGION&addressing_style=path``
    an S3-compatible bucket through django-storages (AWS, MinIO, Ceph, ...). Credentials come
    from the standard AWS sources (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, an
    instance role), never from the URL. Objects are written private (no ACL: the bucket's own,
    which must not be public) and are only ever read through Vetted's views, behind login: no
    public or signed URLs are handed out."""
    if not url:
        # Files are written readable by the server's user only (FILE_UPLOAD_*_PERMISSIONS).
        return {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    parts = urlsplit(url)
    if parts.scheme.lower() != "s3":
        raise ImproperlyConfigured(
            f"STORAGE_URL scheme {parts.scheme!r} is not supported: use "
            "s3://bucket/prefix?endpoint_url=...&region=..., or leave it empty for local disk."
        )
    if parts.username or parts.password:
        raise ImproperlyConfigured(
            "STORAGE_URL must not carry credentials: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY (or use a profile or an instance role)."
        )
    bucket = parts.hostname or ""
    if not bucket:
        raise ImproperlyConfigured("STORAGE_URL names no bucket (s3://BUCKET/prefix).")
    prefix = unquote(parts.path).strip("/")
    if ".." in prefix.split("/"):
        raise ImproperlyConfigured(f"STORAGE_URL prefix {prefix!r} may not contain '..'.")
    options: dict[str, Any] = {
        "bucket_name": bucket,
        "location": prefix,
        # Private objects: no ACL is sent, so the bucket's (private) default applies.
        "default_acl": None,
        # Vetted never hands out a file's URL; if anything asked, it would be signed.
        "querystring_auth": True,
        # The names Vetted writes are its own (a document's id, a page's number and size):
        # writing one again replaces it, as on disk.
        "file_overwrite": True,
    }
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in _S3_PARAMETERS:
            known = ", ".join(sorted(_S3_PARAMETERS))
            raise ImproperlyConfigured(f"STORAGE_URL parameter {key!r} is not known (use {known}).")
        if not value:
            raise ImproperlyConfigured(f"STORAGE_URL parameter {key!r} is empty.")
        options[_S3_PARAMETERS[key]] = value
    endpoint = options.get("endpoint_url")
    if endpoint is not None and urlsplit(endpoint).scheme not in {"http", "https"}:
        raise ImproperlyConfigured(
            f"STORAGE_URL endpoint_url {endpoint!r} must be an http:// or https:// URL."
        )
    style = options.get("addressing_style")
    if style is not None and style not in _ADDRESSING_STYLES:
        raise ImproperlyConfigured(
            f"STORAGE_URL addressing_style {style!r} must be one of "
            f"{', '.join(sorted(_ADDRESSING_STYLES))}."
        )
    return {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options}


# The key the settings fall back to without SECRET_KEY: public (it is in the source), so fit
# for development and tests only.
DEFAULT_SECRET_KEY = "django-insecure-development-only-key-never-use-in-production"
SECRET_KEY_MIN_LENGTH = 32


def secret_key_refusal(key: str, *, debug: bool, fallbacks: list[str] | None = None) -> str | None:
    """Why the application must not serve with ``key`` (a message), or None. With DEBUG on
    (the quick start) anything goes; in production the key signs sessions, keys the surrogates
    of de-identification and signs stored models, so the public default, an empty key or a
    short one would let anyone forge them."""
    if debug:
        return None
    if not key.strip() or key == DEFAULT_SECRET_KEY:
        return (
            "SECRET_KEY is not set (or is the public development default) and DEBUG is off: "
            "set SECRET_KEY to a long random string (python -c 'import secrets; "
            "print(secrets.token_urlsafe(50))'). Sessions, de-identification surrogates and "
            "stored models are keyed with it."
        )
    if len(key) < SECRET_KEY_MIN_LENGTH:
        return f"SECRET_KEY is shorter than {SECRET_KEY_MIN_LENGTH} characters."
    if DEFAULT_SECRET_KEY in (fallbacks or []):
        return "SECRET_KEY_FALLBACKS lists the public development key: remove it."
    return None


def require_production_key() -> None:
    """Refuse to start (ImproperlyConfigured) when ``secret_key_refusal`` objects: called by
    the WSGI entry point (gunicorn, and runserver through WSGI_APPLICATION) once settings are
    loaded. Management commands (migrate, benchmarks, the tests) are not serving and still run
    with the default key."""
    from django.conf import settings

    refusal = secret_key_refusal(
        settings.SECRET_KEY, debug=settings.DEBUG, fallbacks=list(settings.SECRET_KEY_FALLBACKS)
    )
    if refusal is not None:
        raise ImproperlyConfigured(refusal)
