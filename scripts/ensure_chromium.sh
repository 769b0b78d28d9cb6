#!/usr/bin/env bash
# The browser tests drive the UI in a real Chromium (Debian's package; Playwright connects to it,
# no browser download). Installs it when it is missing and this user can (root + apt-get);
# otherwise says how. CHROMIUM may name another Chromium/Chrome binary.
set -euo pipefail
if [ -n "${CHROMIUM:-}" ] && [ -x "${CHROMIUM}" ]; then exit 0; fi
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "[chromium] installing Debian's chromium for the browser tests"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
  exit 0
fi
echo "[chromium] the browser tests need Chromium: install it (e.g. 'sudo apt-get install chromium')" >&2
echo "           or set CHROMIUM to a Chromium/Chrome binary" >&2
exit 1
