"""Container healthcheck CLI:
`python -m ng12_common.healthcheck grpc HOST:PORT | http URL | heartbeat FILE MAX_AGE_SECONDS`.

Exit 0 when healthy (gRPC health SERVING, HTTP 2xx, or a heartbeat file rewritten within
MAX_AGE_SECONDS: the ingestion worker's liveness, ingestion.liveness), 1 otherwise. Used by
compose healthchecks, Kubernetes probes and the local launcher, so all probe the real thing.
"""

from __future__ import annotations

import sys
import time
import urllib.request
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def check_grpc(target: str, service: str = "", timeout: float = 2.0) -> bool:
    try:
        with grpc.insecure_channel(target) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
            return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)
    except grpc.RpcError:
        return False


def check_http(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - local probe
            return 200 <= int(resp.status) < 300
    except OSError:
        return False


def check_heartbeat(path: str, max_age_seconds: float) -> bool:
    try:
        age = time.time() - Path(path).stat().st_mtime
    except OSError:
        return False
    return age <= max_age_seconds


USAGE = (
    "usage: python -m ng12_common.healthcheck grpc HOST:PORT | http URL | heartbeat FILE MAX_AGE_SECONDS\n"
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["heartbeat"] and len(args) == 3:
        try:
            max_age = float(args[2])
        except ValueError:
            sys.stderr.write(USAGE)
            return 2
        return 0 if check_heartbeat(args[1], max_age) else 1
    if len(args) != 2 or args[0] not in {"grpc", "http"}:
        sys.stderr.write(USAGE)
        return 2
    ok = check_grpc(args[1]) if args[0] == "grpc" else check_http(args[1])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
