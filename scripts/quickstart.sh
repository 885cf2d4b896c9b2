#!/usr/bin/env bash
# Set up and run Vetted on its embedded default: SQLite, jobs inline, offline classifier,
# demo accounts, documents and one of each check. Open http://127.0.0.1:8000/ when it says so.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/system-deps.sh || echo "Warning: without tesseract, scanned pages cannot be read." >&2
scripts/bootstrap.sh

export DEBUG=${DEBUG:-1}
mkdir -p var
.venv/bin/python manage.py migrate --noinput -v 0
.venv/bin/python manage.py load_demo
echo
echo "Vetted is starting at http://${HOST:-127.0.0.1}:${PORT:-8000}/ (Ctrl+C stops it)."
exec .venv/bin/python manage.py runserver "${HOST:-127.0.0.1}:${PORT:-8000}"
