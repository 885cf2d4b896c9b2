"""Settings from the environment: parsing, loud failures, and a clean deployment check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import database_from_url, env_bool, env_int

ROOT = Path(__file__).resolve().parent.parent


def test_a_postgres_url_becomes_a_psycopg_database():
    db = database_from_url("postgres://vetted:p%40ss@db.internal:5433/vetted", base_dir="/srv")
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["NAME"], db["USER"], db["PASSWORD"]) == ("vetted", "vetted", "p@ss")
    assert (db["HOST"], db["PORT"]) == ("db.internal", "5433")


def test_a_sqlite_url_is_relative_to_the_project_unless_absolute():
    assert database_from_url("sqlite:///var/x.db", base_dir="/srv")["NAME"] == "/srv/var/x.db"
    assert database_from_url("sqlite:////tmp/x.db", base_dir="/srv")["NAME"] == "/tmp/x.db"


def test_an_unknown_database_scheme_fails_loudly():
    with pytest.raises(ImproperlyConfigured, match="mysql"):
        database_from_url("mysql://root@localhost/db", base_dir="/srv")


def test_bad_booleans_and_numbers_fail_loudly(monkeypatch):
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="DEBUG='maybe' is not a boolean"):
        env_bool("DEBUG")
    monkeypatch.setenv("UPLOAD_MAX_MB", "lots")
    with pytest.raises(ImproperlyConfigured, match="is not a whole number"):
        env_int("UPLOAD_MAX_MB", 25)


def run_manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "HTTPS"}}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_check_deploy_is_clean_with_the_production_variables():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        env={
            "SECRET_KEY": "p6^kq2!v9w#x8z$m1n@b4c7d0e3f6g9h2j5k8l1m4n7p0q3r6s9t",
            "ALLOWED_HOSTS": "vetted.example.org",
            "HTTPS": "1",
        },
    )
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_flags_the_development_defaults():
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env={})
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_the_deployment_chooses_its_template_packs_and_a_bad_one_stops_start_up():
    both = run_manage("check", env={"EXTRACTION_PACKS": "clinical,us_tax"})
    assert both.returncode == 0, both.stderr
    bad = run_manage("check", env={"EXTRACTION_PACKS": "clinical,astrology"})
    assert bad.returncode != 0
    assert "No template pack 'astrology' (available: clinical, us_tax)." in bad.stderr


def test_the_run_deadline_must_fit_between_a_call_timeout_and_the_job_timeout():
    too_long = run_manage("check", env={"RUN_DEADLINE_SECONDS": "950"})
    assert too_long.returncode != 0
    assert "RUN_DEADLINE_SECONDS=950 must be above LLM_TIMEOUT_SECONDS=60" in too_long.stderr
    too_short = run_manage("check", env={"RUN_DEADLINE_SECONDS": "30"})
    assert too_short.returncode != 0 and "RUN_DEADLINE_SECONDS=30" in too_short.stderr
    prices = run_manage("check", env={"LLM_PRICES": '{"my-model": {"input": 1}}'})
    assert "LLM_PRICES['my-model'] needs 'input' and 'output' prices." in prices.stderr
    budget = run_manage(
        "check", env={"LLM_DAILY_BUDGET_USD": "20", "GEMINI_MODEL": "unknown-model"}
    )
    assert "LLM_DAILY_BUDGET_USD needs a price for unknown-model" in budget.stderr


def test_the_openai_provider_needs_a_model_and_a_price_under_a_budget():
    no_model = run_manage("check", env={"LLM_PROVIDER": "openai", "OPENAI_MODEL": ""})
    assert "LLM_PROVIDER=openai needs OPENAI_MODEL" in no_model.stderr
    unknown = run_manage("check", env={"LLM_PROVIDER": "ollama"})
    assert "LLM_PROVIDER must be gemini or openai." in unknown.stderr
    fmt = run_manage("check", env={"OPENAI_RESPONSE_FORMAT": "text"})
    assert "OPENAI_RESPONSE_FORMAT must be json_schema or json_object." in fmt.stderr
    local = {"LLM_PROVIDER": "openai", "OPENAI_MODEL": "qwen2.5:7b", "LLM_DAILY_BUDGET_USD": "5"}
    unpriced = run_manage("check", env=local)
    assert "LLM_DAILY_BUDGET_USD needs a price for qwen2.5:7b" in unpriced.stderr
    free = run_manage(
        "check", env={**local, "LLM_PRICES": '{"qwen2.5:7b": {"input": 0, "output": 0}}'}
    )
    assert free.returncode == 0, free.stderr


def test_a_job_heartbeat_must_beat_at_least_twice_before_it_goes_stale():
    stale = run_manage("check", env={"JOB_HEARTBEAT_SECONDS": "30", "JOB_STALE_SECONDS": "45"})
    assert stale.returncode != 0
    assert "JOB_STALE_SECONDS=45 must be at least twice JOB_HEARTBEAT_SECONDS=30" in stale.stderr


@pytest.mark.slow
def test_a_sqlite_url_gets_the_embedded_defaults_wal_immediate_and_wait(tmp_path):
    """DATABASE_URL=sqlite:///... behaves as the built-in default: WAL, a transaction that
    takes the write lock when it begins, and a 20 s wait for it (issue 34, part 4). Checked
    on the settings a process started with that URL really uses."""
    import os
    import subprocess
    import sys

    from config.env import SQLITE_OPTIONS

    db = database_from_url(f"sqlite:///{tmp_path}/url.db", base_dir="/srv")
    assert db["OPTIONS"] == SQLITE_OPTIONS
    assert (db["OPTIONS"]["transaction_mode"], db["OPTIONS"]["timeout"]) == ("IMMEDIATE", 20)
    script = """
import sqlite3, django
django.setup()
from django.db import connection, transaction
from django.conf import settings
assert settings.DATABASES["default"]["OPTIONS"]["timeout"] == 20
with connection.cursor() as cursor:
    cursor.execute("PRAGMA journal_mode")
    print(cursor.fetchone()[0])
with transaction.atomic():
    connection.cursor().execute("SELECT 1")  # a read only, inside the transaction
    other = sqlite3.connect(settings.DATABASES["default"]["NAME"], timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")
        print("free")
    except sqlite3.OperationalError as error:
        print(error)
"""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path}/url.db",
    }
    env.pop("REDIS_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    # WAL, and the transaction held the write lock from its start: another writer waits.
    assert done.stdout.split("\n")[:2] == ["wal", "database is locked"]
