"""Prometheus metrics shared by all services (prefix `ng12_`, base units, bounded labels)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

#: Buckets for in-process request handling: sub-millisecond to a few seconds.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

GRPC_SERVER_REQUESTS = Counter(
    "ng12_grpc_server_requests_total",
    "gRPC requests handled, by method and status code.",
    ["method", "code"],
)
GRPC_SERVER_LATENCY = Histogram(
    "ng12_grpc_server_request_duration_seconds",
    "gRPC request handling time, by method.",
    ["method"],
    buckets=LATENCY_BUCKETS,
)
GRPC_CLIENT_REQUESTS = Counter(
    "ng12_grpc_client_requests_total",
    "gRPC calls made to retrieval, by method and status code.",
    ["method", "code"],
)
GRPC_CLIENT_LATENCY = Histogram(
    "ng12_grpc_client_request_duration_seconds",
    "gRPC call time as seen by the caller, by method.",
    ["method"],
    buckets=LATENCY_BUCKETS,
)
