"""Public guideline search: the gateway asks retrieval directly (no intermediate service)."""

from __future__ import annotations

from fastapi import APIRouter

from gateway.deps import Retrieval
from ng12_common.citations import hit_to_passage
from ng12_common.models import ErrorResponse, SearchQuery, SearchResult

router = APIRouter()


@router.post(
    "/search",
    response_model=SearchResult,
    responses={422: {"model": ErrorResponse}, 503: {"model": ErrorResponse}},
    tags=["search"],
)
async def search(body: SearchQuery, retrieval: Retrieval) -> SearchResult:
    found = await retrieval.search(body.query, top_k=body.top_k, mode=body.mode)
    return SearchResult(
        query=body.query,
        normalized_query=found.normalized_query,
        passages=[hit_to_passage(hit) for hit in found.hits],
        index_version=found.index_version,
        degraded=found.degraded,
        degraded_reason=found.degraded_reason,
    )
