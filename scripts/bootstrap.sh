#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment in .venv with pinned dependencies.
# CPU torch is installed FIRST so that nothing can pull a CUDA build from the registry.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
VENV=${VENV:-.venv}
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)'; then
  echo "Python 3.11 is required (found: $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install --upgrade "pip==24.3.1"
"${PIP[@]}" install "torch==2.13.0"
"${PIP[@]}" install -c constraints.txt \
  -e libs/ng12_common \
  -e "services/retrieval[vertex]" -e services/ingestion -e "services/assessment[llm]" -e "services/chat[llm]" \
  -e services/gateway \
  -r requirements-dev.txt
"$VENV/bin/python" -c 'import torch; assert torch.__version__.startswith("2.13.0"), torch.__version__'
echo "environment ready in $VENV"
