"""The `ng12.retrieval.v1.Retrieval` gRPC servicer: validates requests, maps errors to codes.

Status codes: INVALID_ARGUMENT (empty query, top_k outside 1-50, unknown mode, malformed
upload), NOT_FOUND (unknown recommendation id or version), FAILED_PRECONDITION (no active
index, wrong lifecycle state, embedder mismatch).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from datetime import datetime
from typing import TypeVar

import grpc
import numpy as np
from grpc_health.v1 import health_pb2
from grpc_health.v1.health import aio as health_aio

from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from ng12_common.served_recommendations import rec_sort_key
from retrieval import convert
from retrieval.embeddings import CachedQueryEmbedder
from retrieval.index_store import IndexError_, IndexStore, ServingIndex
from retrieval.metrics import ACTIVE_INDEX, ACTIVE_INDEX_ACTIVATED, INDEX_CHUNKS, SEARCH_DEGRADED
from retrieval.result_cache import SearchResultCache
from retrieval.search import SearchParams, run_search

_CODES = {
    "invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "not_found": grpc.StatusCode.NOT_FOUND,
    "precondition": grpc.StatusCode.FAILED_PRECONDITION,
}
_MODES = {pb.SEARCH_MODE_ASSESSMENT: "assessment", pb.SEARCH_MODE_CHAT: "chat"}
SERVICE_NAME = "ng12.retrieval.v1.Retrieval"
MAX_EMBED_TEXTS = 256
MAX_EMBED_CHARS = 2000
T = TypeVar("T")


class RetrievalServicer(pb_grpc.RetrievalServicer):
    def __init__(
        self,
        store: IndexStore,
        embedder: CachedQueryEmbedder,
        health: health_aio.HealthServicer,
        results: SearchResultCache | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.health = health
        self.results = results if results is not None else SearchResultCache(0)

    # --- helpers -------------------------------------------------------------------------

    async def publish_health(self) -> None:
        serving = self.store.serving
        status = (
            health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        await self.health.set("", status)
        await self.health.set(SERVICE_NAME, status)
        ACTIVE_INDEX.set(int(serving.record.version.lstrip("v")) if serving else 0)
        ACTIVE_INDEX_ACTIVATED.set(_unix_time(serving.record.activated_at) if serving else 0)
        INDEX_CHUNKS.clear()
        if serving:
            for doc_type, n in serving.record.chunk_counts.items():
                INDEX_CHUNKS.labels(doc_type=doc_type).set(n)

    async def _serving(self, context: grpc.aio.ServicerContext) -> ServingIndex:
        serving = self.store.serving
        if serving is None:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                "no active NG12 index: ingest the NG12 PDF (ingestion task) and activate a version",
            )
        assert serving is not None
        if serving.record.embedder_id != self.embedder.provider.embedder_id:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"the active index was built with {serving.record.embedder_id} but this service embeds "
                f"queries with {self.embedder.provider.embedder_id}",
            )
        return serving

    async def _lifecycle(self, context: grpc.aio.ServicerContext, operation: Awaitable[T]) -> T:
        """Await an index-store operation, turning its refusal into the matching status code."""
        try:
            return await operation
        except IndexError_ as exc:
            await context.abort(_CODES[exc.kind], exc.message)
            raise  # unreachable: abort raises

    # --- search --------------------------------------------------------------------------

    async def Search(self, request: pb.SearchRequest, context: grpc.aio.ServicerContext) -> pb.SearchResponse:
        if not request.query.strip():
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "query must not be empty")
        if not 1 <= request.top_k <= 50:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"top_k must be 1-50, got {request.top_k}")
        mode = _MODES.get(request.mode)
        if mode is None:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"mode must be SEARCH_MODE_ASSESSMENT or SEARCH_MODE_CHAT, got {request.mode}",
            )
        if len(request.query) > 4000:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "query longer than 4000 characters")
        serving = await self._serving(context)
        version = serving.record.version
        cache_key = self.results.key(request)
        cached = self.results.get(version, cache_key)
        if cached is not None:
            return cached
        patient = None
        if request.HasField("patient"):
            pp = request.patient
            patient = {
                "age": pp.age if pp.HasField("age") else None,
                "sex": pp.sex,
                "smoking": pp.smoking,
                "symptoms": list(pp.symptoms),
            }
        params = SearchParams(
            query=request.query,
            top_k=request.top_k,
            mode=mode or "chat",
            patient=patient,
            doc_types=list(request.filters.doc_types),
            sections=list(request.filters.sections),
            recommendation_ids=list(request.filters.recommendation_ids),
        )
        # Embedding is the only slow step. A local model embeds a new query on the serving thread
        # (a few ms of CPU that a thread-pool hop only delays); a remote provider is awaited in a
        # worker thread. Cached queries skip both.
        normalized = serving.normaliser(request.query)
        vector = self.embedder.cached(normalized)
        dense_error = ""
        if vector is None:
            try:
                if self.embedder.provider.embeds_inline:
                    vector = self.embedder.embed_query(normalized)
                else:
                    loop = asyncio.get_running_loop()
                    vector = await loop.run_in_executor(None, self.embedder.embed_query, normalized)
            except Exception as exc:  # noqa: BLE001 - the search degrades to BM25 and says why
                dense_error = f"query embedding failed: {type(exc).__name__}: {exc}"
        outcome = run_search(serving, self.embedder, params, query_vector=vector, dense_error=dense_error)
        if outcome.degraded:
            SEARCH_DEGRADED.inc()
        full = request.include_metadata
        canonical = serving.canonical_pb if full else serving.canonical_lean_pb
        response = pb.SearchResponse(
            hits=[
                convert.hit_to_pb(h, canonical, serving.metadata_pb[h.chunk.id] if full else None)
                for h in outcome.hits
            ],
            index_version=version,
            guideline=serving.guideline_pb,
            normalized_query=outcome.normalized_query,
            degraded=outcome.degraded,
            degraded_reason=outcome.degraded_reason,
        )
        self.results.put(version, cache_key, response)
        return response

    async def GetRecommendations(
        self, request: pb.GetRecommendationsRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetRecommendationsResponse:
        serving = await self._serving(context)
        ids = list(request.ids) or sorted(serving.canonical, key=rec_sort_key)
        missing = [i for i in ids if i not in serving.canonical]
        if missing:
            await context.abort(
                grpc.StatusCode.NOT_FOUND, f"unknown recommendation id(s): {', '.join(missing)}"
            )
        return pb.GetRecommendationsResponse(
            recommendations=[serving.canonical_pb[i] for i in ids],
            index_version=serving.record.version,
            guideline=convert.guideline_to_pb(serving.record.guideline),
        )

    async def GetLexicon(
        self, request: pb.GetLexiconRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetLexiconResponse:
        serving = await self._serving(context)
        return pb.GetLexiconResponse(
            terms=[
                pb.LexiconTerm(
                    concept=str(t.get("concept", "")),
                    label=str(t.get("label", "")),
                    synonyms=[str(x) for x in t.get("synonyms", [])],
                    kind=str(t.get("kind", "")),
                    terms=[str(x) for x in t.get("terms", [])],
                )
                for t in serving.lexicon
            ],
            index_version=serving.record.version,
        )

    async def Embed(self, request: pb.EmbedRequest, context: grpc.aio.ServicerContext) -> pb.EmbedResponse:
        """Unit-length embeddings with the serving model (assessment's tier-3 matching, chat's
        scope classifier). `as_query` texts go through Search's normaliser and query cache."""
        texts = list(request.texts)
        if not 1 <= len(texts) <= MAX_EMBED_TEXTS:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"texts must hold 1-{MAX_EMBED_TEXTS} items, got {len(texts)}",
            )
        bad = [i for i, t in enumerate(texts) if not t.strip() or len(t) > MAX_EMBED_CHARS]
        if bad:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"texts[{bad[0]}] must be 1-{MAX_EMBED_CHARS} characters and not blank",
            )
        serving = await self._serving(context)
        loop = asyncio.get_running_loop()
        inline = self.embedder.provider.embeds_inline
        if request.as_query:
            vectors = []
            for text in texts:
                normalized = serving.normaliser(text)
                vec = self.embedder.cached(normalized)
                if vec is None:
                    vec = (
                        self.embedder.embed_query(normalized)
                        if inline
                        else await loop.run_in_executor(None, self.embedder.embed_query, normalized)
                    )
                vectors.append(vec)
            matrix = np.asarray(vectors, dtype=np.float32)
        elif inline:
            matrix = self.embedder.provider.embed_documents(texts)
        else:
            matrix = await loop.run_in_executor(None, self.embedder.provider.embed_documents, texts)
        return pb.EmbedResponse(
            embeddings=[pb.Embedding(values=row.tolist()) for row in matrix],
            embedder_id=self.embedder.provider.embedder_id,
            dimension=int(matrix.shape[1]) if matrix.ndim == 2 else 0,
            index_version=serving.record.version,
        )

    # --- index lifecycle -----------------------------------------------------------------------

    async def BeginIndex(
        self, request: pb.BeginIndexRequest, context: grpc.aio.ServicerContext
    ) -> pb.IndexVersion:
        guideline = convert.json_format.MessageToDict(request.guideline, preserving_proto_field_name=True)
        record = await self._lifecycle(
            context, self.store.begin(guideline, dict(request.expected_counts), request.description)
        )
        return convert.version_to_pb(record)

    async def UploadChunks(
        self, request_iterator: AsyncIterator[pb.UploadChunksRequest], context: grpc.aio.ServicerContext
    ) -> pb.UploadChunksResponse:
        version = ""
        n_chunks = n_recs = 0
        async for message in request_iterator:
            if not message.version:
                await context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, "every upload message must name its version"
                )
            if version and message.version != version:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "one upload stream serves one version")
            version = message.version
            chunks = [convert.chunk_from_pb(c) for c in message.chunks]
            recs = [convert.canonical_to_dict(r) for r in message.recommendations]
            lexicon = [convert.lexicon_to_dict(t) for t in message.lexicon]
            await self._lifecycle(context, self.store.add(version, chunks, recs, lexicon))
            n_chunks += len(chunks)
            n_recs += len(recs)
        return pb.UploadChunksResponse(
            version=version, chunks_received=n_chunks, recommendations_received=n_recs
        )

    async def FinishIndex(
        self, request: pb.FinishIndexRequest, context: grpc.aio.ServicerContext
    ) -> pb.FinishIndexResponse:
        record, problems = await self._lifecycle(context, self.store.finish(request.version))
        return pb.FinishIndexResponse(
            version=convert.version_to_pb(record), valid=not problems, problems=problems
        )

    async def AbortIndex(
        self, request: pb.AbortIndexRequest, context: grpc.aio.ServicerContext
    ) -> pb.IndexVersion:
        record = await self._lifecycle(context, self.store.abort(request.version, request.reason))
        return convert.version_to_pb(record)

    async def ActivateIndex(
        self, request: pb.ActivateIndexRequest, context: grpc.aio.ServicerContext
    ) -> pb.IndexVersion:
        record = await self._lifecycle(context, self.store.activate(request.version))
        await self.publish_health()
        return convert.version_to_pb(record)

    async def RollbackIndex(
        self, request: pb.RollbackIndexRequest, context: grpc.aio.ServicerContext
    ) -> pb.IndexVersion:
        record = await self._lifecycle(context, self.store.rollback())
        await self.publish_health()
        return convert.version_to_pb(record)

    async def ListIndexVersions(
        self, request: pb.ListIndexVersionsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListIndexVersionsResponse:
        state = self.store.registry.state
        return pb.ListIndexVersionsResponse(
            versions=[convert.version_to_pb(r) for r in self.store.registry.ordered()],
            active_version=state.active or "",
        )

    async def GetActiveIndex(
        self, request: pb.GetActiveIndexRequest, context: grpc.aio.ServicerContext
    ) -> pb.IndexVersion:
        serving = await self._serving(context)
        return convert.version_to_pb(serving.record)


def _unix_time(iso: str) -> float:
    """Unix time of a registry timestamp; 0 when it is missing or unreadable."""
    try:
        return datetime.fromisoformat(iso).timestamp() if iso else 0.0
    except ValueError:
        return 0.0
