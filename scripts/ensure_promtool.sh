#!/usr/bin/env bash
# The alert-rule tests run `promtool check rules` and `promtool test rules` (Debian's `prometheus`
# package ships promtool). Installs it when it is missing and this user can (root + apt-get);
# otherwise says how. PROMTOOL may name another promtool binary.
set -euo pipefail
if [ -n "${PROMTOOL:-}" ] && [ -x "${PROMTOOL}" ]; then exit 0; fi
if command -v promtool >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "[promtool] installing Debian's prometheus package (promtool) for the alert-rule tests"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends prometheus >/dev/null; }
  exit 0
fi
echo "[promtool] the alert-rule tests need promtool: install it (e.g. 'sudo apt-get install prometheus')" >&2
echo "           or set PROMTOOL to a promtool binary" >&2
exit 1
