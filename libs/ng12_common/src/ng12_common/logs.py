"""JSON logging (structlog) with the request id that travels through every service.

The request id lives in one context variable (asgi-correlation-id's `correlation_id`):
set from the `X-Request-ID` header by HTTP middleware, from gRPC metadata by the retrieval
server interceptor and from Celery task headers by the ingestion worker. Every log line,
including those of uvicorn, celery and grpc's stdlib loggers, is one JSON object carrying
`service` and `request_id`, and `trace_id` while an OpenTelemetry span is current (tracing on:
ng12_common.tracing).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog
from asgi_correlation_id.context import correlation_id
from opentelemetry import trace

REQUEST_ID_HEADER = "X-Request-ID"
REQUEST_ID_METADATA = "x-request-id"


def current_request_id() -> str | None:
    return correlation_id.get()


def _add_request_id(_: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    rid = correlation_id.get()
    if rid and "request_id" not in event_dict:
        event_dict["request_id"] = rid
    return event_dict


def _add_trace_id(_: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """The trace this line belongs to (32 hex digits), when a sampled span is current."""
    ctx = trace.get_current_span().get_span_context()
    if ctx.is_valid and "trace_id" not in event_dict:
        event_dict["trace_id"] = format(ctx.trace_id, "032x")
        event_dict.setdefault("span_id", format(ctx.span_id, "016x"))
    return event_dict


def configure_logging(service: str, level: str = "INFO") -> None:
    """Route structlog and stdlib logging to stdout as JSON lines. Idempotent."""

    def _add_service(_: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        event_dict.setdefault("service", service)
        return event_dict

    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _add_service,
        _add_request_id,
        _add_trace_id,
    ]
    structlog.configure(
        # filter_by_level first: a line below the level (the per-request access line at WARNING)
        # is dropped before the other processors format it
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
    )
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "celery", "httpx"):
        lg = logging.getLogger(name)
        lg.handlers[:] = []
        lg.propagate = True
    logging.getLogger("httpx").setLevel("WARNING")
    # uvicorn's access log stays off (AccessLogMiddleware writes one line per request, with the
    # request id); this runs after uvicorn configured it when uvicorn calls the app factory
    access = logging.getLogger("uvicorn.access")
    access.handlers[:] = []
    access.propagate = False


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    return structlog.stdlib.get_logger(name)  # type: ignore[no-any-return]
