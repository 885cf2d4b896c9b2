#!/usr/bin/env bash
# Create .venv and install Vetted with its test and lint extras. Re-running is quick:
# pip runs again only when pyproject.toml, setup.py or the reader's C loop has changed.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "Vetted needs Python 3.11 or newer (set PYTHON=/path/to/python3.11)." >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv

stamp=.venv/.vetted-installed
# The install also builds the PDFium reader's C loop: a change to it needs a new build too.
want=$(cat pyproject.toml setup.py documents/_pdfchars.c | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "Installing Python packages into .venv ..."
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[dev]"
  echo "$want" > "$stamp"
fi
if ! .venv/bin/python -c 'import sys; from documents.pdftext import compiled_reader; sys.exit(not compiled_reader())' 2>/dev/null; then
  echo "Note: the PDF reader's C loop was not built (no C compiler?); PDF pages are read by" \
    "the slower Python code. Install gcc and run scripts/bootstrap.sh again." >&2
  rm -f "$stamp"
fi
