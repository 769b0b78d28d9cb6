"""Gateway failures as JSON ErrorResponses (503, saying what is down): downstream services, the
job queue, Redis (chat sessions) and the audit trail."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from redis.exceptions import RedisError

from gateway.audit.recorder import AuditUnavailable
from gateway.jobs import JobsUnavailable
from gateway.proxy import install_proxy_errors
from ng12_common.http_app import error_response
from ng12_common.logs import get_logger

log = get_logger("gateway.errors")


async def _jobs_unavailable(_: Request, exc: Exception) -> JSONResponse:
    return error_response(503, "queue_unavailable", str(exc))


async def _redis_unavailable(_: Request, exc: Exception) -> JSONResponse:
    """The session store (chat sessions, on Redis) failed: say that and what to do, nothing more
    (the exception's text and type name, with hosts and commands, go to the log only)."""
    log.warning("session_store_unavailable", error=type(exc).__name__)
    return error_response(
        503,
        "redis_unavailable",
        "The session store is unavailable, so chat sessions cannot be read or changed right now; "
        "retry in a few seconds.",
        headers={"Retry-After": "5"},
    )


async def _audit_unavailable(_: Request, exc: Exception) -> JSONResponse:
    return error_response(503, "audit_unavailable", str(exc))


def install_error_handlers(app: FastAPI) -> None:
    install_proxy_errors(app)
    app.add_exception_handler(JobsUnavailable, _jobs_unavailable)
    app.add_exception_handler(RedisError, _redis_unavailable)
    app.add_exception_handler(AuditUnavailable, _audit_unavailable)
