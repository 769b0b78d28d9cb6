"""Builds the gateway app: sign-in, /api/v1 routes behind roles, audit, limits, headers, frontend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles
from redis.exceptions import RedisError
from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError

from gateway import (
    routes_admin,
    routes_admin_index,
    routes_auth,
    routes_guideline,
    routes_lexicon,
    routes_public,
    routes_search,
)
from gateway.audit.recorder import AuditRecorder
from gateway.audit.store import AuditStore
from gateway.chat_sessions import ChatSessions
from gateway.database import make_engine
from gateway.errors import install_error_handlers
from gateway.hardening import BodySizeLimit, SecurityHeaders, install_docs
from gateway.jobs import IngestionJobs
from gateway.proxy import Downstream, make_http_client
from gateway.rate_limits import RateLimiter
from gateway.security.api_keys import ApiKeyStore
from gateway.security.authenticate import Authenticator
from gateway.security.local_accounts import LocalAccounts, ensure_accounts
from gateway.security.oidc import OidcVerifier
from gateway.security.tokens import TokenIssuer, load_or_create_secret
from gateway.settings import GatewaySettings
from ng12_common.gc_tuning import freeze_startup_heap
from ng12_common.http_app import install_common
from ng12_common.logs import get_logger
from ng12_common.redaction import shared_redactor
from ng12_common.redis_client import make_redis, redis_location
from ng12_common.retrieval_client import RetrievalClient

SERVICE = "gateway"
API_PREFIX = "/api/v1"
UPLOAD_PATH = f"{API_PREFIX}/admin/ingestions"  # multipart PDF uploads (the file cap + form overhead)
UPLOAD_FORM_OVERHEAD = 64 * 1024
log = get_logger("gateway.app")


def _security(app: FastAPI, settings: GatewaySettings) -> None:
    """Identity, the audit trail and the rate limiter: built before the first request."""
    engine = make_engine(settings.gateway_database_url)
    local = None
    if settings.local_accounts_enabled:
        if ensure_accounts(settings.auth_dir):
            log.warning(
                "local_accounts_created",
                passwords_file=str(settings.auth_dir / "initial-passwords.txt"),
                hint="sign in with these, then delete the file",
            )
        local = LocalAccounts(settings.auth_dir)
    oidc = None
    if settings.oidc_issuer:
        oidc = OidcVerifier(
            settings.oidc_issuer,
            settings.oidc_audience,
            settings.oidc_algorithms,
            settings.oidc_roles_claim,
            settings.oidc_user_claim,
            settings.oidc_role_map,
            settings.oidc_jwks_url,
        )
    secret = load_or_create_secret(settings.auth_jwt_secret, settings.auth_dir)
    app.state.engine = engine
    app.state.local_accounts = local
    app.state.authenticator = Authenticator(
        TokenIssuer(secret, settings.auth_token_ttl_seconds), ApiKeyStore(engine), oidc
    )
    app.state.audit = AuditRecorder(AuditStore(engine), settings.trusted_proxy_hops)
    app.state.rate_limiter = RateLimiter.from_strings(
        settings.sessions_redis,
        settings.rate_limit_prefix,
        settings.trusted_proxy_hops,
        user=settings.rate_limit_user,
        ip=settings.rate_limit_ip,
        chat=settings.rate_limit_chat,
        ingestion=settings.rate_limit_ingestion,
        signin=settings.rate_limit_signin,
    )
    app.state.redactor = shared_redactor()


def _ping_database(engine: Engine) -> None:
    """One trivial query (blocking): the database answers."""
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))


async def _apply_retention(store: AuditStore, days: int, every_seconds: float = 86400.0) -> None:
    """Delete audit records older than AUDIT_RETENTION_DAYS at start and then daily (idempotent:
    several replicas may do it). The chain stays verifiable (AuditStore.purge moves its anchor)."""
    while True:
        try:
            removed = await asyncio.to_thread(store.purge, days)
            if removed:
                log.info("audit_retention_applied", removed=removed, retention_days=days)
        except Exception as exc:  # noqa: BLE001 - retry tomorrow; the trail is intact either way
            log.warning("audit_retention_failed", error=repr(exc))
        await asyncio.sleep(every_seconds)


def create_app(settings: GatewaySettings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        http = make_http_client(
            settings.downstream_timeout_seconds, settings.downstream_connect_timeout_seconds
        )
        redis = make_redis(settings.redis_url)
        session_redis = make_redis(settings.sessions_redis) if settings.session_redis_url else redis
        retrieval = RetrievalClient(
            settings.retrieval_addr,
            timeout_seconds=settings.retrieval_timeout_seconds,
            service_token=settings.retrieval_service_token,
            writer_target=settings.retrieval_writer_addr,
        )
        jobs = IngestionJobs(
            settings.redis_url,
            redis,
            record_ttl_seconds=settings.job_record_ttl_seconds,
            key_prefix=settings.job_key_prefix,
            queue=settings.ingestion_queue,
            running_ttl_seconds=settings.ingestion_running_ttl_seconds,
        )
        assessment = Downstream("assessment", settings.assessment_url, http)
        chat = Downstream("chat", settings.chat_url, http)
        app.state.assessment, app.state.chat = assessment, chat
        app.state.retrieval, app.state.jobs = retrieval, jobs
        app.state.chat_sessions = ChatSessions(
            session_redis, settings.session_key_prefix, settings.session_ttl_seconds
        )
        await asyncio.to_thread(app.state.redactor.engine)  # built once per process (~5 s), before serving

        async def retrieval_ready() -> str | None:
            ok = await retrieval.serving()
            return None if ok else f"retrieval at {settings.retrieval_addr} is not serving an NG12 index"

        session_where = redis_location(settings.sessions_redis)
        broker_where = redis_location(settings.redis_url)

        async def redis_ready() -> str | None:
            """The session Redis: chat sessions, rate limits (required)."""
            try:
                await session_redis.ping()
            except RedisError as exc:
                return f"the session store (Redis at {session_where}) is unavailable ({type(exc).__name__})"
            return None

        async def job_queue_ready() -> str | None:
            """The broker Redis: ingestion jobs only (advisory: admin ingestion routes answer 503)."""
            try:
                await redis.ping()
            except RedisError as exc:
                return (
                    f"the ingestion job queue (Redis at {broker_where}) is unavailable "
                    f"({type(exc).__name__}); ingestion routes answer 503 until it is back"
                )
            return None

        engine = app.state.engine

        async def database_ready() -> str | None:
            try:
                await asyncio.to_thread(_ping_database, engine)
            except SQLAlchemyError as exc:
                return f"the gateway database is unavailable ({type(exc).__name__})"
            return None

        # Readiness is the gateway's own: chat sessions and rate limits (the session Redis,
        # SESSION_REDIS_URL), API keys and the audit trail (database). The rest is advisory: the
        # services behind it and the ingestion job queue (the broker Redis, REDIS_URL, which only
        # the admin ingestion routes use). /readyz says "degraded" and names them, but stays 200,
        # so the gateway stays in rotation and passes on what still answers (assessment's
        # degraded mode while retrieval is down).
        app.state.readiness_checks.update({"redis": redis_ready, "database": database_ready})
        app.state.advisory_checks.update(
            {
                "assessment": assessment.readiness_problem,
                "chat": chat.readiness_problem,
                "retrieval": retrieval_ready,
                "job_queue": job_queue_ready,
            }
        )
        log.info("heap_frozen", objects=freeze_startup_heap())
        retention = asyncio.create_task(
            _apply_retention(app.state.audit.store, settings.audit_retention_days)
        )
        try:
            yield
        finally:
            retention.cancel()
            await http.close()
            await retrieval.close()
            await redis.aclose()  # type: ignore[attr-defined]  # types-redis 4.x stubs predate aclose
            if session_redis is not redis:
                await session_redis.aclose()  # type: ignore[attr-defined]
            jobs.close()
            app.state.engine.dispose()

    app = FastAPI(
        title="NG12 Assessor API",
        version="0.2.0",
        description=(
            "Clinical decision support on NICE NG12 (suspected cancer: recognition and referral). "
            "Every answer cites the guideline. Sign in with POST /api/v1/auth/token (the Authorize "
            "button), or send an OIDC bearer token or an X-API-Key."
        ),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    _security(app, settings)
    install_common(app, SERVICE, expose_metrics=False, drain_seconds=settings.shutdown_drain_seconds)
    install_error_handlers(app)
    docs_hash = install_docs(app)
    api = APIRouter(prefix=API_PREFIX)
    api.include_router(routes_auth.router)
    api.include_router(routes_public.router)
    api.include_router(routes_search.router)
    api.include_router(routes_guideline.router)
    api.include_router(routes_lexicon.router)
    api.include_router(routes_admin.router)
    api.include_router(routes_admin_index.router)
    app.include_router(api)
    if settings.cors_allow_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_allow_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "X-API-Key", "X-Request-ID"],
            max_age=600,
        )
    app.add_middleware(SecurityHeaders, docs_script_hash=docs_hash)
    app.add_middleware(
        BodySizeLimit,
        max_bytes=settings.max_body_bytes,
        upload_paths={UPLOAD_PATH: settings.max_upload_bytes + UPLOAD_FORM_OVERHEAD},
    )
    if settings.frontend_dir.is_dir():  # last: the API, health and docs routes take precedence
        app.mount("/", StaticFiles(directory=settings.frontend_dir, html=True), name="frontend")
    else:
        log.warning("frontend_dir_missing", frontend_dir=str(settings.frontend_dir))
    return app
