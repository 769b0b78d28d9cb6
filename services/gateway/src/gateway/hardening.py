"""Browser and abuse hardening at the edge: request size caps, security headers, local API docs.

- `BodySizeLimit`: a request body over the cap gets 413 before it is read (Content-Length), or
  as soon as a streamed body passes the cap. The PDF upload route has its own, larger cap, for
  multipart bodies only (JSON sent there keeps the small cap).
- `SecurityHeaders`: `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`,
  `X-Frame-Options: DENY` and a Content-Security-Policy with `frame-ancestors 'none'` on every
  response; the frontend and the API docs load scripts and styles only from this origin (the docs'
  one inline script is allowed by its hash).
- `/docs` serves Swagger UI from the swagger-ui-py package, so it works offline; its Authorize
  button signs in through POST /api/v1/auth/token.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import swagger_ui
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ng12_common.http_app import error_response

DOCS_STATIC = "/docs-static"
CSP = (
    "default-src 'self'; script-src 'self'{script}; style-src 'self'{style}; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)


class BodyTooLarge(HTTPException):
    """Raised while a streamed body is read: FastAPI passes HTTPExceptions through to the handlers."""

    def __init__(self, cap: int) -> None:
        super().__init__(413, detail={"code": "body_too_large", "message": _too_large(cap)})  # type: ignore[arg-type]


def _too_large(cap: int) -> str:
    return f"The request body is larger than {cap} bytes; send less (records and questions are far smaller)."


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int, upload_paths: dict[str, int]) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.upload_paths = upload_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = self.max_bytes
        upload_cap = self.upload_paths.get(scope.get("path", ""))
        if upload_cap is not None:
            for name, value in scope.get("headers", []):
                if name == b"content-type" and value.lower().startswith(b"multipart/form-data"):
                    cap = upload_cap
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > cap or declared < 0:
                    await self._refuse(scope, receive, send, cap)
                    return
        seen = 0
        started = False

        async def _receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > cap:
                    raise BodyTooLarge(cap)
            return message

        async def _send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, _receive, _send)
        except BodyTooLarge:
            if not started:
                await self._refuse(scope, receive, send, cap)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, cap: int) -> None:
        if cap != self.max_bytes:  # the PDF upload
            response = error_response(
                413,
                "file_too_large",
                f"The upload is larger than the {cap // (1024 * 1024)} MB limit for a guideline PDF.",
            )
        else:
            response = error_response(413, "body_too_large", _too_large(cap))
        await response(scope, receive, send)


def _hash_source(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


class SecurityHeaders:
    def __init__(self, app: ASGIApp, docs_script_hash: str) -> None:
        self.app = app
        self.default_csp = CSP.format(script="", style="")
        self.docs_csp = CSP.format(script=" " + docs_script_hash, style=" 'unsafe-inline'")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        csp = (
            self.docs_csp if scope.get("path", "") in {"/docs", "/docs/oauth2-redirect"} else self.default_csp
        )

        async def _send(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["X-Content-Type-Options"] = "nosniff"
                headers["Referrer-Policy"] = "no-referrer"
                headers["X-Frame-Options"] = "DENY"
                headers["Content-Security-Policy"] = csp
                headers.setdefault("Cache-Control", "no-store")
            await send(message)

        await self.app(scope, receive, _send)


def install_docs(app: FastAPI) -> str:
    """Serve /docs from local Swagger UI files; returns the CSP hash of its inline script."""
    static = Path(swagger_ui.__file__).parent / "static"
    app.mount(DOCS_STATIC, StaticFiles(directory=static), name="docs-static")
    rendered = get_swagger_ui_html(
        openapi_url="/openapi.json",
        title=f"{app.title} - docs",
        swagger_js_url=f"{DOCS_STATIC}/swagger-ui-bundle.js",
        swagger_css_url=f"{DOCS_STATIC}/swagger-ui.css",
        swagger_favicon_url=f"{DOCS_STATIC}/favicon-32x32.png",
        init_oauth={"usePkceWithAuthorizationCodeGrant": False},
    ).body
    page = bytes(rendered).decode()
    inline = re.findall(r"<script>(.*?)</script>", page, flags=re.S)

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return HTMLResponse(page)

    return " ".join(_hash_source(s) for s in inline)
