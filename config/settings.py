"""Vetted settings, driven by environment variables (see README, "Configuration")."""

from __future__ import annotations

import ipaddress
import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from config.env import (
    DEFAULT_SECRET_KEY,
    database_from_url,
    env_bool,
    env_float,
    env_int,
    env_json,
    env_list,
    env_str,
    sqlite_database,
    storage_from_url,
)

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)

# A missing key falls back to a public development key; with DEBUG off the application refuses
# to serve with it (config.env.require_production_key, from config.wsgi). Rotation: put the old
# key in SECRET_KEY_FALLBACKS (comma-separated): sessions, and the stored models signed with a
# key derived from it (reliability.training), keep working; models are re-signed when loaded.
SECRET_KEY = env_str("SECRET_KEY") or DEFAULT_SECRET_KEY
SECRET_KEY_FALLBACKS = env_list("SECRET_KEY_FALLBACKS", [])

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "django_rq",
    "core",
    "mozilla_django_oidc",
    "django_scim",
    "documents",
    "reliability",
    "review",
    "integrations",
    "benchmarks",
    "axes",
    # Last: its ready() connects the apps to each other (config.wiring).
    "config",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files from the app server itself (gunicorn); media is never served publicly.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Under /api/: every error in JSON with a code, and paths served with or without their
    # trailing slash (a redirect would drop a POST's body).
    "api.middleware.ApiJsonMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Patient data: every page needs a login unless a view opts out explicitly.
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Hardening: no browser or proxy keeps a copy of a page or file (patient data);
    # a Content-Security-Policy that allows only this site's own scripts; login lockout.
    "core.middleware.NoStoreMiddleware",
    "csp.middleware.CSPMiddleware",
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

