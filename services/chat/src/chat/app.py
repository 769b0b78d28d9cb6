"""Builds the chat FastAPI app: shared middleware, Redis history store, retrieval client, graph."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from chat.errors import install_error_handlers
from chat.graph import ChatRunner
from chat.history import HistoryStore, HistoryUnavailable
from chat.llm import AnswerWriter, GeminiModel, QueryRewriter
from chat.redaction import warm as warm_redactor
from chat.routes import router
from chat.settings import ChatSettings
from ng12_common.gc_tuning import freeze_startup_heap
from ng12_common.http_app import install_common
from ng12_common.logs import get_logger
from ng12_common.metrics import record_redis_memory
from ng12_common.redis_client import make_redis, redis_location
from ng12_common.retrieval_client import RetrievalClient

SERVICE = "chat"


log = get_logger("chat.app")


def create_app(settings: ChatSettings, genai_client: Any | None = None) -> FastAPI:
    """The chat app; `genai_client` replaces the Vertex AI client (the tests' boundary fake)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redis = make_redis(settings.redis_url, timeout_seconds=settings.redis_timeout_seconds)
        history = HistoryStore(
            redis,
            ttl_seconds=settings.chat_history_ttl_seconds,
            max_turns=settings.chat_max_turns,
            key_prefix=settings.chat_key_prefix,
            location=redis_location(settings.redis_url),
        )
        retrieval = RetrievalClient(
            settings.retrieval_addr, timeout_seconds=settings.retrieval_timeout_seconds
        )
        app.state.history = history
        writer = rewriter = None
        if genai_client is not None or settings.chat_llm_enabled:
            timeout = settings.chat_llm_timeout_seconds
            model = (
                GeminiModel(genai_client, settings.chat_llm_model, timeout)
                if genai_client is not None
                else GeminiModel.on_vertex(
                    settings.vertex_project, settings.vertex_location, settings.chat_llm_model, timeout
                )
            )
            writer, rewriter = AnswerWriter(model), QueryRewriter(model)
        app.state.runner = runner = ChatRunner(history, retrieval, writer, rewriter)
        warm_up = asyncio.create_task(runner.warm())  # in the background: start-up does not wait
        redactor = asyncio.create_task(warm_redactor())  # the shared redactor's engine (a few s)

        async def redis_ready() -> str | None:
            try:
                await history.ping()
                record_redis_memory("chat", await history.memory_info())  # each probe refreshes it
            except HistoryUnavailable as exc:
                return str(exc)
            return None

        async def retrieval_ready() -> str | None:
            if not await retrieval.serving():
                return f"retrieval at {settings.retrieval_addr} is not serving an NG12 index"
            if not await runner.warm():  # ready means every answer can name the guideline version
                return f"could not load the NG12 recommendations from retrieval at {settings.retrieval_addr}"
            if not runner.scope_ready:  # and every question is classified (chat.scope)
                return "fitting the scope classifier (embedding its training set once per index version)"
            return None

        async def redactor_ready() -> str | None:  # what chat stores is redacted (chat.redaction)
            if not redactor.done():
                return "building the personal-data redactor"
            if redactor.cancelled() or redactor.exception() is not None:
                return f"the personal-data redactor failed to build: {redactor.exception()!r}"
            return None

        app.state.readiness_checks.update(
            {"redis": redis_ready, "retrieval": retrieval_ready, "redactor": redactor_ready}
        )
        log.info("heap_frozen", objects=freeze_startup_heap())
        try:
            yield
        finally:
            warm_up.cancel()
            redactor.cancel()
            await retrieval.close()
            await redis.aclose()  # type: ignore[attr-defined]  # types-redis 4.x stubs predate aclose

    app = FastAPI(
        title="NG12 Assessor - chat",
        version="0.1.0",
        description="Answers questions over NICE NG12 from the guideline text, with citations.",
        lifespan=lifespan,
    )
    install_common(app, SERVICE, drain_seconds=settings.shutdown_drain_seconds)
    install_error_handlers(app)
    app.include_router(router)
    return app
