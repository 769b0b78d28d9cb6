"""Builds the gateway app: /api/v1 routes, admin router, readiness of everything it needs, frontend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI
from fastapi.staticfiles import StaticFiles
from redis.exceptions import RedisError

from gateway import routes_admin, routes_public, routes_search
from gateway.errors import install_error_handlers
from gateway.jobs import IngestionJobs
from gateway.proxy import Downstream, make_http_client
from gateway.settings import GatewaySettings
from ng12_common.gc_tuning import freeze_startup_heap
from ng12_common.http_app import install_common
from ng12_common.logs import get_logger
from ng12_common.redis_client import make_redis, redis_location
from ng12_common.retrieval_client import RetrievalClient

SERVICE = "gateway"
API_PREFIX = "/api/v1"
log = get_logger("gateway.app")


def create_app(settings: GatewaySettings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        http = make_http_client(
            settings.downstream_timeout_seconds, settings.downstream_connect_timeout_seconds
        )
        redis = make_redis(settings.redis_url)
        retrieval = RetrievalClient(
            settings.retrieval_addr, timeout_seconds=settings.retrieval_timeout_seconds
        )
        jobs = IngestionJobs(
            settings.redis_url,
            redis,
            record_ttl_seconds=settings.job_record_ttl_seconds,
            key_prefix=settings.job_key_prefix,
            queue=settings.ingestion_queue,
        )
        assessment = Downstream("assessment", settings.assessment_url, http)
        chat = Downstream("chat", settings.chat_url, http)
        app.state.assessment, app.state.chat = assessment, chat
        app.state.retrieval, app.state.jobs = retrieval, jobs

        async def retrieval_ready() -> str | None:
            ok = await retrieval.serving()
            return None if ok else f"retrieval at {settings.retrieval_addr} is not serving an NG12 index"

        async def redis_ready() -> str | None:
            try:
                await redis.ping()
            except RedisError as exc:
                return f"Redis at {redis_location(settings.redis_url)} is unavailable ({type(exc).__name__})"
            return None

        app.state.readiness_checks.update(
            {
                "assessment": assessment.readiness_problem,
                "chat": chat.readiness_problem,
                "retrieval": retrieval_ready,
                "redis": redis_ready,
            }
        )
        log.info("heap_frozen", objects=freeze_startup_heap())
        try:
            yield
        finally:
            await http.close()
            await retrieval.close()
            await redis.aclose()  # type: ignore[attr-defined]  # types-redis 4.x stubs predate aclose
            jobs.close()

    app = FastAPI(
        title="NG12 Assessor API",
        version="0.1.0",
        description=(
            "Clinical decision support on NICE NG12 (suspected cancer: recognition and referral). "
            "Every answer cites the guideline. Admin routes need the X-Admin-Key header."
        ),
        lifespan=lifespan,
    )
    app.state.settings = settings
    install_common(app, SERVICE)
    install_error_handlers(app)
    api = APIRouter(prefix=API_PREFIX)
    api.include_router(routes_public.router)
    api.include_router(routes_search.router)
    api.include_router(routes_admin.router)
    app.include_router(api)
    if settings.frontend_dir.is_dir():  # last: the API, health and docs routes take precedence
        app.mount("/", StaticFiles(directory=settings.frontend_dir, html=True), name="frontend")
    else:
        log.warning("frontend_dir_missing", frontend_dir=str(settings.frontend_dir))
    return app
