#!/usr/bin/env bash
# Load the demo N times in a row (default 10) on a fresh SQLite file named by DATABASE_URL
# (sqlite:///...), as the quick start does, and count the loads that failed and the ones whose
# output says "database is locked". Issue 34 part 4: a sqlite:/// URL gets the embedded
# default's WAL, IMMEDIATE transactions and 20 s wait, so the count of lock errors is 0.
# Usage: scripts/demo_sqlite_repeat.sh [N] [DIR]   (DIR: where the files go; a temp dir by default)
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
dir=${2:-$(mktemp -d)}
mkdir -p "$dir"
failed=0
locked=0
for i in $(seq 1 "$runs"); do
    rm -f "$dir"/demo.sqlite3*
    rm -rf "$dir/media"
    log="$dir/load-$i.log"
    start=$(date +%s)
    (
        export DATABASE_URL="sqlite:///$dir/demo.sqlite3" MEDIA_ROOT="$dir/media" REDIS_URL=""
        .venv/bin/python manage.py migrate --noinput -v 0 &&
            .venv/bin/python manage.py load_demo
    ) >"$log" 2>&1
    status=$?
    seconds=$(($(date +%s) - start))
    grep -qi "database is locked" "$log" && locked=$((locked + 1))
    [ "$status" -ne 0 ] && failed=$((failed + 1))
    echo "load $i: exit $status, ${seconds}s"
done
echo "runs=$runs failed=$failed locked=$locked logs=$dir"
[ "$failed" -eq 0 ] && [ "$locked" -eq 0 ]
