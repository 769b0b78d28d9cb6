"""What every FastAPI service has: request ids, JSON access logs, metrics, health, errors.

`install_common(app, service)` adds:
- X-Request-ID handling (asgi-correlation-id): accepted from the caller or generated,
  echoed in the response, put into every log line and forwarded downstream;
- `/metrics` (prometheus-fastapi-instrumentator, prefix `ng12_`), `/livez`, `/readyz`
  (runs the async checks registered in `app.state.readiness_checks`);
- error handlers so that every failure is a JSON `ErrorResponse` with a message saying what
  to fix: 422 for invalid input (naming each field), 404/503 from retrieval errors, never a
  bare 500 for bad input.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from asgi_correlation_id import CorrelationIdMiddleware
from asgi_correlation_id.context import correlation_id
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_fastapi_instrumentator import Instrumentator
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from ng12_common.logs import REQUEST_ID_HEADER, get_logger
from ng12_common.models import ErrorDetail, ErrorResponse
from ng12_common.retrieval_client import RetrievalError

ReadinessCheck = Callable[[], Awaitable[str | None]]  # returns None when ready, else a problem

_RID_OK = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
log = get_logger("ng12.http")


def model_response(model: BaseModel) -> Response:
    """A 200 JSON response serialised by pydantic in one step. Routes that return a model they
    built themselves (already validated) use this instead of letting FastAPI validate it against
    the response model again and re-encode it (~0.3 ms per assessment here); the route keeps
    `response_model=` for the OpenAPI schema."""
    return Response(content=model.model_dump_json(), media_type="application/json")


def error_response(
    status: int,
    code: str,
    message: str,
    fields: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = ErrorResponse(
        error=ErrorDetail(code=code, message=message, request_id=correlation_id.get(), fields=fields)
    )
    return JSONResponse(status_code=status, content=body.model_dump(exclude_none=True), headers=headers)


def _field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in {"body", "query", "path", "header"}:
        where, rest = parts[0], parts[1:]
        return ".".join(rest) if rest else where
    return ".".join(parts)


async def _validation_handler(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    fields: list[dict[str, Any]] = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            detail = err.get("ctx", {}).get("error", "")
            return error_response(
                422, "invalid_json", f"The request body is not valid JSON ({detail}). Send a JSON object."
            )
        field = _field_path(err.get("loc", ()))
        fields.append({"field": field, "problem": err.get("msg", "invalid")})
    summary = "; ".join(f"{f['field']}: {f['problem']}" for f in fields)
    return error_response(422, "invalid_request", f"Invalid request: {summary}", fields)


async def _http_handler(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers) if exc.headers else None  # WWW-Authenticate, Retry-After
    if isinstance(exc.detail, dict) and "code" in exc.detail:
        return error_response(
            exc.status_code, str(exc.detail["code"]), str(exc.detail.get("message", "")), headers=headers
        )
    code = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized", 403: "forbidden"}.get(
        exc.status_code, "http_error"
    )
    return error_response(exc.status_code, code, str(exc.detail), headers=headers)


async def _retrieval_handler(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RetrievalError)
    return error_response(exc.status, exc.code, exc.message)


async def _unexpected_handler(_: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled_error", error=repr(exc))
    return error_response(
        500, "internal_error", "Unexpected server error; the request id identifies it in logs."
    )


def route_template(scope: Scope) -> str:
    """The path template of the route that served this request (`/api/v1/chat/{session_id}`), for
    logs and audit records: never the raw path, which carries ids. FastAPI records the effective
    route (with the prefixes of every router it was included through) in the scope."""
    effective = (scope.get("fastapi") or {}).get("effective_route_context")
    for candidate in (getattr(effective, "path", None), getattr(scope.get("route"), "path", None)):
        if isinstance(candidate, str) and candidate:
            return candidate
    return "(static or unmatched)"


class AccessLogMiddleware:
    """One JSON log line per HTTP request (inside the request-id context)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = {"code": 500}

        async def _send(message: Any) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, _send)
        finally:
            path = scope.get("path", "")
            if path not in {"/livez", "/metrics"}:
                log.info(
                    "http_request",
                    method=scope.get("method"),
                    route=route_template(scope),
                    status=status["code"],
                    duration_ms=round((time.perf_counter() - start) * 1000, 2),
                )


