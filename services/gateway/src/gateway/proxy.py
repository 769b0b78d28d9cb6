"""Forwarding public requests to the internal HTTP services (assessment, chat) with aiohttp.

aiohttp rather than httpx: the proxy hop is on every request, and aiohttp's C HTTP parser costs
about half of httpx's CPU per proxied request (measured with `make bench`, docs/performance.md).

Downstream status codes and JSON bodies pass through unchanged; the request id travels in
X-Request-ID. When a service cannot be reached or does not answer in time the caller gets a
503 `{service}_unavailable` quickly (short connect timeout), never a hang or a bare 500.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from ng12_common.http_app import error_response
from ng12_common.logs import REQUEST_ID_HEADER, current_request_id, get_logger

log = get_logger("gateway.proxy")


class DownstreamUnavailable(Exception):
    def __init__(self, service: str, message: str) -> None:
        super().__init__(message)
        self.service = service
        self.message = message


def make_http_client(timeout_seconds: float, connect_timeout_seconds: float) -> aiohttp.ClientSession:
    """The one HTTP client session of the gateway process (connection pooling across requests)."""
    timeout = aiohttp.ClientTimeout(total=timeout_seconds, connect=connect_timeout_seconds)
    return aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=200))


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str


class Downstream:
    """One internal service reached over HTTP."""

    def __init__(self, name: str, base_url: str, client: aiohttp.ClientSession) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self._client = client

    async def _send(self, method: str, path: str, json: Any = None) -> Reply:
        headers = {}
        rid = current_request_id()
        if rid:
            headers[REQUEST_ID_HEADER] = rid
        try:
            async with self._client.request(
                method, self.base_url + path, json=json, headers=headers
            ) as reply:
                body = await reply.read()
                return Reply(reply.status, body, reply.headers.get("content-type", "application/json"))
        except TimeoutError:
            raise DownstreamUnavailable(
                self.name,
                f"The {self.name} service at {self.base_url} did not answer in time; try again shortly.",
            ) from None
        except aiohttp.ClientError as exc:
            raise DownstreamUnavailable(
                self.name,
                f"The {self.name} service at {self.base_url} cannot be reached ({type(exc).__name__}); "
                "try again shortly.",
            ) from None

    async def forward(self, method: str, path: str, json: Any = None) -> Response:
        """The downstream answer, status and body unchanged."""
        reply = await self._send(method, path, json)
        if reply.status == 204:
            return Response(status_code=204)
        return Response(content=reply.body, status_code=reply.status, media_type=reply.content_type)

    async def readiness_problem(self) -> str | None:
        try:
            reply = await self._send("GET", "/readyz")
        except DownstreamUnavailable as exc:
            return exc.message
        if reply.status == 200:
            return None
        text = reply.body.decode("utf-8", errors="replace")[:300]
        return f"{self.name} is not ready (HTTP {reply.status}): {text}"


async def _unavailable_handler(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DownstreamUnavailable)
    log.warning("downstream_unavailable", service=exc.service)
    return error_response(503, f"{exc.service}_unavailable", exc.message)


def install_proxy_errors(app: FastAPI) -> None:
    app.add_exception_handler(DownstreamUnavailable, _unavailable_handler)
