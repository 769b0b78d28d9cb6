"""Public guideline search: the gateway asks retrieval directly (no intermediate service)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from ng12_common.citations import hit_to_passage
from ng12_common.models import ErrorResponse, SearchQuery, SearchResult
from ng12_common.retrieval_client import RetrievalClient

router = APIRouter()


def get_retrieval(request: Request) -> RetrievalClient:
    client: RetrievalClient = request.app.state.retrieval
    return client


Retrieval = Annotated[RetrievalClient, Depends(get_retrieval)]


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