_database_url = env_str("DATABASE_URL")
DATABASES = {
    "default": database_from_url(_database_url, base_dir=str(BASE_DIR))
    if _database_url
    else {
        # The embedded default: SQLite with the options a sqlite:/// URL gets too
        # (config.env.SQLITE_OPTIONS: IMMEDIATE transactions, a 20 s wait, WAL).
        **sqlite_database(BASE_DIR / "var" / "db.sqlite3"),
        # Tests on SQLite use a file too: an in-memory database shared between threads answers
        # a second writer "table is locked" at once instead of waiting as a file does.
        "TEST": {"NAME": BASE_DIR / "var" / "test.sqlite3"},
    }
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3") and "TEST" not in DATABASES["default"]:
    # The same for a sqlite:/// URL: its test database is a file beside it.
    DATABASES["default"]["TEST"] = {"NAME": f"{DATABASES['default']['NAME']}.test"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "documents:list"
LOGOUT_REDIRECT_URL = "login"

# Single sign-on (OpenID Connect, mozilla-django-oidc): on when OIDC_RP_CLIENT_ID is set.
# Endpoints left empty are read from the issuer's discovery document on first use.
OIDC_RP_CLIENT_ID = env_str("OIDC_RP_CLIENT_ID")
OIDC_ENABLED = bool(OIDC_RP_CLIENT_ID)
OIDC_RP_CLIENT_SECRET = env_str("OIDC_RP_CLIENT_SECRET")
OIDC_OP_ISSUER = env_str("OIDC_OP_ISSUER").rstrip("/")
OIDC_OP_AUTHORIZATION_ENDPOINT = env_str("OIDC_OP_AUTHORIZATION_ENDPOINT")
OIDC_OP_TOKEN_ENDPOINT = env_str("OIDC_OP_TOKEN_ENDPOINT")
OIDC_OP_USER_ENDPOINT = env_str("OIDC_OP_USER_ENDPOINT")
OIDC_OP_JWKS_ENDPOINT = env_str("OIDC_OP_JWKS_ENDPOINT")
OIDC_RP_SIGN_ALGO = env_str("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = env_str("OIDC_RP_SCOPES", "openid email profile")
OIDC_USE_PKCE = env_bool("OIDC_USE_PKCE", True)
OIDC_VERIFY_SSL = env_bool("OIDC_VERIFY_SSL", True)
OIDC_TIMEOUT = env_float("OIDC_TIMEOUT_SECONDS", 10.0)
# Which claim holds the user's groups (a dotted path reaches nested claims, e.g.
# realm_access.roles), and which of those groups make a Reviewer or an Admin.
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM", "groups")
OIDC_REVIEWERS_GROUPS = env_list("OIDC_REVIEWERS_GROUPS", ["Reviewers"])
OIDC_ADMINS_GROUPS = env_list("OIDC_ADMINS_GROUPS", ["Admins"])
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "single sign-on")
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
LOGIN_REDIRECT_URL_FAILURE = "login"
# SCIM 2.0 provisioning (/scim/v2/, django-scim2): the identity provider creates, updates and
# deactivates accounts and sets group memberships (the groups above decide the roles). Its
# bearer token is not stored, only its SHA-256 (manage.py create_scim_token prints both);
# several, comma-separated, during a rotation. Unset: every SCIM request is refused.
SCIM_TOKEN_SHA256 = [h.lower() for h in env_list("SCIM_TOKEN_SHA256", [])]
for _digest in SCIM_TOKEN_SHA256:
    if len(_digest) != 64 or any(c not in "0123456789abcdef" for c in _digest):
        raise ImproperlyConfigured("SCIM_TOKEN_SHA256 holds SHA-256 digests (64 hex digits).")
# The ID-token claim that equals a provisioned account's SCIM externalId: how an account SCIM
# made meets its first single sign-on (Okta: sub; Entra ID: oid, with externalId mapped to
# objectId).
SCIM_SSO_CLAIM = env_str("SCIM_SSO_CLAIM", "sub")
# Local (password) accounts; 0 leaves single sign-on as the only way in.
LOCAL_LOGIN = env_bool("LOCAL_LOGIN", True)
if not LOCAL_LOGIN and not OIDC_ENABLED:
    raise ImproperlyConfigured("LOCAL_LOGIN=0 needs single sign-on: set OIDC_RP_CLIENT_ID.")
if OIDC_ENABLED and not (OIDC_OP_ISSUER or OIDC_OP_AUTHORIZATION_ENDPOINT):
    raise ImproperlyConfigured(
        "OIDC_RP_CLIENT_ID is set: set OIDC_OP_ISSUER (or the OIDC_OP_*_ENDPOINT variables)."
    )
# The SSO backend also answers permission checks; without local login, passwords never work.
AUTHENTICATION_BACKENDS = [
    *(["integrations.sso.VettedOIDCBackend"] if OIDC_ENABLED else []),
    # django-axes first: a locked-out username and address is refused before the password is
    # even checked (see "Hardening" below).
    *(["axes.backends.AxesStandaloneBackend"] if LOCAL_LOGIN else []),
    *(["django.contrib.auth.backends.ModelBackend"] if LOCAL_LOGIN else []),
]

LANGUAGE_CODE = "en-gb"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT") or BASE_DIR / "staticfiles")
# Serve straight from static/ when collectstatic has not run (development, tests).
WHITENOISE_USE_FINDERS = True

# Where this Vetted is reached; exported links (FHIR attachment URLs) start with it.
SITE_URL = env_str("SITE_URL", "http://localhost:8000").rstrip("/")
# django-scim2: the SCIM views over integrations' SCIM tables and rules (integrations.scim).
SCIM_SERVICE_PROVIDER = {
    "SCHEME": urlsplit(SITE_URL).scheme,
    "NETLOC": urlsplit(SITE_URL).netloc,
    "AUTHENTICATION_SCHEMES": [
        {
            "type": "oauthbearertoken",
            "name": "Bearer token",
            "description": "The token whose SHA-256 is in SCIM_TOKEN_SHA256.",
            "primary": True,
        }
    ],
    "USER_MODEL_GETTER": "integrations.scim_filters.scim_user_model",
    "USER_ADAPTER": "integrations.scim.ScimUserAdapter",
    "USER_FILTER_PARSER": "integrations.scim_filters.ScimUserFilter",
    "GROUP_MODEL": "integrations.models.ScimGroup",
    "GROUP_ADAPTER": "integrations.scim.ScimGroupAdapter",
    "GROUP_FILTER_PARSER": "integrations.scim_filters.ScimGroupFilter",
    "AUTH_CHECK_MIDDLEWARE": "integrations.scim.ScimBearerAuth",
    "SERVICE_PROVIDER_CONFIG_MODEL": "integrations.scim.ServiceProviderConfig",
    "WWW_AUTHENTICATE_HEADER": 'Bearer realm="scim"',
}

MEDIA_URL = "media/"  # never served publicly: documents are patient data
MEDIA_ROOT = Path(env_str("MEDIA_ROOT") or BASE_DIR / "var" / "media")
# Where uploads and page images are kept: this machine's disk under MEDIA_ROOT (empty), or an
# S3-compatible bucket, s3://BUCKET/PREFIX?endpoint_url=...&region=... (config.env
# storage_from_url; credentials from the standard AWS variables), which web processes and
# workers on any number of machines share, with nothing else but the database and Redis.
STORAGE_URL = env_str("STORAGE_URL").strip()
STORAGES = {
    "default": storage_from_url(STORAGE_URL),
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Documents are deleted this many days after their upload (their file, pages, page images,
# runs and review records), their ground truth kept de-identified and the deletion in the
# audit log (documents.retention); 0 keeps them for ever.
RETENTION_DAYS = env_int("RETENTION_DAYS", 0, minimum=0)

# Served over HTTPS (behind a TLS-terminating proxy): turn on every transport protection.
HTTPS = env_bool("HTTPS", False)
SECURE_SSL_REDIRECT = HTTPS
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
if env_bool("BEHIND_PROXY", HTTPS):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 8 * 3600, minimum=60)
X_FRAME_OPTIONS = "DENY"

# Jobs: with REDIS_URL, work is queued for RQ workers; without it, jobs run inline.
REDIS_URL = env_str("REDIS_URL")
JOB_TIMEOUT_SECONDS = env_int("JOB_TIMEOUT_SECONDS", 900, minimum=10)
RQ_QUEUES = {
    "default": {
        "URL": REDIS_URL or "redis://127.0.0.1:6379/0",
        "DEFAULT_TIMEOUT": JOB_TIMEOUT_SECONDS,
    },
}
JOB_RESULT_TTL = env_int("JOB_RESULT_TTL", 3600, minimum=0)
# The cache holds derived figures only (the review queue's counts); with Redis it is shared by
# every web process, so a decision made in one is seen by all at the next refresh.
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "vetted",
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
# Queue counts are recomputed after any packet is created, decided or reopened, and at least
# this often (for changes made outside Vetted's services, such as a database restore).
QUEUE_COUNTS_MAX_AGE_SECONDS = env_int("QUEUE_COUNTS_MAX_AGE_SECONDS", 60, minimum=1)
# The metrics page's aggregates over every run and review are shared for this long.
METRICS_MAX_AGE_SECONDS = env_int("METRICS_MAX_AGE_SECONDS", 60, minimum=0)
# Workers import the job code and the language model's SDK once, before forking a process per
# job, and run the recovery pass (config.worker). Jobs are queued through django-rq's queue above.
RQ = {"WORKER_CLASS": "config.worker.Worker"}

GEMINI_API_KEY = env_str("GEMINI_API_KEY")

# Upload and ingestion limits.
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_MB", 25, minimum=1) * 1024 * 1024
UPLOAD_MAX_PAGES = env_int("UPLOAD_MAX_PAGES", 300, minimum=1)
# Characters a page of a text upload may hold (form feeds part pages): a 20 MB file on one line
# is refused at upload rather than read, classified and grounded as one page.
UPLOAD_MAX_PAGE_CHARS = env_int("UPLOAD_MAX_PAGE_CHARS", 200_000, minimum=1000)
UPLOAD_MAX_FILES = env_int("UPLOAD_MAX_FILES", 50, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# Pages whose text layer has fewer characters than this are sent to OCR.
OCR_MIN_TEXT_CHARS = env_int("OCR_MIN_TEXT_CHARS", 20, minimum=0)
OCR_DPI = env_int("OCR_DPI", 300, minimum=72)
OCR_LANGUAGE = env_str("OCR_LANGUAGE", "eng")
# Mean tesseract word confidence (0..1) under which a document needs a clearer scan.
OCR_MIN_CONFIDENCE = env_float("OCR_MIN_CONFIDENCE", 0.60)
if not 0.0 <= OCR_MIN_CONFIDENCE <= 1.0:
    raise ImproperlyConfigured("OCR_MIN_CONFIDENCE must be between 0 and 1.")

# Sandbox limits: every parse of an uploaded file (the upload check, ingestion with OCR, page
# images) runs in a child process (documents.sandbox). MEMORY_MB is the address space a parse
# may add to the process it is forked from; SECONDS is both its CPU time and its wall clock.
SANDBOX_CHECK_MEMORY_MB = env_int("SANDBOX_CHECK_MEMORY_MB", 256, minimum=16)
SANDBOX_CHECK_SECONDS = env_int("SANDBOX_CHECK_SECONDS", 10, minimum=1)
SANDBOX_INGEST_MEMORY_MB = env_int("SANDBOX_INGEST_MEMORY_MB", 1024, minimum=64)
# Below the job timeout, so the sandbox (not RQ) stops a slow file and says why.
SANDBOX_INGEST_SECONDS = env_int(
    "SANDBOX_INGEST_SECONDS", max(10, JOB_TIMEOUT_SECONDS - 60), minimum=5
)
# An ingestion that reads no page for this long is stopped (a parser loop on one page).
SANDBOX_PAGE_SECONDS = env_int("SANDBOX_PAGE_SECONDS", 60, minimum=5)
SANDBOX_RENDER_MEMORY_MB = env_int("SANDBOX_RENDER_MEMORY_MB", 512, minimum=32)
SANDBOX_RENDER_SECONDS = env_int("SANDBOX_RENDER_SECONDS", 20, minimum=1)
# Pages larger than this on a side are refused (3,600 pt = 50 inches; A0 is 47).
PAGE_MAX_POINTS = env_int("PAGE_MAX_POINTS", 3600, minimum=72)
# Page images (review pages and OCR) are rendered at a lower resolution past this many pixels.
PAGE_IMAGE_MAX_PIXELS = env_int("PAGE_IMAGE_MAX_PIXELS", 40_000_000, minimum=100_000)
# Uploads and page images are readable by the server's user only.
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "filters": {"client_errors_on_one_line": {"()": "core.logging.ClientErrorsOnOneLine"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "pdfminer": {"level": "ERROR"},  # one warning per glyph otherwise
        # An ordinary 403 is one line, not a traceback (core.logging).
        "django.request": {"filters": ["client_errors_on_one_line"]},
    },
}

# Tesseract uses OpenMP; one thread per page keeps N workers from oversubscribing the cores.
os.environ.setdefault("OMP_THREAD_LIMIT", "1")

# Reliability engine.
RELIABILITY_PRESET = env_str("RELIABILITY_PRESET", "clinical")
AUTO_CLASSIFY = env_bool("AUTO_CLASSIFY", True)  # start a run when ingestion finishes
GEMINI_MODEL = env_str("GEMINI_MODEL", "gemini-2.5-flash")
GOOGLE_GENAI_USE_VERTEXAI = env_bool("GOOGLE_GENAI_USE_VERTEXAI", False)
GOOGLE_CLOUD_PROJECT = env_str("GOOGLE_CLOUD_PROJECT")
GOOGLE_CLOUD_LOCATION = env_str("GOOGLE_CLOUD_LOCATION", "us-central1")
GEMINI_BASE_URL = env_str("GEMINI_BASE_URL")  # a proxy or, in tests, a local stub server
# The language model's provider: Gemini, or any OpenAI-compatible Chat Completions API (vLLM,
# Ollama, llama.cpp's server, Azure OpenAI: docs/providers.md). Only the chosen one is used.
LLM_PROVIDER = env_str("LLM_PROVIDER", "gemini").strip().lower()
if LLM_PROVIDER not in ("gemini", "openai"):
    raise ImproperlyConfigured("LLM_PROVIDER must be gemini or openai.")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL").strip()  # e.g. http://vllm:8000/v1; empty: OpenAI
OPENAI_MODEL = env_str("OPENAI_MODEL").strip()
OPENAI_API_KEY = env_str("OPENAI_API_KEY")  # empty for a local server that asks for none
# json_schema (the server constrains its answer to the schema) or json_object (the schema in
# the system message, for servers without json_schema).
OPENAI_RESPONSE_FORMAT = env_str("OPENAI_RESPONSE_FORMAT", "json_schema").strip()
if OPENAI_RESPONSE_FORMAT not in ("json_schema", "json_object"):
    raise ImproperlyConfigured("OPENAI_RESPONSE_FORMAT must be json_schema or json_object.")
# The request field carrying the output limit: max_completion_tokens (the current API, needed
# by OpenAI's reasoning models) or max_tokens (servers that know only that one, such as Ollama).
OPENAI_TOKEN_LIMIT_FIELD = env_str("OPENAI_TOKEN_LIMIT_FIELD", "max_completion_tokens").strip()
if OPENAI_TOKEN_LIMIT_FIELD not in ("max_completion_tokens", "max_tokens"):
    raise ImproperlyConfigured(
        "OPENAI_TOKEN_LIMIT_FIELD must be max_completion_tokens or max_tokens."
    )
if LLM_PROVIDER == "openai" and not OPENAI_MODEL:
    raise ImproperlyConfigured("LLM_PROVIDER=openai needs OPENAI_MODEL (the served model's name).")
# The model runs are classified with (the configured provider's), for the checks below.
_LLM_MODEL = OPENAI_MODEL if LLM_PROVIDER == "openai" else GEMINI_MODEL
LLM_TIMEOUT_SECONDS = env_float("LLM_TIMEOUT_SECONDS", 60.0)
LLM_MAX_TRANSPORT_RETRIES = env_int("LLM_MAX_TRANSPORT_RETRIES", 4, minimum=0)
LLM_BACKOFF_BASE_SECONDS = env_float("LLM_BACKOFF_BASE_SECONDS", 1.0)
LLM_MAX_CONCURRENCY = env_int("LLM_MAX_CONCURRENCY", 4, minimum=1)
# A wait (Retry-After, an open circuit, backoff) longer than this frees the worker: the run
# waits in the database and is rescheduled instead of holding the worker.
LLM_MAX_INLINE_WAIT_SECONDS = env_float("LLM_MAX_INLINE_WAIT_SECONDS", 5.0)
# Requests per minute for all workers together (shared through Redis); 0 = no limit.
LLM_REQUESTS_PER_MINUTE = env_int("LLM_REQUESTS_PER_MINUTE", 0, minimum=0)
# Thinking tokens per call (gemini-2.5): 0 = off, -1 = the model decides, unset = 1024.
LLM_THINKING_BUDGET = env_int("LLM_THINKING_BUDGET", 1024, minimum=-1)
# US dollars per million tokens (thinking is billed as output). LLM_PRICES (JSON) adds or
# overrides models, e.g. {"gemini-2.5-flash": {"input": 0.30, "output": 2.50}}.
LLM_PRICES: dict[str, dict[str, float]] = {
    "gemini-2.5-flash": {"input": 0.30, "output": 2.50},
    "gemini-2.5-flash-lite": {"input": 0.10, "output": 0.40},
    "gemini-2.5-pro": {"input": 1.25, "output": 10.00},
    **env_json("LLM_PRICES", {}),
}
for _model, _price in LLM_PRICES.items():
    if not isinstance(_price, dict) or not {"input", "output"} <= set(_price):
        raise ImproperlyConfigured(f"LLM_PRICES[{_model!r}] needs 'input' and 'output' prices.")
# Beyond this spend per UTC day, runs wait for the next day (0 = no cap).
LLM_DAILY_BUDGET_USD = env_float("LLM_DAILY_BUDGET_USD", 0.0)
if LLM_DAILY_BUDGET_USD > 0 and _LLM_MODEL not in LLM_PRICES:
    # A model on the hospital's own server may be priced at 0: {"input": 0, "output": 0}.
    raise ImproperlyConfigured(
        f"LLM_DAILY_BUDGET_USD needs a price for {_LLM_MODEL}: add it to LLM_PRICES."
    )
# Answers are cached this many days (the same text asked the same way costs nothing); 0 = off.
LLM_CACHE_DAYS = env_int("LLM_CACHE_DAYS", 30, minimum=0)
if RETENTION_DAYS:
    # A cached answer quotes the pages it was given: it is kept no longer than the documents.
    LLM_CACHE_DAYS = min(LLM_CACHE_DAYS, RETENTION_DAYS)
# A run waiting for the language model longer than this fails (the API is down for good).
LLM_WAIT_MAX_HOURS = env_float("LLM_WAIT_MAX_HOURS", 24.0)
# De-identification (engine.deid, docs/deidentification.md). LLM_DEIDENTIFY: every prompt to
# the language model carries surrogates instead of PHI, and answers are mapped back to the
# original text. DEID_KEY keys the surrogates (the same value always gets the same one);
# without it, a key derived from SECRET_KEY. Changing either changes every surrogate.
LLM_DEIDENTIFY = env_bool("LLM_DEIDENTIFY", False)
DEID_KEY = env_str("DEID_KEY")
# A site model for the statistical PHI recogniser (manage.py bench_deid --train); without it,
# the model trained from Vetted's generated notes.
DEID_MODEL = env_str("DEID_MODEL")
# The independent gate: the second classifier's agreement stands in for the same-model LLM
# checks when its own confidence is at least this (0 = always, above 1 = never).
GATE_CONFIRM_CONFIDENCE = env_float("GATE_CONFIRM_CONFIDENCE", 0.5)
# A run whose workers were lost this many times (killed mid-run) is failed for good.
RUN_MAX_JOB_TRIES = env_int("RUN_MAX_JOB_TRIES", 3, minimum=1)
# Every language-model try and wait of one execution fits in this, which fits in the job
# timeout: past it the run waits and resumes (answers so far come from the cache).
RUN_DEADLINE_SECONDS = env_int("RUN_DEADLINE_SECONDS", int(0.8 * JOB_TIMEOUT_SECONDS), minimum=10)
if not LLM_TIMEOUT_SECONDS < RUN_DEADLINE_SECONDS < JOB_TIMEOUT_SECONDS:
    raise ImproperlyConfigured(
        f"RUN_DEADLINE_SECONDS={RUN_DEADLINE_SECONDS} must be above LLM_TIMEOUT_SECONDS="
        f"{LLM_TIMEOUT_SECONDS:g} and below JOB_TIMEOUT_SECONDS={JOB_TIMEOUT_SECONDS}."
    )
# POST /api/v1/evaluate/ answers within this many seconds: below gunicorn's 120 s worker timeout
# (Dockerfile), so a hung model ends in per-document errors, not a killed request.
EVALUATE_DEADLINE_SECONDS = env_int("EVALUATE_DEADLINE_SECONDS", 90, minimum=10)

# Background jobs (core.jobs), one lease for ingestions, runs and webhook deliveries. A job
# renews its row's heartbeat every JOB_HEARTBEAT_SECONDS while it works; a row still "running"
# whose heartbeat is older than JOB_STALE_SECONDS lost its worker. Every worker runs the
# recovery pass every RECOVERY_INTERVAL_SECONDS (one worker at a time): work whose worker died
# is queued again (failed for good after its maximum attempts: INGEST_MAX_ATTEMPTS,
# RUN_MAX_JOB_TRIES, WEBHOOK_MAX_ATTEMPTS), work that could not be queued (Redis down) is
# queued, work queued QUEUE_LOST_SECONDS ago whose job Redis lost is sent again, and waiting
# work (runs waiting for the language model, webhook retries) is sent when it is due. A dead
# worker's job is thus queued again within about JOB_STALE_SECONDS + RECOVERY_INTERVAL_SECONDS.
JOB_HEARTBEAT_SECONDS = env_int("JOB_HEARTBEAT_SECONDS", 10, minimum=1)
JOB_STALE_SECONDS = env_int("JOB_STALE_SECONDS", 45, minimum=2)
if JOB_STALE_SECONDS < 2 * JOB_HEARTBEAT_SECONDS:
    raise ImproperlyConfigured(
        f"JOB_STALE_SECONDS={JOB_STALE_SECONDS} must be at least twice JOB_HEARTBEAT_SECONDS="
        f"{JOB_HEARTBEAT_SECONDS}: one late heartbeat must not pass for a dead worker."
    )
RECOVERY_INTERVAL_SECONDS = env_int("RECOVERY_INTERVAL_SECONDS", 10, minimum=1)
QUEUE_LOST_SECONDS = env_int("QUEUE_LOST_SECONDS", 60, minimum=1)
INGEST_MAX_ATTEMPTS = env_int("INGEST_MAX_ATTEMPTS", 3, minimum=1)
# Without Redis, a PDF of more pages than this is read in the background (never in the upload
# request: OCR of every page can take minutes); shorter ones are read before the answer.
INGEST_INLINE_MAX_PAGES = env_int("INGEST_INLINE_MAX_PAGES", 20, minimum=0)

# Webhooks: deliveries are jobs, retried with exponential backoff (capped), then failed after
# WEBHOOK_MAX_ATTEMPTS tries.
WEBHOOK_TIMEOUT_SECONDS = env_float("WEBHOOK_TIMEOUT_SECONDS", 10.0)
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 10, minimum=1)
WEBHOOK_BACKOFF_SECONDS = env_float("WEBHOOK_BACKOFF_SECONDS", 30.0)
WEBHOOK_MAX_BACKOFF_SECONDS = env_float("WEBHOOK_MAX_BACKOFF_SECONDS", 3600.0)
# Webhooks go to public addresses only; these networks (CIDR, comma-separated) are allowed too,
# e.g. a hospital's internal receivers: WEBHOOK_ALLOWED_NETWORKS=10.20.0.0/16,fd12:3456::/48.
WEBHOOK_ALLOWED_NETWORKS = env_list("WEBHOOK_ALLOWED_NETWORKS", [])
for _network in WEBHOOK_ALLOWED_NETWORKS:
    try:
        ipaddress.ip_network(_network, strict=True)
    except ValueError as _exc:
        raise ImproperlyConfigured(f"WEBHOOK_ALLOWED_NETWORKS: {_exc}.") from None
# The headers of Vetted's first signature scheme (Vetted-Signature ...) beside the Standard
# Webhooks ones, for receivers that have not moved yet; removed in the next release.
WEBHOOK_LEGACY_HEADERS = env_bool("WEBHOOK_LEGACY_HEADERS", True)
# Certificates (a PEM file) trusted for https receivers instead of the usual public ones: for a
# receiver whose certificate a hospital's own authority signed.
WEBHOOK_CA_BUNDLE = env_str("WEBHOOK_CA_BUNDLE")

# Clinician review.
REVIEW_LOCK_MINUTES = env_int("REVIEW_LOCK_MINUTES", 15, minimum=1)
REVIEW_PAGE_SIZE = env_int("REVIEW_PAGE_SIZE", 25, minimum=5)
PAGE_IMAGE_DPI = env_int("PAGE_IMAGE_DPI", 150, minimum=50)
# Page images of a PDF are drawn by a job after its ingestion (both sizes, every page), so the
# review pages find them ready; a page not drawn yet is drawn by the first request that asks.
# Without Redis the job runs in a background thread of the process that ingested the file.
PAGE_IMAGES_PRERENDER = env_bool("PAGE_IMAGES_PRERENDER", True)
# A request for a page image that another process is drawing waits this long for it, then is
# answered with a "still being drawn" placeholder: a slow page holds one web worker, not all.
PAGE_IMAGE_WAIT_SECONDS = env_float("PAGE_IMAGE_WAIT_SECONDS", 3.0)
if PAGE_IMAGE_WAIT_SECONDS < 0:
    raise ImproperlyConfigured("PAGE_IMAGE_WAIT_SECONDS must not be negative.")

# Audit sampling: a share of auto-accepted runs goes to a blind audit queue (engine.quality).
# AUDIT_SAMPLE_RATES overrides the default share by "type", "type/band" or "*/band" (bands are
# named by AUDIT_CONFIDENCE_BANDS' edges, e.g. "<0.80"), as JSON: {"pathology": 0.1}.
AUDIT_SAMPLE_RATE = env_float("AUDIT_SAMPLE_RATE", 0.05)
AUDIT_SAMPLE_RATES: dict[str, float] = env_json("AUDIT_SAMPLE_RATES", {})
AUDIT_CONFIDENCE_BANDS = [float(x) for x in env_list("AUDIT_CONFIDENCE_BANDS", ["0.8", "0.95"])]
AUDIT_DAILY_MINIMUM = env_bool("AUDIT_DAILY_MINIMUM", True)  # at least one per type per day
AUDIT_SAMPLE_SALT = env_str("AUDIT_SAMPLE_SALT", "vetted-audit")
# The metrics page warns when the upper bound of a type's 95% Wilson interval of the audited
# accepted-error rate passes this.
AUDIT_ERROR_LIMIT = env_float("AUDIT_ERROR_LIMIT", 0.05)
for _key, _rate in [("default", AUDIT_SAMPLE_RATE), *AUDIT_SAMPLE_RATES.items()]:
    if not 0 <= float(_rate) <= 1:
        raise ImproperlyConfigured(f"Audit sample rate {_key}={_rate} must be between 0 and 1.")
# Second review: a different reviewer decides again, blind; disagreements are adjudicated.
SECOND_REVIEW_ON_CORRECTION = env_bool("SECOND_REVIEW_ON_CORRECTION", True)
SECOND_REVIEW_ON_BLOCKER = env_bool("SECOND_REVIEW_ON_BLOCKER", False)
SECOND_REVIEW_RATE = env_float("SECOND_REVIEW_RATE", 0.0)  # a random share of other decisions
# Disagreements are adjudicated by Admins; with this on, also by any reviewer who made neither
# decision.
ADJUDICATION_BY_REVIEWERS = env_bool("ADJUDICATION_BY_REVIEWERS", False)

# Field extraction (evaluator-optimizer loop) and the JSON API.
EXTRACTION_PACKS = env_list("EXTRACTION_PACKS", ["clinical"])
AUTO_EXTRACT = env_bool("AUTO_EXTRACT", True)
EXTRACTION_QUALITY_THRESHOLD = env_float("EXTRACTION_QUALITY_THRESHOLD", 0.95)
EXTRACTION_MAX_ITERATIONS = env_int("EXTRACTION_MAX_ITERATIONS", 3, minimum=1)
EXTRACTION_MIN_IMPROVEMENT = env_float("EXTRACTION_MIN_IMPROVEMENT", 0.05)
EXTRACTION_TIMEOUT_SECONDS = env_float("EXTRACTION_TIMEOUT_SECONDS", 30.0)
# Loop monitoring on the metrics page: the window it covers and its alert thresholds (a
# warning shows when a figure crosses its threshold).
LOOP_MONITORING_DAYS = env_int("LOOP_MONITORING_DAYS", 30, minimum=0)  # 0: all time
LOOP_ALERT_MAX_MEAN_ITERATIONS = env_float("LOOP_ALERT_MAX_MEAN_ITERATIONS", 2.5)
LOOP_ALERT_MIN_MEAN_SCORE = env_float("LOOP_ALERT_MIN_MEAN_SCORE", 0.85)
LOOP_ALERT_MIN_THRESHOLD_MET_RATE = env_float("LOOP_ALERT_MIN_THRESHOLD_MET_RATE", 0.5)
LOOP_ALERT_MAX_P95_SECONDS = env_float("LOOP_ALERT_MAX_P95_SECONDS", 10.0)
LOOP_ALERT_MIN_IMPROVEMENT = env_float("LOOP_ALERT_MIN_IMPROVEMENT", 0.02)
# Per-preset overrides of the loop defaults (a request's own options override these).
EXTRACTION_PRESETS: dict[str, dict[str, float | int]] = {
    "real-time": {"max_iterations": 1},
    "batch": {},
    "clinical": {"quality_threshold": 0.95},
}

# Hardening.
# Content-Security-Policy (django-csp): scripts, styles and images only from this site (htmx
# and the page scripts are vendored in static/; no template has an inline script).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
# Login throttling (django-axes): after AXES_FAILURE_LIMIT wrong passwords for one username
# from one address, that pair is refused (even with the right password) for AXES_COOLOFF_MINUTES.
AXES_ENABLED = env_bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15, minimum=1))
# Password spraying: one address is also refused after LOGIN_ADDRESS_FAILURE_LIMIT wrong
# passwords across all usernames (core.login_throttle, which needs these parameter sets).
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_HANDLER = "core.login_throttle.AddressAwareHandler"
LOGIN_ADDRESS_FAILURE_LIMIT = env_int("LOGIN_ADDRESS_FAILURE_LIMIT", 20, minimum=1)
AXES_RESET_ON_SUCCESS = True
# Behind the TLS proxy, the client's address is the last one it adds to X-Forwarded-For.
AXES_IPWARE_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0, minimum=0) or None
AXES_IPWARE_META_PRECEDENCE_ORDER = (
    ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"] if AXES_IPWARE_PROXY_COUNT else ["REMOTE_ADDR"]
)
# Requests per token in each RATE_LIMIT_WINDOW_SECONDS (core.ratelimit; 0: no limit): the JSON
# API per API token, SCIM per provider token. Over it: 429 with Retry-After.
RATE_LIMIT_WINDOW_SECONDS = env_int("RATE_LIMIT_WINDOW_SECONDS", 60, minimum=1)
API_RATE_LIMIT = env_int("API_RATE_LIMIT", 600, minimum=0)
SCIM_RATE_LIMIT = env_int("SCIM_RATE_LIMIT", 600, minimum=0)
# API tokens expire this many days after they are made (manage.py create_api_token --days
# may choose fewer). There is no "never": a token forgotten in a script must stop by itself.
API_TOKEN_DAYS = env_int("API_TOKEN_DAYS", 90, minimum=1)
# JSON API request bodies: at most this many bytes and this deep (nested objects and lists).
API_JSON_MAX_BYTES = env_int("API_JSON_MAX_BYTES", 1024 * 1024, minimum=1024)
API_JSON_MAX_DEPTH = env_int("API_JSON_MAX_DEPTH", 20, minimum=2)
# The classifier trained on ground truth. When a trained model is active it is
# the offline primary (the rules become its gate) and the gate beside an LLM; off = the rules.
TRAINED_CLASSIFIER = env_bool("TRAINED_CLASSIFIER", True)
# With Gemini, how many of the most similar SME-corrected documents go into the prompt (0 = none).
FEW_SHOT_EXAMPLES = env_int("FEW_SHOT_EXAMPLES", 3, minimum=0)

# -- The learning loop (reliability.learning; docs/learning.md) --------------------------------
# A learning attempt (train a candidate on ground truth, the regression gate on held-back
# clinician labels, thresholds certified again, the novelty index rebuilt) runs every
# LEARNING_INTERVAL_HOURS and after every LEARNING_EVERY_LABELS new clinician labels, from the
# workers' recovery pass (inline: manage.py learn from cron). LEARNING=0 turns it off.
LEARNING = env_bool("LEARNING", True)
LEARNING_INTERVAL_HOURS = env_float("LEARNING_INTERVAL_HOURS", 24.0)
LEARNING_EVERY_LABELS = env_int("LEARNING_EVERY_LABELS", 25, minimum=1)
LEARNING_FOLDS = env_int("LEARNING_FOLDS", 5, minimum=2)  # cross-fitted calibration folds
# At most this many documents in the cross-fit (clinician labels first): its fold models are
# what an attempt spends most of its time on, and it must fit in JOB_TIMEOUT_SECONDS.
LEARNING_CALIBRATION_MAX = env_int("LEARNING_CALIBRATION_MAX", 4000, minimum=100)
LEARNING_MAX_JOB_TRIES = env_int("LEARNING_MAX_JOB_TRIES", 2, minimum=1)
# The exemplar memory (docs/learning.md): clinicians' labels count for the next look-alike of
# the same source at once; a source's memory may raise a score after this many of its
# unanimous votes were confirmed by clinicians since the last contradiction.
LEARNING_MEMORY = env_bool("LEARNING_MEMORY", True)
LEARNING_MEMORY_CELL_MIN = env_int("LEARNING_MEMORY_CELL_MIN", 10, minimum=1)
# When a document has no look-alikes, its source's own recent labels vote: the type its last
# LEARNING_MEMORY_SOURCE_WINDOW clinician labels (at least LEARNING_MEMORY_SOURCE_MIN) all
# carry, under the same trust record (0: no source vote).
LEARNING_MEMORY_SOURCE_MIN = env_int("LEARNING_MEMORY_SOURCE_MIN", 3, minimum=1)
LEARNING_MEMORY_SOURCE_WINDOW = env_int("LEARNING_MEMORY_SOURCE_WINDOW", 20, minimum=0)
# Learned waivers (reliability.waivers): an escalation code clinicians overruled on a source
# this many times, and never upheld, stops escalating there while the source's memory is
# trusted and thresholds are certified; never a safety code or a BLOCKER.
LEARNING_WAIVERS = env_bool("LEARNING_WAIVERS", True)
LEARNING_WAIVER_AFTER = env_int("LEARNING_WAIVER_AFTER", 10, minimum=1)
# Risk-controlled acceptance (engine.risk; docs/learning.md): per type (and source, with enough
# data) the least confidence accepted so that errors stay at most TARGET_ACCEPTED_ERROR:
# RISK_METHOD "crc" (conformal risk control: in expectation; certifies from 199 labelled
# documents) or "ltt" (Learn then Test: with confidence 1 - RISK_DELTA; from 460 accepted
# documents, all right, at alpha 0.005 and delta 0.1). Until the loop has certified thresholds
# once, the presets' fixed thresholds stand; after that a type without a certificate escalates.
RISK_CONTROL = env_bool("RISK_CONTROL", True)
TARGET_ACCEPTED_ERROR = env_float("TARGET_ACCEPTED_ERROR", 0.005)
RISK_DELTA = env_float("RISK_DELTA", 0.1)
RISK_METHOD = env_str("RISK_METHOD", "crc")
# With crc, below 199 labels (1/alpha - 1): certify the preset strictest threshold (0.96) when
# none of at least 74 labelled documents is accepted and wrong there, which bounds the expected
# accepted error by alpha if documents are i.i.d. (crc itself assumes only exchangeability).
RISK_SMALL_SAMPLE = env_bool("RISK_SMALL_SAMPLE", False)
if RISK_METHOD not in ("ltt", "crc"):
    raise ImproperlyConfigured(f"RISK_METHOD={RISK_METHOD!r}: use ltt or crc.")
