"""Gateway failures as JSON ErrorResponses: downstream services and the job queue unavailable."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from gateway.jobs import JobsUnavailable
from gateway.proxy import install_proxy_errors
from ng12_common.http_app import error_response


async def _jobs_unavailable(_: Request, exc: Exception) -> JSONResponse:
    return error_response(503, "queue_unavailable", str(exc))


def install_error_handlers(app: FastAPI) -> None:
    install_proxy_errors(app)
    app.add_exception_handler(JobsUnavailable, _jobs_unavailable)
