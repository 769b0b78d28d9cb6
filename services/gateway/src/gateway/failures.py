"""What an exception raised by a route will be answered with, and whether its action may have
taken effect: for the audit record of a failed call (gateway.audit.recorder)."""

from __future__ import annotations

from fastapi import HTTPException
from redis.exceptions import RedisError

from gateway.jobs import IngestionRunning, JobsUnavailable, Outcome
from gateway.proxy import DownstreamUnavailable
from ng12_common.retrieval_client import RetrievalError, RetrievalUnavailable


def failure_status(exc: BaseException) -> int:
    """The HTTP status the error handlers (gateway.errors, ng12_common.http_app) answer `exc` with."""
    if isinstance(exc, HTTPException):
        return exc.status_code
    if isinstance(exc, RetrievalError):
        return exc.status
    if isinstance(exc, IngestionRunning):
        return 409
    if isinstance(exc, DownstreamUnavailable | JobsUnavailable | RedisError):
        return 503
    from gateway.audit.recorder import AuditUnavailable  # the recorder imports this module

    return 503 if isinstance(exc, AuditUnavailable) else 500


def failure_outcome(exc: BaseException) -> Outcome:
    """`unknown` when the other side may have done it before the reply was lost (a timeout, a
    dropped connection), else `not_done` (it refused, or was never reached)."""
    if isinstance(exc, JobsUnavailable):
        return exc.outcome
    if isinstance(exc, RetrievalUnavailable | DownstreamUnavailable | RedisError):
        return "unknown"
    return "not_done"


def failure_code(exc: BaseException) -> str:
    """A short machine-readable name of the failure for the record (never a message: no free text)."""
    if isinstance(exc, HTTPException) and isinstance(exc.detail, dict):
        return str(exc.detail.get("code", "http_error"))[:64]
    if isinstance(exc, RetrievalError):
        return exc.code
    if isinstance(exc, DownstreamUnavailable):
        return f"{exc.service}_unavailable"
    if isinstance(exc, JobsUnavailable):
        return "queue_unavailable"
    if isinstance(exc, IngestionRunning):
        return "ingestion_running"
    return type(exc).__name__[:64]