async def run_readiness(checks: dict[str, ReadinessCheck], timeout: float = 2.0) -> dict[str, str]:
    """Run checks concurrently; map name -> "ok" or the problem."""

    async def _one(check: ReadinessCheck) -> str:
        try:
            problem = await asyncio.wait_for(check(), timeout)
        except TimeoutError:
            return f"timed out after {timeout}s"
        except Exception as exc:  # noqa: BLE001 - any failure means not ready; say which
            return f"{type(exc).__name__}: {exc}"
        return problem or "ok"

    names = list(checks)
    results = await asyncio.gather(*(_one(checks[n]) for n in names))
    return dict(zip(names, results, strict=True))


def install_common(app: FastAPI, service: str, expose_metrics: bool = True) -> None:
    """`expose_metrics=False` (the gateway): no /metrics route on the app; `serve(metrics_port=...)`
    exposes the same registry on a private port instead."""
    app.state.readiness_checks = {}
    app.add_middleware(AccessLogMiddleware)
    app.add_middleware(
        CorrelationIdMiddleware,
        header_name=REQUEST_ID_HEADER,
        generator=lambda: uuid.uuid4().hex,
        validator=lambda v: bool(_RID_OK.match(v)),
        update_request_header=True,
    )
    instrumentator = Instrumentator(excluded_handlers=["/metrics", "/livez"]).instrument(
        app, metric_namespace="ng12", metric_subsystem=service.replace("-", "_")
    )
    if expose_metrics:
        instrumentator.expose(app, endpoint="/metrics", include_in_schema=False)

    app.add_exception_handler(RequestValidationError, _validation_handler)
    app.add_exception_handler(StarletteHTTPException, _http_handler)
    app.add_exception_handler(RetrievalError, _retrieval_handler)
    app.add_exception_handler(Exception, _unexpected_handler)

    @app.get("/livez", include_in_schema=False)
    async def livez() -> dict[str, str]:
        return {"status": "ok", "service": service}

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> JSONResponse:
        results = await run_readiness(app.state.readiness_checks)
        ready = all(v == "ok" for v in results.values())
        return JSONResponse(
            status_code=200 if ready else 503,
            content={"status": "ready" if ready else "not_ready", "service": service, "checks": results},
        )


def serve(factory: str, host: str, port: int, workers: int = 1, metrics_port: int | None = None) -> None:
    """Run an HTTP service with uvicorn from `factory` ("module:function" returning the app;
    each worker process calls it, so it loads its own settings and logging): our JSON logging
    (log_config=None), no uvicorn access log (AccessLogMiddleware writes one), graceful shutdown
    on SIGTERM. With `workers` > 1 uvicorn's supervisor runs that many processes on one socket
    (and restarts one that dies); Prometheus then runs in multiprocess mode (see
    `prepare_multiprocess_metrics`) so /metrics, answered by any worker, sums them all.
    With `metrics_port` (the gateway), /metrics is served on that separate, private port by this
    process (summing every worker in multiprocess mode) and not on the public one."""
    import uvicorn

    if workers > 1:
        prepare_multiprocess_metrics(factory.split(".", 1)[0])
    if metrics_port is not None:
        start_metrics_server(host, metrics_port, multiprocess=workers > 1)
    uvicorn.run(
        factory,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=10,
    )


def start_metrics_server(host: str, port: int, multiprocess: bool) -> None:
    """Prometheus' exposition server on host:port in a daemon thread."""
    from prometheus_client import REGISTRY, CollectorRegistry, start_http_server
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = REGISTRY
    if multiprocess:
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
    start_http_server(port, addr=host, registry=registry)


def prepare_multiprocess_metrics(service: str) -> Path:
    """Point prometheus_client's multiprocess mode at an empty directory before the workers start
    (they inherit the environment and read it when prometheus_client is imported):
    PROMETHEUS_MULTIPROC_DIR when set (its old *.db files are removed: they belong to processes of
    an earlier run), else a new temporary directory, removed when this process exits."""
    configured = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if configured:
        directory = Path(configured)
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("*.db"):
            stale.unlink()
    else:
        directory = Path(tempfile.mkdtemp(prefix=f"ng12-{service}-metrics-"))
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    return directory
