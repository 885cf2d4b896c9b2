#!/usr/bin/env bash
# Run the whole test suite against a real PostgreSQL and Redis (see docs/testing.md).
# Extra arguments go to pytest, e.g. scripts/test.sh -k upload -x
#   scripts/test.sh --fast   on SQLite, the tests that need neither PostgreSQL, Redis nor Chromium
#                            and take no more than a moment each
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--fast" ]; then
  shift
  scripts/bootstrap.sh
  unset DATABASE_URL REDIS_URL DEBUG
  mkdir -p var  # the SQLite test database is a file there (config/settings.py)
  exec .venv/bin/pytest -m "not postgres and not redis and not browser and not slow" "$@"
fi

scripts/system-deps.sh --test
scripts/bootstrap.sh

export DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/vetted}
export TEST_REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/15}
unset REDIS_URL DEBUG

.venv/bin/python - <<'PY'
import os, sys
import psycopg, redis
try:
    psycopg.connect(os.environ["DATABASE_URL"], dbname="postgres", connect_timeout=5).close()
except Exception as exc:
    sys.exit(f"PostgreSQL is not reachable ({exc}). Start it, or set TEST_DATABASE_URL.")
try:
    redis.Redis.from_url(os.environ["TEST_REDIS_URL"], socket_timeout=5).ping()
except Exception as exc:
    sys.exit(f"Redis is not reachable ({exc}). Start it, or set TEST_REDIS_URL.")
PY

exec .venv/bin/pytest "$@"
