"""A minimal FastAPI service built like ours (ng12_common.http_app.install_common + serve), with a
slow route, for the real-process readiness-drain test (tests/test_readiness_drain.py)."""

from __future__ import annotations

import asyncio
import os

from fastapi import FastAPI

from ng12_common.http_app import install_common


def app() -> FastAPI:
    application = FastAPI()
    install_common(application, "drain-test", drain_seconds=float(os.environ["SHUTDOWN_DRAIN_SECONDS"]))

    @application.get("/slow")
    async def slow(seconds: float = 1.0) -> dict[str, str]:
        await asyncio.sleep(seconds)
        return {"status": "done"}

    @application.get("/fast")
    async def fast() -> dict[str, str]:
        return {"status": "ok"}

    return application
