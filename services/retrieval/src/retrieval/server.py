"""Builds and runs the retrieval gRPC server: servicer, health, optional reflection, metrics,
graceful shutdown (NOT_SERVING first, then stop with grace) on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import signal
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from prometheus_client import start_http_server

from ng12.retrieval.v1 import retrieval_pb2, retrieval_pb2_grpc
from ng12_common.gc_tuning import freeze_startup_heap
from ng12_common.grpc_utils import ServerObservabilityInterceptor, ServiceTokenInterceptor, channel_options
from ng12_common.logs import get_logger
from retrieval.embeddings import CachedQueryEmbedder, EmbeddingError, EmbeddingProvider, build_provider
from retrieval.replication import IndexAnnouncer, follow
from retrieval.result_cache import SearchResultCache
from retrieval.servicer import SERVICE_NAME, RetrievalServicer
from retrieval.serving import IndexManager
from retrieval.settings import RetrievalSettings
from retrieval.storage import ChromaLocation, IndexStorage

log = get_logger("retrieval.server")


async def _maintain(store: IndexStorage, max_idle: float, retry_every: float) -> None:
    """The writer's maintenance pass. A build whose client died between RPCs (not mid-stream,
    which aborts at once) is failed and its data removed once nobody has fed it for
    BUILD_IDLE_TIMEOUT_SECONDS; data whose removal failed (a full disk) is removed again, every
    INDEX_CLEANUP_RETRY_SECONDS until it is gone."""
    while True:
        await asyncio.sleep(min(30.0, max_idle / 4, retry_every))
        try:
            for version in await store.reap_idle(max_idle):
                log.warning("index_build_reaped", version=version, idle_seconds=max_idle)
        except Exception as exc:  # noqa: BLE001 - try again at the next tick
            log.warning("index_build_reap_failed", error=repr(exc))
        try:
            await store.retry_pending_removals()
        except Exception as exc:  # noqa: BLE001 - try again at the next tick
            log.warning("index_cleanup_retry_failed", error=repr(exc))


def open_storage(settings: RetrievalSettings, provider: EmbeddingProvider) -> IndexStorage:
    """The index storage, waiting up to CHROMA_CONNECT_TIMEOUT_SECONDS for a Chroma server that
    is still starting (compose and Kubernetes start them together)."""
    chroma = ChromaLocation(settings.chroma_dir / "chroma", settings.chroma_host, settings.chroma_port)
    deadline = time.monotonic() + settings.chroma_connect_timeout_seconds
    while True:
        try:
            return IndexStorage(
                settings.chroma_dir,
                provider,
                keep_versions=settings.keep_versions,
                chroma=chroma,
                writer=settings.index_role == "writer",
            )
        except Exception as exc:  # noqa: BLE001 - any failure to reach the server: wait, then say why
            if not settings.chroma_host or time.monotonic() > deadline:
                raise SystemExit(f"retrieval: cannot open Chroma ({chroma.describe()}): {exc}") from None
            log.warning("chroma_unavailable", chroma=chroma.describe(), error=repr(exc))
            time.sleep(1.0)


async def serve(settings: RetrievalSettings) -> None:
    loop = asyncio.get_running_loop()
    try:
        provider = await loop.run_in_executor(None, build_provider, settings)
    except EmbeddingError as exc:
        log.error("embedder_unavailable", embedder=settings.embedder, error=str(exc))
        raise SystemExit(f"retrieval: cannot start the {settings.embedder} embedder: {exc}") from None
    embedder = CachedQueryEmbedder(provider, settings.query_cache_size)
    storage = await loop.run_in_executor(None, open_storage, settings, provider)
    index = IndexManager(storage)
    await loop.run_in_executor(None, index.start)

    health = health_aio.HealthServicer()
    servicer = RetrievalServicer(index, embedder, health, SearchResultCache(settings.search_cache_size))
    index.on_change(servicer.publish_health)
    announcer = IndexAnnouncer(settings.redis_url) if settings.redis_url and index.writer else None
    if announcer is not None:
        index.on_change(announcer)
    interceptors: list[grpc.aio.ServerInterceptor] = [ServerObservabilityInterceptor()]
    if settings.retrieval_service_token:
        interceptors.append(ServiceTokenInterceptor(settings.retrieval_service_token))
    # Connections are closed gracefully after 5 minutes (GOAWAY; calls in flight finish), so a
    # client's round_robin re-resolves its target and spreads onto replicas added since.
    server_options = [
        *channel_options(),
        ("grpc.max_connection_age_ms", 300_000),
        ("grpc.max_connection_age_grace_ms", 30_000),
    ]
    server = grpc.aio.server(interceptors=interceptors, options=server_options)
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
        active_index=index.current.version if index.current else None,
        embedder=provider.embedder_id,
        role=settings.index_role,
        chroma=storage.chroma.describe(),
        reflection=settings.grpc_reflection,
        heap_frozen=frozen,
    )

    if index.writer:
        background = asyncio.create_task(
            _maintain(storage, settings.build_idle_timeout_seconds, settings.index_cleanup_retry_seconds)
        )
    else:
        background = asyncio.create_task(follow(index, settings.redis_url, settings.registry_poll_seconds))
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    background.cancel()
    if announcer is not None:
        await announcer.close()
    servicer.pages.close()
    log.info("retrieval_stopping", grace_seconds=settings.shutdown_grace_seconds)
    await health.enter_graceful_shutdown()
    await server.stop(settings.shutdown_grace_seconds)
    log.info("retrieval_stopped")
