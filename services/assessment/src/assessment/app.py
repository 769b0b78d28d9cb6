"""Builds the assessment FastAPI app: shared middleware, patient store, retrieval client, graph."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from assessment.errors import install_error_handlers
from assessment.graph import AssessmentRunner
from assessment.llm import GeminiSteps, GenaiClient, make_client
from assessment.patients import JsonPatientStore, PatientStore
from assessment.routes import router
from assessment.settings import AssessmentSettings
from ng12_common.gc_tuning import freeze_startup_heap
from ng12_common.http_app import install_common
from ng12_common.logs import get_logger
from ng12_common.redaction import shared_redactor
from ng12_common.retrieval_client import RetrievalClient

SERVICE = "assessment"


log = get_logger("assessment.app")


def create_app(
    settings: AssessmentSettings, store: PatientStore | None = None, genai_client: GenaiClient | None = None
) -> FastAPI:
    """The app; the patient store is loaded at startup (fail fast) unless one is given.

    The LLM steps run only when settings enable Gemini (or a client is given, as tests do).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        patients = store if store is not None else JsonPatientStore(settings.patients_file)
        retrieval = RetrievalClient(
            settings.retrieval_addr, timeout_seconds=settings.retrieval_timeout_seconds
        )
        app.state.patient_store = patients
        client = genai_client if genai_client is not None else make_client(settings)
        llm = GeminiSteps(client, settings.gemini_model, settings.llm_timeout_seconds) if client else None
        runner = AssessmentRunner(patients, retrieval, llm)
        app.state.runner = runner

        async def retrieval_ready() -> str | None:
            # with guideline knowledge cached this process still answers (degraded, rules-only),
            # so it stays in rotation while retrieval is away
            if await retrieval.serving() or runner.knowledge.current is not None:
                return None
            return f"retrieval at {settings.retrieval_addr} is not serving an NG12 index"

        async def warm_knowledge() -> None:
            """Load the guideline knowledge at start (not at the first assessment), so that a
            retrieval outage later can be answered in degraded mode; retried until it loads."""
            while runner.knowledge.current is None:
                try:
                    await runner.knowledge.get()
                except Exception as exc:  # noqa: BLE001 - retrieval may still be starting
                    log.info("knowledge_not_loaded_yet", error=str(exc)[:200])
                    await asyncio.sleep(2.0)

        async def store_ready() -> str | None:
            return None if patients.list() else "the patient store holds no patients"

        app.state.readiness_checks.update({"retrieval": retrieval_ready, "patient_store": store_ready})
        log.info("heap_frozen", objects=freeze_startup_heap())
        warming = asyncio.create_task(warm_knowledge())
        if llm is not None:  # the narrative's redactor (Presidio, spaCy) is built now, not on a request
            try:
                await asyncio.to_thread(shared_redactor().engine)
            except Exception as exc:  # noqa: BLE001 - the narrative then falls back to rules-only
                log.warning("redactor_not_built", error=str(exc)[:200])
        try:
            yield
        finally:
            warming.cancel()
            await retrieval.close()

    app = FastAPI(
        title="NG12 Assessor - assessment",
        version="0.1.0",
        description="Evaluates a patient against NICE NG12 and cites the guideline passages.",
        lifespan=lifespan,
    )
    install_common(app, SERVICE, drain_seconds=settings.shutdown_drain_seconds)
    install_error_handlers(app)
    app.include_router(router)
    return app
