#!/usr/bin/env bash
# Install the Debian packages Vetted needs, when they are missing.
#   scripts/system-deps.sh          tesseract (OCR for scanned pages)
#   scripts/system-deps.sh --test   also Chromium (browser tests) and poppler-utils
set -euo pipefail

need=()
command -v tesseract >/dev/null 2>&1 || need+=(tesseract-ocr tesseract-ocr-eng)
if [ "${1:-}" = "--test" ]; then
  [ -x /usr/bin/chromium ] || need+=(chromium)
  command -v pdftoppm >/dev/null 2>&1 || need+=(poppler-utils)
fi
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "Missing system packages: ${need[*]}. Install them (as root) and run this again." >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "Missing system packages: ${need[*]}. Install them with your package manager." >&2
  exit 1
fi
echo "Installing system packages: ${need[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
  "${need[@]}" >/dev/null
