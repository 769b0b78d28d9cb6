"""Builds and runs the retrieval gRPC server: servicer, health, optional reflection, metrics,
graceful shutdown (NOT_SERVING first, then stop with grace) on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import signal

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from prometheus_client import start_http_server

from ng12.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from ng12_common.gc_tuning import freeze_startup_heap
from ng12_common.grpc_utils import ServerObservabilityInterceptor, ServiceTokenInterceptor, channel_options
from ng12_common.logs import get_logger
from retrieval.embeddings import CachedQueryEmbedder, EmbeddingError, build_provider
from retrieval.index_store import IndexStore
from retrieval.result_cache import SearchResultCache
from retrieval.servicer import SERVICE_NAME, RetrievalServicer
from retrieval.settings import RetrievalSettings

log = get_logger("retrieval.server")


async def _reap_idle_builds(store: IndexStore, max_idle: float) -> None:
    """A build whose client died between RPCs (not mid-stream, which aborts at once) is failed
    and its data removed once nobody has fed it for BUILD_IDLE_TIMEOUT_SECONDS."""
    while True:
        await asyncio.sleep(min(30.0, max_idle / 4))
        try:
            for version in await store.reap_idle(max_idle):
                log.warning("index_build_reaped", version=version, idle_seconds=max_idle)
        except Exception as exc:  # noqa: BLE001 - try again at the next tick
            log.warning("index_build_reap_failed", error=repr(exc))


async def serve(settings: RetrievalSettings) -> None:
    loop = asyncio.get_running_loop()
    try:
        provider = await loop.run_in_executor(None, build_provider, settings)
    except EmbeddingError as exc:
        log.error("embedder_unavailable", embedder=settings.embedder, error=str(exc))
        raise SystemExit(f"retrieval: cannot start the {settings.embedder} embedder: {exc}") from None
    embedder = CachedQueryEmbedder(provider, settings.query_cache_size)
    store = IndexStore(settings.chroma_dir, provider, keep_versions=settings.keep_versions)
    await loop.run_in_executor(None, store.recover)

    health = health_aio.HealthServicer()
    servicer = RetrievalServicer(store, embedder, health, SearchResultCache(settings.search_cache_size))
    interceptors: list[grpc.aio.ServerInterceptor] = [ServerObservabilityInterceptor()]
    if settings.retrieval_service_token:
        interceptors.append(ServiceTokenInterceptor(settings.retrieval_service_token))
    server = grpc.aio.server(interceptors=interceptors, options=channel_options())
    retrieval_pb2_grpc.add_RetrievalServicer_to_server(servicer, server)
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    if settings.grpc_reflection:
        from grpc_reflection.v1alpha import reflection

        names = (
            retrieval_pb2.DESCRIPTOR.services_by_name["Retrieval"].full_name,
            health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
            reflection.SERVICE_NAME,
        )
        reflection.enable_server_reflection(names, server)
    address = f"{settings.grpc_host}:{settings.grpc_port}"
    if server.add_insecure_port(address) == 0:
        raise SystemExit(f"retrieval: cannot listen on {address} (GRPC_HOST/GRPC_PORT)")
    if settings.metrics_port:
        start_http_server(
            settings.metrics_port, addr="0.0.0.0" if settings.grpc_host == "0.0.0.0" else "127.0.0.1"
        )
    await server.start()
    await servicer.publish_health()
    frozen = freeze_startup_heap()
    log.info(
        "retrieval_started",
        address=address,
        service=SERVICE_NAME,
        active_index=store.serving.record.version if store.serving else None,
        embedder=provider.embedder_id,
        reflection=settings.grpc_reflection,
        heap_frozen=frozen,
    )

    reaper = asyncio.create_task(_reap_idle_builds(store, settings.build_idle_timeout_seconds))
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    reaper.cancel()
    servicer.pages.close()
    log.info("retrieval_stopping", grace_seconds=settings.shutdown_grace_seconds)
    await health.enter_graceful_shutdown()
    await server.stop(settings.shutdown_grace_seconds)
    log.info("retrieval_stopped")
