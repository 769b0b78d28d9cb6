"""Public guideline search: role-checked and audited; the gateway asks retrieval directly."""

from __future__ import annotations

from fastapi import APIRouter, Request

from gateway.deps import Audit, Retrieval
from gateway.security.authenticate import Clinical
from ng12_common.citations import hit_to_passage
from ng12_common.models import ErrorResponse, SearchQuery, SearchResult
from ng12_common.retrieval_client import RetrievalError

router = APIRouter()


@router.post(
    "/search",
    response_model=SearchResult,
    responses={
        401: {"model": ErrorResponse},
        403: {"model": ErrorResponse},
        422: {"model": ErrorResponse},
        429: {"model": ErrorResponse},
        503: {"model": ErrorResponse},
    },
    tags=["search"],
)
async def search(
    request: Request, body: SearchQuery, user: Clinical, retrieval: Retrieval, audit: Audit
) -> SearchResult:
    summary = {"query_chars": len(body.query), "top_k": body.top_k, "mode": body.mode}
    try:
        found = await retrieval.search(body.query, top_k=body.top_k, mode=body.mode)
    except RetrievalError as exc:
        await audit.write(request, "search", exc.status, raw_input=await request.body(), summary=summary)
        raise
    result = SearchResult(
        query=body.query,
        normalized_query=found.normalized_query,
        passages=[hit_to_passage(hit) for hit in found.hits],
        index_version=found.index_version,
        degraded=found.degraded,
        degraded_reason=found.degraded_reason,
    )
    await audit.write(
        request,
        "search",
        200,
        raw_input=await request.body(),
        summary=summary,
        reply=result.model_dump_json().encode(),
    )
    return result
