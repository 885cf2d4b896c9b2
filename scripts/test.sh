#!/usr/bin/env bash
# Run the test suite against a real PostgreSQL and Redis (see docs/testing.md), in parallel:
# one pytest-xdist worker per core and one more (PYTEST_WORKERS=N to choose, 0 for none), each
# with its own test database and Redis database. Extra arguments go to pytest, e.g. scripts/test.sh -k upload
#   scripts/test.sh          what CI runs: everything but the `long` tests
#   scripts/test.sh --long   everything, with the nightly sizes: the `long` tests (default
#                            timings waited out), HYPOTHESIS_PROFILE=nightly, KEY_SEQUENCES=300
#   scripts/test.sh --fast   on SQLite, the tests that need neither PostgreSQL, Redis nor Chromium
#                            and take no more than a moment each
set -euo pipefail
cd "$(dirname "$0")/.."

# One worker more than cores: about a third of the suite's worker time is spent waiting (on
# timers the fault and deadline tests wait out, on Chromium, on child processes and PostgreSQL),
# and a third worker fills it.
parallel=(-n "${PYTEST_WORKERS:-$(($(nproc) + 1))}" --dist worksteal)
[ "${PYTEST_WORKERS:-}" = "0" ] && parallel=()

if [ "${1:-}" = "--fast" ]; then
  shift
  scripts/bootstrap.sh
  unset DATABASE_URL REDIS_URL DEBUG
  mkdir -p var  # the SQLite test databases are files there (config/settings.py), one a worker
  exec .venv/bin/pytest "${parallel[@]}" \
    -m "not postgres and not redis and not browser and not slow and not long" "$@"
fi

markers=(-m "not long")
if [ "${1:-}" = "--long" ]; then
  shift
  markers=()
  export HYPOTHESIS_PROFILE=nightly KEY_SEQUENCES=300
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

exec .venv/bin/pytest "${parallel[@]}" "${markers[@]}" "$@"
