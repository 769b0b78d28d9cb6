"""Async client of the retrieval gRPC service, used by assessment, chat and the gateway.

Every call carries a deadline and the request id; gRPC failures become typed exceptions
(`RetrievalError` subclasses) that HTTP services turn into clear 4xx/503 answers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from ng12_common.grpc_utils import (
    INDEX_CHANGING,
    NOT_FOUND_METADATA,
    channel_options,
    grpc_target,
    request_metadata,
)
from ng12_common.metrics import GRPC_CLIENT_LATENCY, GRPC_CLIENT_REQUESTS

R = TypeVar("R", bound=Message)


class RetrievalError(Exception):
    """A retrieval call failed; `status` is the HTTP status the caller should answer with.
    `detail` is retrieval's own message (the gRPC status details), `message` the caller's."""

    status = 502
    code = "retrieval_error"

    def __init__(self, message: str, grpc_code: grpc.StatusCode | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.grpc_code = grpc_code
        self.detail = detail or message


class RetrievalUnavailable(RetrievalError):
    status = 503
    code = "retrieval_unavailable"


class NoActiveIndex(RetrievalError):
    """FAILED_PRECONDITION: no usable index for a read, or (index changes) a refused lifecycle
    step: a version that is not ready, no previous version, another embedder. Callers that change
    the index answer those with 409 and `detail`."""

    status = 503
    code = "no_active_index"


class RetrievalNotFound(RetrievalError):
    """NOT_FOUND; `missing` says what (grpc_utils.NOT_FOUND_KINDS: index_version, recommendation,
    chunk, source_pdf), from the call's trailing metadata; "" from a server that does not say."""

    status = 404
    code = "not_found"

    def __init__(self, message: str, grpc_code: grpc.StatusCode | None = None, missing: str = "") -> None:
        super().__init__(message, grpc_code)
        self.missing = missing


def _trailing(exc: grpc.aio.AioRpcError, key: str) -> str:
    for item in exc.trailing_metadata() or ():
        name, value = item[0], item[1]
        if name == key:
            return value.decode() if isinstance(value, bytes) else str(value)
    return ""


class RetrievalInvalidArgument(RetrievalError):
    status = 422
    code = "invalid_argument"


def _translate(exc: grpc.aio.AioRpcError, target: str) -> RetrievalError:
    code = exc.code()
    detail = exc.details() or code.name
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return RetrievalUnavailable(
            f"The NG12 retrieval service at {target} did not answer ({code.name}): {detail}. "
            "Guideline knowledge is needed to answer; try again shortly.",
            code,
        )
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return NoActiveIndex(f"The retrieval service has no usable NG12 index: {detail}", code, detail)
    if code == grpc.StatusCode.NOT_FOUND:
        return RetrievalNotFound(detail, code, _trailing(exc, NOT_FOUND_METADATA))
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return RetrievalInvalidArgument(detail, code)
    return RetrievalError(f"Retrieval failed ({code.name}): {detail}", code)


