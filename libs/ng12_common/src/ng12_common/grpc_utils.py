"""gRPC plumbing shared by the retrieval server and its clients.

- `ServerObservabilityInterceptor` (grpc.aio): reads the request id from metadata into the
  shared context variable (and onto the call's trace span), logs each call, and records request
  counts and latencies.
- `request_metadata()`: the metadata every client call carries (the request id).
- `channel_options()`: keepalive plus a service config that spreads calls over every address
  of the target (round_robin) and retries idempotent reads on UNAVAILABLE, which a retry sends
  to another replica (writes are never retried by the channel).
- `grpc_target()`: RETRIEVAL_ADDR as a gRPC target; it may name several replicas.
- `NOT_FOUND_METADATA`: the trailing-metadata key a NOT_FOUND carries, naming what is missing
  (one of `NOT_FOUND_KINDS`), so clients map the code and this value, never the message text.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from asgi_correlation_id.context import correlation_id

from ng12_common.logs import REQUEST_ID_METADATA, get_logger
from ng12_common.metrics import GRPC_SERVER_LATENCY, GRPC_SERVER_REQUESTS
from ng12_common.tracing import link_request_id

log = get_logger("ng12.grpc")

RETRIEVAL_SERVICE = "ng12.retrieval.v1.Retrieval"
NOT_FOUND_METADATA = "ng12-not-found"
NOT_FOUND_KINDS = ("index_version", "recommendation", "chunk", "source_pdf")
IDEMPOTENT_READS = (
    "Search",
    "GetRecommendations",
    "GetLexicon",
    "ListIndexVersions",
    "GetActiveIndex",
    "RenderPage",
    "ListChunks",
    "GetChunk",
)


SERVICE_TOKEN_METADATA = "x-ng12-service-token"
# RPCs that change what is served: they need RETRIEVAL_SERVICE_TOKEN when retrieval has one.
INDEX_CHANGING = frozenset(
    {
        "BeginIndex",
        "UploadChunks",
        "UploadSource",
        "FinishIndex",
        "AbortIndex",
        "ActivateIndex",
        "RollbackIndex",
    }
)
CLIENT_STREAMING = frozenset({"UploadChunks", "UploadSource"})


def request_metadata(service_token: str = "") -> tuple[tuple[str, str], ...]:
    rid = correlation_id.get()
    md = ((REQUEST_ID_METADATA, rid),) if rid else ()
    return (*md, (SERVICE_TOKEN_METADATA, service_token)) if service_token else md


class ServiceTokenInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Refuses the index-changing RPCs (INDEX_CHANGING) without the service token: only the
    ingestion worker and the gateway's admin routes hold it. Reads stay open to the network
    retrieval sits on (compose: the internal network only)."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        method = str(details.method).rsplit("/", 1)[-1]  # type: ignore[attr-defined]
        if method in INDEX_CHANGING:
            given = dict(details.invocation_metadata or ()).get(SERVICE_TOKEN_METADATA, "")  # type: ignore[attr-defined]
            if not hmac.compare_digest(str(given).encode(), self._token):
                return _deny(method)
        return await continuation(details)


def _deny(method: str) -> grpc.RpcMethodHandler:
    async def abort(_: Any, context: grpc.aio.ServicerContext) -> None:
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"{method} needs the retrieval service token")

    if method in CLIENT_STREAMING:  # the request (an iterator) is never read: the same handler
        return grpc.stream_unary_rpc_method_handler(abort)
    return grpc.unary_unary_rpc_method_handler(abort)


def grpc_target(addr: str) -> str:
    """A gRPC target from an address setting: "host:port" (a DNS name resolving to every replica,
    e.g. a Kubernetes headless Service or a compose alias, or one process), a target with its own
    scheme ("dns:///...", "ipv4:..."), or several comma-separated "ip:port" addresses of replicas
    ("127.0.0.1:50051,127.0.0.1:50052" -> "ipv4:127.0.0.1:50051,127.0.0.1:50052"; "localhost"
    is read as 127.0.0.1). gRPC has no resolver for a list of host names: name one DNS name
    instead, or IP addresses."""
    addr = addr.strip()
    if "," not in addr or addr.startswith(("dns:", "ipv4:", "ipv6:", "unix:")):
        return addr
    parts = [p.strip() for p in addr.split(",") if p.strip()]
    hosts: list[tuple[str, str]] = []
    for part in parts:
        host, sep, port = part.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"address {part!r} in {addr!r} is not host:port")
        host = host.strip("[]")
        if host == "localhost":
            host = "127.0.0.1"
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(
                f"{addr!r}: several addresses must be IP addresses ({host!r} is a name); "
                "for names, use one DNS name that resolves to every replica"
            ) from None
        hosts.append((f"[{ip}]" if ip.version == 6 else str(ip), port))
    versions = {":" in h for h, _ in hosts}
    if len(versions) > 1:
        raise ValueError(f"{addr!r}: mix of IPv4 and IPv6 addresses")
    scheme = "ipv6" if versions == {True} else "ipv4"
    return f"{scheme}:" + ",".join(f"{h}:{p}" for h, p in hosts)


def channel_options(load_balancing: str = "round_robin") -> list[tuple[str, Any]]:
    """`round_robin` for reads (every replica the target resolves to, a retry goes to the next);
    `pick_first` where one process must see every call (an index build's stream of RPCs)."""
    service_config = {
        "loadBalancingConfig": [{load_balancing: {}}],
        "methodConfig": [
            {
                "name": [{"service": RETRIEVAL_SERVICE, "method": m} for m in IDEMPOTENT_READS],
                "retryPolicy": {
                    "maxAttempts": 3,
                    "initialBackoff": "0.05s",
                    "maxBackoff": "0.5s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            }
        ],
    }
    return [
        ("grpc.service_config", json.dumps(service_config)),
        ("grpc.enable_retries", 1),
        ("grpc.keepalive_time_ms", 30_000),
        # reconnect to a restarted retrieval within ~2 s (gRPC's default backoff grows to 120 s,
        # which kept callers failing, or answering degraded, long after retrieval was back)
        ("grpc.initial_reconnect_backoff_ms", 250),
        ("grpc.min_reconnect_backoff_ms", 250),
        ("grpc.max_reconnect_backoff_ms", 2_000),
        ("grpc.max_receive_message_length", 32 * 1024 * 1024),
        ("grpc.max_send_message_length", 32 * 1024 * 1024),
    ]


def _method_name(full: str) -> str:
    return full.rsplit("/", 1)[-1] if full else "unknown"


def _rid_from(metadata: Any) -> str | None:
    for key, value in metadata or ():
        if key == REQUEST_ID_METADATA:
            return str(value)
    return None


class ServerObservabilityInterceptor(grpc.aio.ServerInterceptor):
    """Request id, access log and RED metrics for every unary and client-streaming call."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        method = _method_name(handler_call_details.method)
        if method == "Check" or method == "Watch" or "reflection" in handler_call_details.method.lower():
            return handler
        rid = _rid_from(handler_call_details.invocation_metadata)

        def _finish(start: float, context: grpc.aio.ServicerContext) -> None:
            code = context.code()
            name = code.name if isinstance(code, grpc.StatusCode) else "OK"
            elapsed = time.perf_counter() - start
            GRPC_SERVER_REQUESTS.labels(method=method, code=name).inc()
            GRPC_SERVER_LATENCY.labels(method=method).observe(elapsed)
            log.info("grpc_request", method=method, code=name, duration_ms=round(elapsed * 1000, 2))

        if handler.unary_unary is not None:
            inner_uu = handler.unary_unary

            async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                token = correlation_id.set(rid)
                link_request_id(rid)
                start = time.perf_counter()
                try:
                    return await inner_uu(request, context)
                finally:
                    _finish(start, context)
                    correlation_id.reset(token)

            return grpc.unary_unary_rpc_method_handler(
                unary_unary,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_unary is not None:
            inner_su = handler.stream_unary

            async def stream_unary(
                request_iterator: AsyncIterator[Any], context: grpc.aio.ServicerContext
            ) -> Any:
                token = correlation_id.set(rid)
                link_request_id(rid)
                start = time.perf_counter()
                try:
                    return await inner_su(request_iterator, context)
                finally:
                    _finish(start, context)
                    correlation_id.reset(token)

            return grpc.stream_unary_rpc_method_handler(
                stream_unary,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler
