"""Prometheus metrics shared by all services (prefix `ng12_`, base units, bounded labels).

HTTP metrics are ONE family for every FastAPI service, told apart by a `service` label
(`ng12_http_requests_total{service="chat"}`), so one dashboard panel or alert rule covers them
all: `http_instrumentation(service)` feeds them from prometheus-fastapi-instrumentator.
`handler` is the route template (`/api/v1/chat/{session_id}`, never a raw path with ids);
`status` is grouped (`2xx`, `4xx`, `5xx`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import Counter, Gauge, Histogram
from prometheus_fastapi_instrumentator.metrics import Info

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

#: Buckets for HTTP requests as a client sees them: the SLO thresholds (0.25 s, 1 s, 2.5 s) are
#: bucket bounds, so burn-rate rules read them exactly.
HTTP_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

HTTP_REQUESTS = Counter(
    "ng12_http_requests_total",
    "HTTP requests handled, by service, route template, method and status class.",
    ["service", "handler", "method", "status"],
)
HTTP_LATENCY = Histogram(
    "ng12_http_request_duration_seconds",
    "HTTP request handling time, by service, route template and method.",
    ["service", "handler", "method"],
    buckets=HTTP_LATENCY_BUCKETS,
)
HTTP_IN_PROGRESS = Gauge(
    "ng12_http_requests_in_progress",
    "HTTP requests being handled now, by service.",
    ["service"],
    multiprocess_mode="livesum",
)


def http_instrumentation(service: str) -> Callable[[Info], None]:
    """The instrumentator callback that records one finished request of `service`."""

    def record(info: Info) -> None:
        handler = info.modified_handler
        HTTP_REQUESTS.labels(service, handler, info.method, info.modified_status).inc()
        HTTP_LATENCY.labels(service, handler, info.method).observe(info.modified_duration)

    return record


REDIS_MEMORY_USED = Gauge(
    "ng12_redis_memory_used_bytes",
    "Memory used by a Redis the service depends on (INFO memory), by role: broker | chat.",
    ["redis"],
    multiprocess_mode="max",
)
REDIS_MEMORY_MAX = Gauge(
    "ng12_redis_memory_max_bytes",
    "maxmemory of that Redis (0: no cap). With noeviction, writes fail once used reaches it.",
    ["redis"],
    multiprocess_mode="max",
)


def record_redis_memory(role: str, info: Mapping[str, Any]) -> None:
    """Record `INFO memory` of the Redis in `role` (the Redis-memory alert reads the ratio)."""
    used, cap = info.get("used_memory"), info.get("maxmemory")
    if isinstance(used, int | float):
        REDIS_MEMORY_USED.labels(role).set(used)
    if isinstance(cap, int | float):
        REDIS_MEMORY_MAX.labels(role).set(cap)