class RetrievalClient:
    """Thin typed wrapper over the generated stub; one instance per process.

    `target` (RETRIEVAL_ADDR) may name several retrieval replicas: comma-separated IP addresses
    ("127.0.0.1:50051,127.0.0.1:50052") or one DNS name resolving to all of them. Calls are spread
    round-robin over the replicas that are up, and a read that fails UNAVAILABLE (a replica killed
    mid-call) is retried by the channel on another one (grpc_utils.channel_options). Index changes
    (activate, roll back) go to `writer_target` (RETRIEVAL_WRITER_ADDR; default: `target`)."""

    def __init__(
        self, target: str, timeout_seconds: float = 2.0, service_token: str = "", writer_target: str = ""
    ) -> None:
        self.target = target
        self.writer_target = writer_target or target
        self._service_token = service_token
        self.timeout = timeout_seconds
        self._channel = grpc.aio.insecure_channel(grpc_target(target), options=channel_options())
        self._stub = pb_grpc.RetrievalStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        if self.writer_target != target:
            self._writer_channel: grpc.aio.Channel | None = grpc.aio.insecure_channel(
                grpc_target(self.writer_target), options=channel_options("pick_first")
            )
            self._writer_stub = pb_grpc.RetrievalStub(self._writer_channel)
        else:
            self._writer_channel, self._writer_stub = None, self._stub

    async def close(self) -> None:
        await self._channel.close()
        if self._writer_channel is not None:
            await self._writer_channel.close()

    async def _call(self, name: str, request: Message, timeout: float | None = None) -> Any:
        changing = name in INDEX_CHANGING
        method = getattr(self._writer_stub if changing else self._stub, name)
        start = time.perf_counter()
        code = "OK"
        try:
            token = self._service_token if changing else ""
            return await method(request, timeout=timeout or self.timeout, metadata=request_metadata(token))
        except grpc.aio.AioRpcError as exc:
            code = exc.code().name
            raise _translate(exc, self.writer_target if changing else self.target) from None
        finally:
            GRPC_CLIENT_REQUESTS.labels(method=name, code=code).inc()
            GRPC_CLIENT_LATENCY.labels(method=name).observe(time.perf_counter() - start)

    async def search(
        self,
        query: str,
        top_k: int = 8,
        mode: str = "chat",
        patient: dict[str, Any] | None = None,
        doc_types: Sequence[str] = (),
        sections: Sequence[str] = (),
        timeout: float | None = None,
    ) -> pb.SearchResponse:
        mode_value = {"assessment": pb.SEARCH_MODE_ASSESSMENT, "chat": pb.SEARCH_MODE_CHAT}.get(
            mode, pb.SEARCH_MODE_UNSPECIFIED
        )
        request = pb.SearchRequest(
            query=query,
            top_k=top_k,
            mode=mode_value,
            filters=pb.SearchFilters(doc_types=list(doc_types), sections=list(sections)),
        )
        if patient:
            profile = pb.PatientProfile(
                sex=patient.get("sex") or "",
                smoking=patient.get("smoking") or "",
                symptoms=list(patient.get("symptoms") or []),
            )
            if patient.get("age") is not None:
                profile.age = int(patient["age"])
            request.patient.CopyFrom(profile)
        result: pb.SearchResponse = await self._call("Search", request, timeout)
        return result

    async def get_recommendations(
        self, ids: Sequence[str] = (), timeout: float | None = None, version: str = ""
    ) -> Any:
        """Canonical recommendations of the active version, or of `version` (any that holds data)."""
        return await self._call(
            "GetRecommendations", pb.GetRecommendationsRequest(ids=list(ids), version=version), timeout
        )

    async def render_page(
        self,
        page: int,
        highlight_id: str = "",
        scale: float = 0.0,
        version: str = "",
        timeout: float | None = None,
    ) -> pb.RenderPageResponse:
        """PNG of a printed page of a version's own PDF (active by default), a recommendation's
        boxes drawn on it. NOT_FOUND -> RetrievalNotFound, page out of range -> RetrievalInvalidArgument."""
        result: pb.RenderPageResponse = await self._call(
            "RenderPage",
            pb.RenderPageRequest(version=version, page=page, highlight_id=highlight_id, scale=scale),
            timeout or max(self.timeout, 15.0),
        )
        return result

    async def list_chunks(
        self,
        version: str = "",
        doc_type: str = "",
        section: str = "",
        q: str = "",
        offset: int = 0,
        limit: int = 20,
        timeout: float | None = None,
    ) -> pb.ListChunksResponse:
        result: pb.ListChunksResponse = await self._call(
            "ListChunks",
            pb.ListChunksRequest(
                version=version, doc_type=doc_type, section=section, q=q, offset=offset, limit=limit
            ),
            timeout or max(self.timeout, 10.0),
        )
        return result

    async def get_chunk(
        self, chunk_id: str, version: str = "", timeout: float | None = None
    ) -> pb.GetChunkResponse:
        result: pb.GetChunkResponse = await self._call(
            "GetChunk",
            pb.GetChunkRequest(version=version, chunk_id=chunk_id),
            timeout or max(self.timeout, 10.0),
        )
        return result

    async def get_lexicon(self, timeout: float | None = None) -> pb.GetLexiconResponse:
        """The active index's lexicon: concept, kind, guideline label and synonyms per term."""
        result: pb.GetLexiconResponse = await self._call("GetLexicon", pb.GetLexiconRequest(), timeout)
        return result

    async def embed(
        self, texts: Sequence[str], as_query: bool = False, timeout: float | None = None
    ) -> pb.EmbedResponse:
        """Unit-length embeddings of `texts` (1-256) with the serving model; `as_query` shares
        Search's normalisation and query cache."""
        result: pb.EmbedResponse = await self._call(
            "Embed", pb.EmbedRequest(texts=list(texts), as_query=as_query), timeout
        )
        return result

    async def active_index(self, timeout: float | None = None) -> pb.IndexVersion:
        result: pb.IndexVersion = await self._call("GetActiveIndex", pb.GetActiveIndexRequest(), timeout)
        return result

    async def list_versions(self, timeout: float | None = None) -> pb.ListIndexVersionsResponse:
        result: pb.ListIndexVersionsResponse = await self._call(
            "ListIndexVersions", pb.ListIndexVersionsRequest(), timeout
        )
        return result

    async def activate(self, version: str, timeout: float | None = None) -> pb.IndexVersion:
        result: pb.IndexVersion = await self._call(
            "ActivateIndex", pb.ActivateIndexRequest(version=version), timeout or 30.0
        )
        return result

    async def rollback(self, timeout: float | None = None) -> pb.IndexVersion:
        result: pb.IndexVersion = await self._call(
            "RollbackIndex", pb.RollbackIndexRequest(), timeout or 30.0
        )
        return result

    async def serving(self, timeout: float | None = None) -> bool:
        """True when the retrieval health service reports SERVING (an index is active)."""
        try:
            reply = await self._health.Check(
                health_pb2.HealthCheckRequest(service=""), timeout=timeout or self.timeout
            )
        except grpc.aio.AioRpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)
