"""Chat's own failures and how they appear over HTTP (a JSON ErrorResponse)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from chat.history import HistoryUnavailable
from chat.redaction import RedactorUnavailable
from ng12_common.http_app import error_response


async def _history_unavailable(_: Request, exc: Exception) -> JSONResponse:
    return error_response(503, "redis_unavailable", str(exc))


async def _redactor_unavailable(_: Request, exc: Exception) -> JSONResponse:
    return error_response(503, "redactor_unavailable", str(exc))


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(HistoryUnavailable, _history_unavailable)
    app.add_exception_handler(RedactorUnavailable, _redactor_unavailable)
