"""OpenTelemetry traces, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set.

One trace follows a request gateway -> assessment or chat (HTTP) -> retrieval (gRPC), and an
ingestion job gateway -> Celery task -> retrieval; each process exports its spans over OTLP/gRPC
to the collector (`deploy/otel-collector.yaml` in compose). Only the maintained
instrumentations are used (FastAPI, aiohttp client, gRPC, Celery, Redis): nothing here creates
spans by hand. The standard OTEL_* variables apply (OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER,
OTEL_BSP_SCHEDULE_DELAY, OTEL_EXPORTER_OTLP_HEADERS, ...).

Without the endpoint (tests, offline runs, `make run` by default) nothing is installed: no
tracer provider, no patched library, no exporter thread. `trace_id` goes into each log line while a
span is current (ng12_common.logs); the request id is put on the service's span as the attribute
`ng12.request_id`, so a log search by either finds the other.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from opentelemetry import trace

from ng12_common.logs import get_logger

REQUEST_ID_ATTRIBUTE = "ng12.request_id"
_EXCLUDED_URLS = "livez,readyz,metrics"

log = get_logger("ng12.tracing")
_configured: dict[str, bool] = {}


def tracing_enabled() -> bool:
    """True when an OTLP endpoint is configured and the SDK is not disabled."""
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )
    disabled = os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
    return bool(endpoint and endpoint.strip()) and not disabled


def configure_tracing(service: str) -> bool:
    """Install the tracer provider (OTLP/gRPC exporter, batched) and instrument every library
    this process has among gRPC (client and server, sync and asyncio), Redis, the aiohttp client
    and Celery. Idempotent; returns whether tracing is on. Call it before clients and servers are
    built (the gRPC and aiohttp instrumentations patch their constructors)."""
    if not tracing_enabled():
        return False
    if _configured.get("provider"):
        return True
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME") or service
    provider = TracerProvider(resource=Resource.create({"service.name": name, "service.namespace": "ng12"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _configured["provider"] = True
    instrumented = [lib for lib, install in _INSTRUMENTATIONS.items() if _try(lib, install)]
    log.info("tracing_enabled", service_name=name, instrumented=instrumented)
    return True


def instrument_fastapi(app: Any) -> None:
    """Server spans for a FastAPI app (probes and /metrics left out); a no-op when tracing is off."""
    if not tracing_enabled():
        return
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(app, excluded_urls=_EXCLUDED_URLS)


def link_request_id(request_id: str | None) -> None:
    """Put the request id on the current span (the service's server or task span)."""
    if not request_id:
        return
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute(REQUEST_ID_ATTRIBUTE, request_id)


def current_trace_id() -> str | None:
    """The current trace id as 32 hex digits, or None outside a sampled span."""
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


def shutdown_tracing() -> None:
    """Flush the spans still batched (worker and server shutdown); harmless when tracing is off."""
    provider = trace.get_tracer_provider()
    shutdown = getattr(provider, "shutdown", None)
    if callable(shutdown):
        shutdown()


def _try(lib: str, install: Callable[[], None]) -> bool:
    try:
        install()
    except ImportError:  # this service does not use that library (no instrumentation installed)
        return False
    except Exception as exc:  # noqa: BLE001 - a broken instrumentation must not stop the service
        log.warning("tracing_instrumentation_failed", library=lib, error=repr(exc))
        return False
    return True


def _grpc() -> None:
    from opentelemetry.instrumentation.grpc import (
        GrpcAioInstrumentorClient,
        GrpcAioInstrumentorServer,
        GrpcInstrumentorClient,
        filters,
    )

    not_health = filters.negate(filters.health_check())
    GrpcAioInstrumentorClient(filter_=not_health).instrument()
    GrpcAioInstrumentorServer(filter_=not_health).instrument()
    GrpcInstrumentorClient(filter_=not_health).instrument()


def _redis() -> None:
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    RedisInstrumentor().instrument()


def _aiohttp() -> None:
    import aiohttp  # noqa: F401 - only where the service uses it (the gateway)
    from opentelemetry.instrumentation.aiohttp_client import AioHttpClientInstrumentor

    AioHttpClientInstrumentor().instrument()


def _celery() -> None:
    import celery  # noqa: F401 - the gateway (publishes) and the worker (runs tasks)
    from opentelemetry.instrumentation.celery import CeleryInstrumentor

    CeleryInstrumentor().instrument()


_INSTRUMENTATIONS: dict[str, Callable[[], None]] = {
    "grpc": _grpc,
    "redis": _redis,
    "aiohttp-client": _aiohttp,
    "celery": _celery,
}
