from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings as django_settings
from django.db import connection, connections
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

ROOT = Path(__file__).resolve().parent.parent


def worker_redis_url(base: str, worker: str) -> str:
    """The Redis database of one pytest-xdist worker: ``base``'s database number minus the
    worker's index (gw0 keeps it, gw1 takes the one below, ...), so parallel workers never
    empty each other's queues. Without xdist (``worker`` empty) it is ``base`` itself."""
    if not worker:
        return base
    parts = urlsplit(base)
    number = int(parts.path.strip("/") or 0) - int(worker.removeprefix("gw"))
    if number < 0:
        raise RuntimeError(f"TEST_REDIS_URL {base}: no Redis database left for worker {worker}")
    return urlunsplit(parts._replace(path=f"/{number}"))


TEST_REDIS_URL = worker_redis_url(
    os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15"),
    os.environ.get("PYTEST_XDIST_WORKER", ""),
)
PASSWORD = "correct-horse-battery-staple"

# Hypothesis: "ci" (the default) sizes property-based and stateful tests for the 10-minute CI;
# "nightly" (HYPOTHESIS_PROFILE=nightly, set by scripts/test.sh --long) runs many more cases.
hypothesis_settings.register_profile(
    "ci",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)
hypothesis_settings.register_profile(
    "nightly",
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# Tiers: a test that needs a real Redis (a fixture below, or real workers) is marked `redis`;
# one that needs PostgreSQL (worker processes share the test database; COPY, percentiles in
# SQL) is marked `postgres`; Chromium tests are `browser`. The fast tier runs the rest on
# SQLite: `scripts/test.sh --fast` (which also leaves out the `slow` tests below).
REDIS_FIXTURES = {"redis_url", "private_redis", "workers"}
# Tests that take seconds each (real sandboxed parses of hostile files, model training, child
# processes, deadlines waited out), measured on a 2-core machine: marked `slow`, and left out of
# the fast tier with the three above.
SLOW = (
    "tests/documents/test_hostile.py::",
    "tests/documents/test_bulk_ingest.py::",
    "tests/documents/test_file_hardening.py::test_a_killed_ocr_child",
    "tests/documents/test_ingestion.py::test_a_poor_scan",
    "tests/documents/test_ingestion.py::test_a_scanned_document",
    "tests/documents/test_commands.py::test_bench_ingest",
    "tests/documents/test_commands.py::test_load_demo",
    "tests/reliability/test_trained_classifier.py::",
    "tests/reliability/test_learning.py::",
    "tests/engine/test_risk.py::test_learn_then_test_holds_its_bound",
    "tests/reliability/test_bench_learning.py::",
    "tests/reliability/test_gemini_runs.py::test_a_hung_model",
    "tests/reliability/test_llm_clients.py::test_no_try_outlives",
    "tests/review/test_quality_checks.py::test_the_audited_share",
    "tests/test_settings.py::test_check_deploy",
    "tests/test_settings.py::test_the_deployment_chooses_its_template_packs",
    # Measured in the fast tier (2026-11-29, 3 workers, load 5): 3-14 s each. Django started
    # in a child process, the demo loaded, moto's S3, malformed files parsed in the sandbox,
    # a deadline waited out, every demo document through the stub model.
    "tests/test_settings.py::test_the_openai_provider_needs",
    "tests/test_settings.py::test_the_run_deadline_must_fit",
    "tests/documents/test_commands.py::test_each_demo_account",
    "tests/documents/test_commands.py::test_the_demo_sets_its_own_draws",
    "tests/documents/test_object_storage.py::",
    "tests/documents/test_retention.py::test_the_settings_read_retention_days",
    "tests/documents/test_retention.py::test_retention_deletes_the_file_and_page_images",
    "tests/documents/test_malformed_pdfs.py::",
    "tests/engine/test_purity.py::test_each_provider_sdk",
    "tests/engine/test_risk.py::test_conformal_risk_control",
    "tests/reliability/test_benchmarks.py::test_the_stub_answers_every_demo_document",
    "tests/reliability/test_benchmarks.py::test_bench_verify_reports",
    "tests/reliability/test_evaluate_api.py::test_a_hung_model",
    "tests/reliability/test_gemini_adversarial.py::test_a_banner_quoted",
    "tests/reliability/test_gemini_adversarial.py::test_injected_text_and_reviewer_notes",
    "tests/reliability/test_openai_runs.py::test_a_clean_answer_is_accepted_in_one_call",
)


def pytest_collection_modifyitems(config: Any, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & REDIS_FIXTURES:
            item.add_marker(pytest.mark.redis)
            # Worker processes share the test database, which only PostgreSQL can give them.
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    # Overriding pytest-django's fixture drops its dependencies: ask again for the one that
    # gives each pytest-xdist worker a test database of its own (test_vetted_gw0, ...).
    # The live server answers each request on a thread of its own; persistent connections
    # would outlive those threads and keep the test database from being dropped.
    for alias in connections:
        connections.settings[alias]["CONN_MAX_AGE"] = 0
        connections[alias].settings_dict["CONN_MAX_AGE"] = 0


# -- one migrated test database for all pytest-xdist workers ------------------------------------
# Migrating a test database costs about 15 s of CPU (and minutes of wall time on a loaded
# 2-core machine). Under xdist the first worker to get here migrates a template database once
# (so the migrations are still run, and tested, once a run); every worker then clones it
# (PostgreSQL: CREATE DATABASE ... TEMPLATE; SQLite: a copy of the file) and pytest-django
# keeps the clone as it would with --reuse-db: migrate finds nothing to apply. The worker drops
# its clone at the end, the controlling process the template.


def _template_name(test_name: str) -> str:
    return f"{test_name}_tpl"


def _maintenance(settings_dict: dict[str, Any]) -> Any:
    import psycopg

    return psycopg.connect(
        dbname="postgres",
        host=settings_dict.get("HOST") or None,
        port=settings_dict.get("PORT") or None,
        user=settings_dict.get("USER") or None,
        password=settings_dict.get("PASSWORD") or None,
        autocommit=True,
    )


def _drop_database(settings_dict: dict[str, Any], name: str) -> None:
    if "sqlite" in settings_dict["ENGINE"]:
        for path in (name, f"{name}-wal", f"{name}-shm"):
            Path(path).unlink(missing_ok=True)
        return
    with _maintenance(settings_dict) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _copy_database(settings_dict: dict[str, Any], template: str, clone: str) -> None:
    _drop_database(settings_dict, clone)
    if "sqlite" in settings_dict["ENGINE"]:
        shutil.copyfile(template, clone)  # closed, so its WAL is checkpointed into it
        return
    with _maintenance(settings_dict) as admin:
        admin.execute(f'CREATE DATABASE "{clone}" TEMPLATE "{template}"')


def _clone_from_template(config: Any, worker: str) -> None:
    import fcntl
    import tempfile

    from django.conf import settings

    db = connections["default"]
    clone = str(db.settings_dict["TEST"]["NAME"])  # test_<name>_gwN (the xdist suffix)
    template = _template_name(clone.removesuffix(f"_{worker}"))
    run = config.workerinput["testrunuid"]
    shared = Path(tempfile.gettempdir())
    with open(shared / f"vetted-testdb-{run}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker migrates; the others wait, then clone
        ready = shared / f"vetted-testdb-{run}.ready"
        if not ready.exists():
            name = db.settings_dict["NAME"]
            db.settings_dict["TEST"]["NAME"] = template
            try:
                db.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
            finally:
                db.close()
                db.settings_dict["NAME"] = settings.DATABASES["default"]["NAME"] = name
                db.settings_dict["TEST"]["NAME"] = clone
            ready.touch()
        _copy_database(db.settings_dict, template, clone)


@pytest.fixture(scope="session")
def django_db_keepdb(
    request: pytest.FixtureRequest,
    django_db_modify_db_settings: None,
    django_db_blocker: Any,
) -> Iterator[bool]:
    config = request.config
    worker = getattr(config, "workerinput", {}).get("workerid")
    reuse = bool(config.getvalue("reuse_db"))
    if (
        reuse
        or not worker
        or connection.vendor not in ("postgresql", "sqlite")
        # an SQLite test database in memory has nothing to copy
        or not connection.settings_dict["TEST"].get("NAME")
        or config.getvalue("create_db")
        or config.getvalue("nomigrations")
    ):
        yield reuse
        return
    with django_db_blocker.unblock():
        _clone_from_template(config, worker)
    yield True  # pytest-django: use the clone as it is, and leave it to us to drop
    with django_db_blocker.unblock():
        connections.close_all()
        _drop_database(connection.settings_dict, str(connection.settings_dict["NAME"]))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The controlling process of an xdist run drops the template its workers cloned."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    db: dict[str, Any] = django_settings.DATABASES["default"]
    if not any(vendor in db["ENGINE"] for vendor in ("postgresql", "sqlite")):
        return
    test_name = (db.get("TEST") or {}).get("NAME") or f"test_{db['NAME']}"
    _drop_database(db, _template_name(str(test_name)))


# -- a transactional test's flush, without TRUNCATE ----------------------------------------------
# After each `transaction=True` test Django empties every table (`flush`): on PostgreSQL one
# TRUNCATE of all ~100 tables, which makes new files for each table and index and took 0.3-0.7 s
# a test, about 370 tests a run. A test leaves rows in a handful of tables: the flush below
# deletes the rows of the tables that hold any (one query finds them; Django's foreign keys
# are deferred, so the order does not matter) and keeps the content types, permissions and
# extraction templates that the flush's post_migrate would write again anyway (it still runs,
# and puts back whatever a test changed there). The tables end as a TRUNCATE leaves them.
# Only the statements change: it is the backend's `sql_flush`, on the test thread's
# connection, for the flushes Django's test case makes (no sequence reset, no cascade).
KEPT_BY_FLUSH = ("django_content_type", "auth_permission", "reliability_extractiontemplate")


def _delete_flush(ops: Any, truncate: Any) -> Any:
    def sql_flush(
        style: Any, tables: list[str], *, reset_sequences: bool = False, allow_cascade: bool = False
    ) -> list[str]:
        if reset_sequences or allow_cascade:
            return truncate(
                style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        quote = ops.quote_name
        candidates = [table for table in tables if table not in KEPT_BY_FLUSH]
        if not candidates:
            return []
        probe = " UNION ALL ".join(
            f"SELECT {index} WHERE EXISTS (SELECT 1 FROM {quote(table)})"
            for index, table in enumerate(candidates)
        )
        with ops.connection.cursor() as cursor:
            cursor.execute(probe)
            holding = [candidates[row[0]] for row in cursor.fetchall()]
        return [f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(quote(t))};" for t in holding]

    return sql_flush


@pytest.fixture(scope="session", autouse=True)
def quick_flush() -> Iterator[None]:
    ops = connections["default"].ops
    if connections["default"].vendor != "postgresql":
        yield
        return
    truncate = ops.sql_flush
    setattr(ops, "sql_flush", _delete_flush(ops, truncate))  # noqa: B010 (an instance's method)
    yield
    setattr(ops, "sql_flush", truncate)  # noqa: B010


@pytest.fixture(autouse=True)
def media_root(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.REDIS_URL = ""  # inline jobs unless a test opts into RQ
    # A deliberately weak hasher: hashing is not under test, and the default costs ~0.9 s a user.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # No blind audits unless a test asks for them: an accepted run drawn for one has its labels
    # hidden from everyone but Admins (review.visibility), which tests of other things do not
    # expect. The audit tests set the rates they test.
    settings.AUDIT_DAILY_MINIMUM = False
    settings.AUDIT_SAMPLE_RATE = 0.0
    # Page images are drawn on request unless a test asks for the render job: without Redis it
    # runs in a background thread, which would outlive the test that ingested the file.
    settings.PAGE_IMAGES_PRERENDER = False
    # No learning attempts from the recovery pass unless a test asks (they train models).
    settings.LEARNING = False
    return settings.MEDIA_ROOT


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    """Derived figures (the queue's counts) cached by one test are not seen by the next."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def fresh_llm_throttle() -> Iterator[None]:
    """The in-process circuit and rate limit start closed and empty in every test."""
    from reliability import llm_runtime

    llm_runtime._local_throttle = None
    yield
    llm_runtime._local_throttle = None


@pytest.fixture
def loopback_webhooks(settings: Any) -> None:
    """Webhook receivers in tests listen on 127.0.0.1, which Vetted refuses unless an admin
    allows the network: tests that deliver to one allow loopback, and say so."""
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]


# -- roles: one fixture per role, the same meaning everywhere ------------------------------------


@pytest.fixture
def roles() -> dict[str, Any]:
    from review.roles import ensure_roles

    return ensure_roles()


def make_user(
    django_user_model: Any, roles: dict[str, Any], username: str, role: str | None, **extra: Any
) -> Any:
    user = django_user_model.objects.create_user(
        username=username, password=PASSWORD, first_name=username.title(), **extra
    )
    if role:
        user.groups.add(roles[role])
    return user


@pytest.fixture
def reviewer(django_user_model: Any, roles: dict[str, Any]) -> Any:
    """A clinician: the Reviewers role."""
    from review.roles import REVIEWERS

    return make_user(django_user_model, roles, "rita", REVIEWERS)


@pytest.fixture
def other_reviewer(django_user_model: Any, roles: dict[str, Any]) -> Any:
    from review.roles import REVIEWERS

    return make_user(django_user_model, roles, "omar", REVIEWERS)


@pytest.fixture
def admin_user(django_user_model: Any, roles: dict[str, Any]) -> Any:
    """The Admins role with staff status (export, metrics, Django admin): not a superuser."""
    from review.roles import ADMINS

    return make_user(django_user_model, roles, "ada", ADMINS, is_staff=True)


@pytest.fixture
def superuser(django_user_model: Any) -> Any:
    return django_user_model.objects.create_superuser(username="root", password=PASSWORD)


@pytest.fixture
def outsider(django_user_model: Any, roles: dict[str, Any]) -> Any:
    """Logged in, but without a role."""
    return make_user(django_user_model, roles, "otto", None)


def ready_document(*texts: str, sha: str = "c", **fields: Any) -> Any:
    """A document already ingested: one page per text, paragraphs split on blank lines."""
    from documents.models import Document, Page

    document = Document.objects.create(
        original_filename=f"doc-{sha}.pdf",
        sha256=sha * 64,
        mime_type=Document.MIME_PDF,
        size_bytes=1,
        page_count=len(texts),
        status=Document.Status.READY,
        **fields,
    )
    for number, text in enumerate(texts, start=1):
        Page.objects.create(
            document=document, number=number, text=text, paragraphs=text.split("\n\n")
        )
    return document


@pytest.fixture
def reviewer_client(client: Any, reviewer: Any) -> Any:
    client.force_login(reviewer)
    return client


def use_redis(settings: Any, url: str) -> None:
    """Jobs go to the Redis at ``url``: REDIS_URL (RQ, not inline) and the django-rq queue."""
    settings.REDIS_URL = url
    settings.RQ_QUEUES = {"default": {"URL": url, "DEFAULT_TIMEOUT": 60}}


@pytest.fixture
def redis_url(settings: Any) -> Iterator[str]:
    """Jobs go to a real Redis (a database of its own, emptied around the test)."""
    from redis import Redis

    connection_ = Redis.from_url(TEST_REDIS_URL)
    connection_.flushdb()
    use_redis(settings, TEST_REDIS_URL)
    yield TEST_REDIS_URL
    connection_.flushdb()


def worker_env(redis_url: str) -> dict[str, str]:
    """Environment for a worker process that shares this test's database, media and Redis."""
    db = connection.settings_dict
    env = dict(os.environ)
    env.update(
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/"
        f"{db['NAME']}",
        REDIS_URL=redis_url,
        MEDIA_ROOT=str(django_settings.MEDIA_ROOT),
        PAGE_IMAGES_PRERENDER="1" if django_settings.PAGE_IMAGES_PRERENDER else "0",
        DJANGO_SETTINGS_MODULE="config.settings",
        # As in this process (media_root): no learning attempts from the recovery pass.
        LEARNING="0",
    )
    return env


def run_burst_worker(
    redis_url: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A real RQ worker in its own process that drains the queue and exits. It runs one
    recovery pass first (config.worker), so work that is due is sent and done too. Extra
    arguments go to rqworker."""
    assert connection.vendor == "postgresql", "worker tests need the PostgreSQL test database"
    return subprocess.run(
        [sys.executable, "manage.py", "rqworker", "--burst", *args, "default"],
        cwd=ROOT,
        env={**worker_env(redis_url), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


@functools.cache
def _text_pdf(pages: tuple[tuple[str, ...], ...]) -> bytes:
    from benchmarks.pdfgen import text_pdf

    return text_pdf([list(page) for page in pages])


def text_pdf_once(pages: list[list[str]]) -> bytes:
    """benchmarks.pdfgen.text_pdf(pages), drawn once a process: reportlab takes a tenth of a
    second and more a PDF, the PDF is the same every time (invariant), and bytes cannot be
    changed by the test that gets them."""
    return _text_pdf(tuple(tuple(page) for page in pages))


def pathology_field_names() -> list[str]:
    """The clinical pack's pathology fields, for scripting an LLM's extract_fields answer."""
    from engine.fields.library import find_template, load_packs

    template = find_template(load_packs(("clinical",)), "pathology")
    assert template is not None
    return [f.name for f in template.fields]


# -- a two-page pathology report and a careful classifier's answer for it ------------------------

PATHOLOGY_PAGES = [
    "SURGICAL PATHOLOGY REPORT\n\nFINAL DIAGNOSIS\n\nLeft breast, core biopsy: invasive ductal "
    "carcinoma, Nottingham grade 2.",
    "MICROSCOPIC DESCRIPTION\n\nNests of malignant epithelial cells infiltrate a desmoplastic "
    "stroma with lymphovascular invasion.",
]


@pytest.fixture
def pages() -> list[str]:
    return list(PATHOLOGY_PAGES)


@pytest.fixture
def context(pages: list[str]) -> Any:
    from engine.document import DocumentContext

    return DocumentContext(pages=pages, min_dominant_confidence=0.6)


@pytest.fixture
def clean(pages: list[str]) -> Any:
    from benchmarks.faults import clean_output

    output = clean_output(pages, "pathology")
    assert output is not None
    return output