if not 0 < TARGET_ACCEPTED_ERROR < 1 or not 0 < RISK_DELTA < 1:
    raise ImproperlyConfigured("TARGET_ACCEPTED_ERROR and RISK_DELTA must be between 0 and 1.")
# Novelty (engine.novelty): a document whose conformal p-value against the training documents
# is at most NOVELTY_ALPHA is escalated as "a kind of document not seen before"; the metrics
# page alerts when the novelty rate of the last NOVELTY_WINDOW_DAYS passes NOVELTY_ALERT_RATE.
NOVELTY = env_bool("NOVELTY", True)
NOVELTY_ALPHA = env_float("NOVELTY_ALPHA", 0.01)
NOVELTY_REFERENCE_MAX = env_int("NOVELTY_REFERENCE_MAX", 2000, minimum=10)
NOVELTY_ALERT_RATE = env_float("NOVELTY_ALERT_RATE", 0.1)
NOVELTY_WINDOW_DAYS = env_int("NOVELTY_WINDOW_DAYS", 7, minimum=1)
# Label errors (cleanlab): likely-wrong clinician labels go to a blind re-check (a second
# review with rule label_issue), at most LABEL_ISSUES_PER_ATTEMPT per learning attempt.
LABEL_ISSUES = env_bool("LABEL_ISSUES", True)
LABEL_ISSUES_PER_ATTEMPT = env_int("LABEL_ISSUES_PER_ATTEMPT", 10, minimum=0)
# The review queue within a severity: "arrival" (oldest first) or "learning" (the documents
# whose labels teach the model most first: uncertainty, disagreement, novelty).
QUEUE_ORDER = env_str("QUEUE_ORDER", "arrival")
if QUEUE_ORDER not in ("arrival", "learning"):
    raise ImproperlyConfigured(f"QUEUE_ORDER={QUEUE_ORDER!r}: use arrival or learning.")
