#!/usr/bin/env bash
# Regenerate the gRPC stubs from proto/ into the shared library (pinned grpcio-tools).
# Usage: scripts/gen_proto.sh [OUT_DIR]   (default: libs/ng12_common/src)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${1:-libs/ng12_common/src}
mkdir -p "$OUT"
"$PY" -m grpc_tools.protoc -I proto \
  --python_out="$OUT" --pyi_out="$OUT" --grpc_python_out="$OUT" \
  proto/ng12/retrieval/v1/retrieval.proto
