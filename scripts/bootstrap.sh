#!/usr/bin/env bash
# Create .venv and install Vetted with its test and lint extras. Re-running is quick:
# pip runs again only when pyproject.toml has changed.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "Vetted needs Python 3.11 or newer (set PYTHON=/path/to/python3.11)." >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv

stamp=.venv/.vetted-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "Installing Python packages into .venv ..."
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[dev]"
  echo "$want" > "$stamp"
fi
