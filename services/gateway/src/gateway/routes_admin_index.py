"""Admin review of index versions (/api/v1/admin/indexes/...): the diff between two versions and
the chunk browser. Admins only (router guard); each call is audited (kind `admin`), failures
included, with the status answered. Retrieval's NOT_FOUND names what is missing
(`RetrievalNotFound.missing`): the error codes map that, never the message text.

The data comes from retrieval, the only owner of index versions (GetRecommendations and
ListChunks/GetChunk with a version); the diff itself is computed here (gateway.index_diff).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request
from google.protobuf.json_format import MessageToDict
from pydantic import BaseModel, Field

from gateway.deps import Audit, Retrieval
from gateway.index_diff import IndexDiff, diff_recommendations
from gateway.security.authenticate import Admin, admin_guard
from ng12_common.models import ErrorResponse
from ng12_common.retrieval_client import RetrievalClient, RetrievalNotFound

router = APIRouter(
    prefix="/admin/indexes",
    tags=["admin"],
    dependencies=[Depends(admin_guard)],
    responses={
        401: {"model": ErrorResponse},
        403: {"model": ErrorResponse},
        404: {"model": ErrorResponse},
        422: {"model": ErrorResponse},
        429: {"model": ErrorResponse},
        503: {"model": ErrorResponse},
    },
)

Version = Annotated[str, Path(pattern=r"^[A-Za-z0-9._:-]{1,128}$", description="An index version.")]
ChunkId = Annotated[
    str, Path(pattern=r"^[A-Za-z0-9:._-]{1,200}$", description="A chunk id, e.g. ng12:rec:1.1.1")
]
DocType = Literal["rule_canonical", "rule_search", "symptom_index", "guideline_text"]
EXCERPT_CHARS = 240
DATA_STATUSES = ("ready", "retired", "active")


class ChunkItem(BaseModel):
    chunk_id: str
    doc_type: str
    section: str
    recommendation_id: str | None = Field(description="the first recommendation it resolves to")
    recommendation_ids: list[str]
    page: int
    excerpt: str


class ChunkPage(BaseModel):
    version: str
    total: int
    offset: int
    limit: int
    counts_by_type: dict[str, int]
    items: list[ChunkItem]


class ChunkRecommendation(BaseModel):
    id: str
    text: str
    page: int


class ChunkDetail(BaseModel):
    version: str
    chunk_id: str
    doc_type: str
    section: str
    page: int
    text: str
    metadata: dict[str, Any]
    recommendation: ChunkRecommendation | None


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1].rstrip() + "…"


def _version_missing(version: str) -> HTTPException:
    return HTTPException(
        status_code=404,
        detail={
            "code": "index_version_not_found",
            "message": f"No index version '{version}' that holds data (see GET /api/v1/admin/indexes).",
        },
    )


async def _records(retrieval: RetrievalClient, *versions: str) -> dict[str, Any]:
    listed = await retrieval.list_versions()
    records = {v.version: v for v in listed.versions if v.status in DATA_STATUSES}
    for version in versions:
        if version not in records:
            raise _version_missing(version)
    return records


async def _recs(retrieval: RetrievalClient, version: str) -> dict[str, dict[str, Any]]:
    try:
        found = await retrieval.get_recommendations(version=version, timeout=15.0)
    except RetrievalNotFound:
        raise _version_missing(version) from None
    return {r.id: {"text": r.text, "page": r.page, "section": r.section} for r in found.recommendations}


@router.get("/{a}/diff/{b}", response_model=IndexDiff)
async def diff_indexes(
    request: Request, a: Version, b: Version, user: Admin, retrieval: Retrieval, audit: Audit
) -> IndexDiff:
    """Per recommendation, from version a to version b: added, removed, text changed (word diff),
    page moved or unchanged; and b's STALE and unused curated criteria."""
    async with audit.read(request, "admin", {"action": "index_diff", "a": a, "b": b}) as facts:
        records = await _records(retrieval, a, b)
        summary, items = diff_recommendations(a, b, await _recs(retrieval, a), await _recs(retrieval, b))
        facts.update(summary.model_dump())
    return IndexDiff(
        a=a,
        b=b,
        summary=summary,
        recommendations=items,
        stale_criteria_a=list(records[a].stale_criteria),
        stale_criteria_b=list(records[b].stale_criteria),
        unused_criteria_b=list(records[b].unused_criteria),
    )


@router.get("/{version}/chunks", response_model=ChunkPage)
async def list_chunks(
    request: Request,
    version: Version,
    user: Admin,
    retrieval: Retrieval,
    audit: Audit,
    doc_type: DocType | None = None,
    section: Annotated[str | None, Query(max_length=200, description="e.g. 1.5, or a Part B heading")] = None,
    q: Annotated[
        str | None,
        Query(max_length=200, description="words, all in the text, chunk id or recommendation ids"),
    ] = None,
    offset: Annotated[int, Query(ge=0, le=100_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> ChunkPage:
    summary = {"action": "chunks_browse", "version": version, "doc_type": doc_type}
    async with audit.read(request, "admin", summary) as facts:
        try:
            found = await retrieval.list_chunks(
                version=version,
                doc_type=doc_type or "",
                section=section or "",
                q=q or "",
                offset=offset,
                limit=limit,
            )
        except RetrievalNotFound:  # the version is the only thing ListChunks can miss
            raise _version_missing(version) from None
        facts["total"] = found.total
    return ChunkPage(
        version=found.index_version,
        total=found.total,
        offset=offset,
        limit=limit,
        counts_by_type=dict(found.counts_by_type),
        items=[
            ChunkItem(
                chunk_id=c.chunk_id,
                doc_type=c.doc_type,
                section=c.section,
                recommendation_id=c.recommendation_ids[0] if c.recommendation_ids else None,
                recommendation_ids=list(c.recommendation_ids),
                page=c.page,
                excerpt=_excerpt(c.text),
            )
            for c in found.items
        ],
    )


@router.get("/{version}/chunks/{chunk_id}", response_model=ChunkDetail)
async def get_chunk(
    request: Request, version: Version, chunk_id: ChunkId, user: Admin, retrieval: Retrieval, audit: Audit
) -> ChunkDetail:
    async with audit.read(
        request, "admin", {"action": "chunk_view", "version": version, "chunk_id": chunk_id}
    ):
        try:
            found = await retrieval.get_chunk(chunk_id, version=version)
        except RetrievalNotFound as exc:
            if exc.missing != "chunk":
                raise _version_missing(version) from None
            raise HTTPException(
                status_code=404, detail={"code": "chunk_not_found", "message": exc.message}
            ) from None
    chunk = found.chunk
    rec = found.recommendation if found.HasField("recommendation") else None
    return ChunkDetail(
        version=found.index_version,
        chunk_id=chunk.chunk_id,
        doc_type=chunk.doc_type,
        section=chunk.section,
        page=chunk.page,
        text=chunk.text,
        metadata=MessageToDict(chunk.metadata) if chunk.HasField("metadata") else {},
        recommendation=ChunkRecommendation(id=rec.id, text=rec.text, page=rec.page) if rec else None,
    )
