"""The `ng12.retrieval.v1.Retrieval` gRPC servicer: validates requests, maps errors to codes.

Status codes: INVALID_ARGUMENT (empty query, top_k outside 1-50, unknown mode, malformed
upload, page outside the PDF, bad scale), NOT_FOUND (unknown version, recommendation or chunk, no
source PDF: the trailing metadata `ng12-not-found` names which, see
ng12_common.grpc_utils.NOT_FOUND_KINDS), FAILED_PRECONDITION (no active index, wrong lifecycle
state, embedder mismatch).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import TypeVar

import grpc
import numpy as np
from grpc_health.v1 import health_pb2
from grpc_health.v1.health import aio as health_aio

from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from ng12_common.grpc_utils import NOT_FOUND_METADATA
from ng12_common.logs import get_logger
from ng12_common.served_recommendations import rec_sort_key
from retrieval import browse, convert
from retrieval.embeddings import CachedQueryEmbedder
from retrieval.metrics import ACTIVE_INDEX, ACTIVE_INDEX_ACTIVATED, INDEX_CHUNKS, SEARCH_DEGRADED
from retrieval.pages import PageRenderer
from retrieval.records import IndexError_, VersionData
from retrieval.result_cache import SearchResultCache
from retrieval.search import SearchParams, run_search
from retrieval.serving import IndexManager, ServingIndex

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
log = get_logger("retrieval.servicer")


class RetrievalServicer(pb_grpc.RetrievalServicer):
    def __init__(
        self,
        index: IndexManager,
        embedder: CachedQueryEmbedder,
        health: health_aio.HealthServicer,
        results: SearchResultCache | None = None,
    ) -> None:
        self.index = index
        self.storage = index.storage
        self.embedder = embedder
        self.health = health
        self.results = results if results is not None else SearchResultCache(0)
        self.pages = PageRenderer(index)
        self._cleanups: set[asyncio.Task[None]] = set()  # builds being failed after a cancelled upload

    # --- helpers -------------------------------------------------------------------------

    async def publish_health(self, _: ServingIndex | None = None) -> None:
        serving = self.index.current
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
        serving = self.index.current
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
            if exc.kind == "not_found":
                await _not_found(context, exc.missing or "index_version", exc.message)
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
        """Canonical recommendations by id (all when none are named) of the served version, or
        of `version` when named (read from disk when it is not the served one)."""
        built: dict[str, pb.CanonicalRecommendation] | None = None  # messages built once per version
        if request.version:
            data = await self._lifecycle(context, self._data(request.version))
            record, found = data.record, data.canonical
        else:
            serving = await self._serving(context)
            record, found, built = serving.record, serving.canonical, serving.canonical_pb
        ids = list(request.ids) or sorted(found, key=rec_sort_key)
        missing = [i for i in ids if i not in found]
        if missing:
            await _not_found(context, "recommendation", f"unknown recommendation id(s): {', '.join(missing)}")
        return pb.GetRecommendationsResponse(
            recommendations=[
                built[i] if built is not None else convert.canonical_from_dict(found[i]) for i in ids
            ],
            index_version=record.version,
            guideline=convert.guideline_to_pb(record.guideline),
        )

    async def _data(self, version: str) -> VersionData:
        """Browsing data of a version ("" = active), loaded off the event loop when not served."""
        if not version:
            return self.index.version_data("")
        return await asyncio.get_running_loop().run_in_executor(None, self.index.version_data, version)

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
            context,
            self.storage.begin(
                guideline,
                dict(request.expected_counts),
                request.description,
                stale_criteria=list(request.stale_criteria),
                unused_criteria=list(request.unused_criteria),
                source_filename=request.source_filename,
            ),
        )
        return convert.version_to_pb(record)

    async def UploadChunks(
        self, request_iterator: AsyncIterator[pb.UploadChunksRequest], context: grpc.aio.ServicerContext
    ) -> pb.UploadChunksResponse:
        version = ""
        n_chunks = n_recs = 0
        complete = False
        async with self._cut_off_fails_build(lambda: "" if complete else version, "chunk upload"):
            async for message in request_iterator:
                if complete:
                    await context.abort(
                        grpc.StatusCode.INVALID_ARGUMENT, "no message may follow the one marked last"
                    )
                if not message.version:
                    await context.abort(
                        grpc.StatusCode.INVALID_ARGUMENT, "every upload message must name its version"
                    )
                if version and message.version != version:
                    await context.abort(
                        grpc.StatusCode.INVALID_ARGUMENT, "one upload stream serves one version"
                    )
                version = message.version  # named before its data is added: a cut-off then fails it
                n_chunks, n_recs = await self._upload_one(context, message, n_chunks, n_recs)
                complete = message.last
        if version and not complete:
            await self._fail_cut_off(context, version, "chunk upload")
        if not version:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no upload message was sent")
        return pb.UploadChunksResponse(
            version=version, chunks_received=n_chunks, recommendations_received=n_recs
        )

    @contextlib.asynccontextmanager
    async def _cut_off_fails_build(self, building: Callable[[], str], what: str) -> AsyncIterator[None]:
        """A streaming upload whose call is cancelled (its client vanished and grpc cancelled the
        handler) fails the build it was feeding at once, as a stream ended without `last` does.
        `building()` names that version, or "" when there is none or the stream was complete."""
        try:
            yield
        except asyncio.CancelledError:
            version = building()
            if version:
                # its own task, referenced until done: the cancelled handler must not take it along
                reason = f"the {what} was cancelled (client gone)"
                task = asyncio.create_task(self._abandoned(version, reason))
                self._cleanups.add(task)
                task.add_done_callback(self._cleanups.discard)
            raise

    async def _fail_cut_off(self, context: grpc.aio.ServicerContext, version: str, what: str) -> None:
        """A stream that ended without its `last` message (grpc reports a vanished client's
        stream as ended: only the flag says it was not): fail its build, answer ABORTED."""
        await self._abandoned(version, f"the {what} was cut off before its last message (client gone)")
        await context.abort(grpc.StatusCode.ABORTED, f"{what} of {version} was cut off; build failed")

    async def _abandoned(self, version: str, reason: str) -> None:
        try:
            await self.storage.abort(version, reason)
            log.warning("index_build_abandoned", version=version, reason=reason)
        except IndexError_:
            pass  # already finished, failed or aborted
        except Exception:  # a task nobody awaits: say what went wrong
            log.exception("index_build_abandon_failed", version=version, reason=reason)

    async def _upload_one(
        self, context: grpc.aio.ServicerContext, message: pb.UploadChunksRequest, n_chunks: int, n_recs: int
    ) -> tuple[int, int]:
        """Add one message's chunks, recommendations and lexicon to its build; the new totals."""
        chunks = [convert.chunk_from_pb(c) for c in message.chunks]
        recs = [convert.canonical_to_dict(r) for r in message.recommendations]
        lexicon = [convert.lexicon_to_dict(t) for t in message.lexicon]
        await self._lifecycle(context, self.storage.add(message.version, chunks, recs, lexicon))
        return n_chunks + len(chunks), n_recs + len(recs)

    async def UploadSource(
        self, request_iterator: AsyncIterator[pb.UploadSourceRequest], context: grpc.aio.ServicerContext
    ) -> pb.UploadSourceResponse:
        version = ""
        complete = False
        async with self._cut_off_fails_build(lambda: "" if complete else version, "source upload"):
            async for message in request_iterator:
                if not message.version or (version and message.version != version):
                    await context.abort(
                        grpc.StatusCode.INVALID_ARGUMENT, "every message must name the one version it feeds"
                    )
                version = message.version
                await self._lifecycle(context, self.storage.add_source(version, message.data))
                complete = message.last
        if version and not complete:
            await self._fail_cut_off(context, version, "source upload")
        if not version:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no source data was sent")
        size, sha = self.storage.source_uploaded(version)
        return pb.UploadSourceResponse(version=version, size=size, sha256=sha)

    async def FinishIndex(
        self, request: pb.FinishIndexRequest, context: grpc.aio.ServicerContext
    ) -> pb.FinishIndexResponse:
        record, problems = await self._lifecycle(context, self.storage.finish(request.version))
        return pb.FinishIndexResponse(
            version=convert.version_to_pb(record), valid=not problems, problems=problems
        )

    async def AbortIndex(
        self, request: pb.AbortIndexRequest, context: grpc.aio.ServicerContext
    ) -> pb.IndexVersion:
        record = await self._lifecycle(context, self.storage.abort(request.version, request.reason))
        return convert.version_to_pb(record)

    async def ActivateIndex(
        self, request: pb.ActivateIndexRequest, context: grpc.aio.ServicerContext
    ) -> pb.IndexVersion:
        record = await self._lifecycle(context, self.index.activate(request.version))
        return convert.version_to_pb(record)

    async def RollbackIndex(
        self, request: pb.RollbackIndexRequest, context: grpc.aio.ServicerContext
    ) -> pb.IndexVersion:
        record = await self._lifecycle(context, self.index.rollback())
        return convert.version_to_pb(record)

    async def ListIndexVersions(
        self, request: pb.ListIndexVersionsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListIndexVersionsResponse:
        if not self.storage.writer:
            self.storage.registry.reload_if_changed()
        state = self.storage.registry.state
        return pb.ListIndexVersionsResponse(
            versions=[convert.version_to_pb(r) for r in self.storage.registry.ordered()],
            active_version=state.active or "",
        )

    async def GetActiveIndex(
        self, request: pb.GetActiveIndexRequest, context: grpc.aio.ServicerContext
    ) -> pb.IndexVersion:
        serving = await self._serving(context)
        return convert.version_to_pb(serving.record)

    # --- viewer and browsing -------------------------------------------------------------------

    async def RenderPage(
        self, request: pb.RenderPageRequest, context: grpc.aio.ServicerContext
    ) -> pb.RenderPageResponse:
        page = await self._lifecycle(
            context, self.pages.render(request.version, request.page, request.highlight_id, request.scale)
        )
        return pb.RenderPageResponse(
            png=page.png,
            index_version=page.version,
            page_count=page.page_count,
            etag=page.etag,
            boxes=page.boxes,
        )

    async def ListChunks(
        self, request: pb.ListChunksRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListChunksResponse:
        limit = request.limit or browse.DEFAULT_LIMIT
        if not 1 <= limit <= browse.MAX_LIMIT or request.offset < 0:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"limit must be 1-{browse.MAX_LIMIT} and offset >= 0 (got {limit}, {request.offset})",
            )
        data = await self._lifecycle(context, self._data(request.version))
        found = browse.list_chunks(data, request.doc_type, request.section, request.q, request.offset, limit)
        return pb.ListChunksResponse(
            total=found.total,
            counts_by_type=found.counts_by_type,
            items=[convert.chunk_summary_to_pb(c) for c in found.items],
            index_version=data.record.version,
        )

    async def GetChunk(
        self, request: pb.GetChunkRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetChunkResponse:
        data = await self._lifecycle(context, self._data(request.version))
        chunk = browse.find_chunk(data, request.chunk_id)
        if chunk is None:
            await _not_found(
                context, "chunk", f"no chunk {request.chunk_id!r} in index {data.record.version}"
            )
        assert chunk is not None
        response = pb.GetChunkResponse(
            chunk=convert.chunk_summary_to_pb(chunk), index_version=data.record.version
        )
        rec = next((data.canonical[r] for r in chunk.recommendation_ids if r in data.canonical), None)
        if rec is not None:
            response.recommendation.CopyFrom(convert.canonical_from_dict(rec))
        return response


async def _not_found(context: grpc.aio.ServicerContext, missing: str, message: str) -> None:
    """Abort NOT_FOUND, naming what is missing in the trailing metadata (clients map that, not text)."""
    await context.abort(grpc.StatusCode.NOT_FOUND, message, ((NOT_FOUND_METADATA, missing),))


def _unix_time(iso: str) -> float:
    """Unix time of a registry timestamp; 0 when it is missing or unreadable."""
    try:
        return datetime.fromisoformat(iso).timestamp() if iso else 0.0
    except ValueError:
        return 0.0
