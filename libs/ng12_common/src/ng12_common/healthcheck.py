"""Container healthcheck CLI: `python -m ng12_common.healthcheck grpc HOST:PORT | http URL`.

Exit 0 when healthy (gRPC health SERVING, or HTTP 2xx), 1 otherwise. Used by compose
healthchecks and by the local launcher, so both probe the real health endpoints.
"""

from __future__ import annotations

import sys
import urllib.request

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


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in {"grpc", "http"}:
        sys.stderr.write("usage: python -m ng12_common.healthcheck grpc HOST:PORT | http URL\n")
        return 2
    ok = check_grpc(args[1]) if args[0] == "grpc" else check_http(args[1])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
