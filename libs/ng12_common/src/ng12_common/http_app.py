"""What every FastAPI service has: request ids, JSON access logs, metrics, health, errors.

`install_common(app, service)` adds:
- X-Request-ID handling (asgi-correlation-id): accepted from the caller or generated,
  echoed in the response, put into every log line and forwarded downstream;
- `/metrics` (prometheus-fastapi-instrumentator feeding the shared `ng12_http_*` family with a
  `service` label, ng12_common.metrics), `/livez`, `/readyz` (runs the async checks registered
  in `app.state.readiness_checks`, which decide readiness, and `app.state.advisory_checks`,
  which are only reported: see `readiness_body`);
- draining on SIGTERM (`DrainOnSigterm`): /readyz answers 503 at once, the service keeps serving
  for `drain_seconds` so load balancers and Kubernetes take it out of rotation, then uvicorn's
  graceful shutdown stops accepting and finishes the requests in flight;
- OpenTelemetry server spans when tracing is configured (ng12_common.tracing), the request id
  set on each as `ng12.request_id`;
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
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
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
from ng12_common.metrics import HTTP_IN_PROGRESS, http_instrumentation
from ng12_common.models import ErrorDetail, ErrorResponse
from ng12_common.retrieval_client import RetrievalError
from ng12_common.tracing import configure_tracing, instrument_fastapi, link_request_id

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


_UNLOGGED = frozenset({"/livez", "/metrics"})
_UNCOUNTED = frozenset({"/livez", "/metrics", "/readyz"})


class AccessLogMiddleware:
    """One JSON log line per HTTP request (inside the request-id context), and the in-progress
    gauge `ng12_http_requests_in_progress{service}` (probes and scrapes left out)."""

    def __init__(self, app: ASGIApp, service: str = "") -> None:
        self.app = app
        self.in_progress = HTTP_IN_PROGRESS.labels(service)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = {"code": 500}
        counted = scope.get("path", "") not in _UNCOUNTED
        if counted:
            self.in_progress.inc()
            link_request_id(correlation_id.get())

        async def _send(message: Any) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, _send)
        finally:
            if counted:
                self.in_progress.dec()
            path = scope.get("path", "")
            if path not in _UNLOGGED:
                log.info(
                    "http_request",
                    method=scope.get("method"),
                    route=route_template(scope),
                    status=status["code"],
                    duration_ms=round((time.perf_counter() - start) * 1000, 2),
                )


class DrainState:
    """Set once the process has been asked to stop: /readyz then answers 503."""

    def __init__(self) -> None:
        self.draining = False


class DrainOnSigterm:
    """Readiness drain on SIGTERM, for rolling updates without failed requests.

    uvicorn on SIGTERM stops accepting connections at once and finishes the requests in flight;
    a load balancer or a Kubernetes Service still sends new requests for the few seconds it takes
    to notice, and those fail. So the first SIGTERM only marks the process draining (/readyz
    answers 503, everything else is still served) and, `drain_seconds` later, hands the signal to
    uvicorn's own handler: then the graceful shutdown (in-flight requests finished, up to
    `timeout_graceful_shutdown`). A second SIGTERM, or SIGINT (Ctrl-C), stops without waiting.

    Installed when the app's lifespan starts, in the process's main thread (each uvicorn worker
    has its own), by wrapping the handler uvicorn set; elsewhere (an in-process test client's
    thread) it does nothing. Written here because uvicorn has no drain period of its own.
    """

    def __init__(self, app: ASGIApp, state: DrainState, drain_seconds: float, service: str) -> None:
        self.app = app
        self.state = state
        self.drain_seconds = drain_seconds
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            self._install(asyncio.get_running_loop())
        await self.app(scope, receive, send)

    def _install(self, loop: asyncio.AbstractEventLoop) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)
        if not callable(previous) or getattr(previous, "_ng12_drain", False):
            return  # not uvicorn's handler (default/ignored), or already wrapped
        handed_over = threading.Event()

        def hand_over(sig: int, frame: FrameType | None) -> None:
            if not handed_over.is_set():
                handed_over.set()
                log.info("drain_done", service=self.service)
                previous(sig, frame)

        def on_sigterm(sig: int, frame: FrameType | None) -> None:
            if self.state.draining or self.drain_seconds <= 0:
                self.state.draining = True
                hand_over(sig, frame)
                return
            self.state.draining = True
            log.info("drain_started", service=self.service, seconds=self.drain_seconds)
            loop.call_soon_threadsafe(loop.call_later, self.drain_seconds, hand_over, sig, None)

        on_sigterm._ng12_drain = True  # type: ignore[attr-defined]
        signal.signal(signal.SIGTERM, on_sigterm)


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


def readiness_body(
    service: str, required: dict[str, str], advisory: dict[str, str]
) -> tuple[int, dict[str, Any]]:
    """The /readyz status code and body from the results of the required and advisory checks.

    A failing required check makes the service not ready (503, `"not_ready"`): it can serve
    nothing. A failing advisory check (a dependency some routes need, e.g. the gateway's
    retrieval) leaves it ready (200) with `"status": "degraded"`, so an orchestrator keeps it in
    rotation for what it can still serve. All pass: 200 `"ready"`. `checks` holds every result
    ("ok" or the problem); `advisory` names the checks that do not decide readiness."""
    checks = {**required, **advisory}
    if any(v != "ok" for v in required.values()):
        status, code = "not_ready", 503
    elif any(v != "ok" for v in advisory.values()):
        status, code = "degraded", 200
    else:
        status, code = "ready", 200
    return code, {"status": status, "service": service, "checks": checks, "advisory": sorted(advisory)}


def install_common(
    app: FastAPI, service: str, expose_metrics: bool = True, drain_seconds: float = 0.0
) -> None:
    """`expose_metrics=False` (the gateway): no /metrics route on the app; `serve(metrics_port=...)`
    exposes the same registry on a private port instead. `drain_seconds`: how long /readyz
    answers 503 after SIGTERM before the server stops accepting (`DrainOnSigterm`)."""
    configure_tracing(service)
    app.state.readiness_checks = {}
    app.state.advisory_checks = {}
    drain = DrainState()
    app.state.drain = drain
    app.add_middleware(AccessLogMiddleware, service=service)
    app.add_middleware(
        CorrelationIdMiddleware,
        header_name=REQUEST_ID_HEADER,
        generator=lambda: uuid.uuid4().hex,
        validator=lambda v: bool(_RID_OK.match(v)),
        update_request_header=True,
    )
    app.add_middleware(DrainOnSigterm, state=drain, drain_seconds=drain_seconds, service=service)
    instrumentator = Instrumentator(excluded_handlers=["/metrics", "/livez"])
    instrumentator.add(http_instrumentation(service)).instrument(app)
    if expose_metrics:
        instrumentator.expose(app, endpoint="/metrics", include_in_schema=False)

    instrument_fastapi(app)

    app.add_exception_handler(RequestValidationError, _validation_handler)
    app.add_exception_handler(StarletteHTTPException, _http_handler)
    app.add_exception_handler(RetrievalError, _retrieval_handler)
    app.add_exception_handler(Exception, _unexpected_handler)

    @app.get("/livez", include_in_schema=False)
    async def livez() -> dict[str, str]:
        return {"status": "ok", "service": service}

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> JSONResponse:
        if drain.draining:
            return JSONResponse(
                status_code=503,
                content={"status": "draining", "service": service, "checks": {"shutdown": "draining"}},
            )
        required, advisory = await asyncio.gather(
            run_readiness(app.state.readiness_checks), run_readiness(app.state.advisory_checks)
        )
        code, body = readiness_body(service, required, advisory)
        return JSONResponse(status_code=code, content=body)


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
