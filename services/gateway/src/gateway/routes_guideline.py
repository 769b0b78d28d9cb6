"""The guideline viewer's data: one recommendation, verbatim, with where it is printed.

`GET /api/v1/guideline/recommendations/{id}` answers the canonical text of the active index
version with `highlights`: one box per printed line, in PDF points (top-left origin) on the PDF
page `page_index` (printed page `page`), as ingestion read them from the PDF's layout. Audited
as a guideline view.
"""

from __future__ import annotations

from typing import Annotated

import grpc
import orjson
from fastapi import APIRouter, HTTPException, Path, Request
from google.protobuf.json_format import MessageToDict
from pydantic import BaseModel, Field

from gateway.deps import Audit, Retrieval
from gateway.security.authenticate import Clinical
from ng12_common.models import ErrorResponse
from ng12_common.retrieval_client import RetrievalError

router = APIRouter(prefix="/guideline", tags=["guideline"])
RecommendationId = Annotated[
    str, Path(pattern=r"^1\.\d{1,2}\.\d{1,2}$", description="An NG12 recommendation id, e.g. 1.1.1.")
]


class Highlight(BaseModel):
    page: int = Field(description="printed page")
    page_index: int = Field(description="0-based page of the PDF file")
    x0: float
    top: float
    x1: float
    bottom: float


class GuidelineRecommendation(BaseModel):
    id: str
    section: str
    section_title: str
    action: str
    strength: str
    timeframe: str
    text: str = Field(description="verbatim, as printed")
    page: int
    page_end: int
    highlights: list[Highlight]
    index_version: str


@router.get(
    "/recommendations/{rec_id}",
    response_model=GuidelineRecommendation,
    responses={
        401: {"model": ErrorResponse},
        403: {"model": ErrorResponse},
        404: {"model": ErrorResponse},
        422: {"model": ErrorResponse},
        503: {"model": ErrorResponse},
    },
)
async def recommendation(
    request: Request, rec_id: RecommendationId, user: Clinical, retrieval: Retrieval, audit: Audit
) -> GuidelineRecommendation:
    try:
        found = await retrieval.get_recommendations([rec_id])
    except RetrievalError as exc:
        status = 404 if exc.grpc_code == grpc.StatusCode.NOT_FOUND else exc.status
        await audit.write(request, "guideline", status, summary={"recommendation_id": rec_id})
        if status == 404:
            raise HTTPException(
                status_code=404,
                detail={
                    "code": "recommendation_not_found",
                    "message": f"NG12 has no recommendation {rec_id} in the served index.",
                },
            ) from None
        raise
    rec = found.recommendations[0]
    meta = MessageToDict(rec.metadata) if rec.HasField("metadata") else {}
    out = GuidelineRecommendation(
        id=rec.id,
        section=rec.section,
        section_title=rec.section_title,
        action=rec.action,
        strength=rec.strength,
        timeframe=rec.timeframe,
        text=rec.text,
        page=rec.page,
        page_end=rec.page_end,
        highlights=[Highlight.model_validate(b) for b in meta.get("highlights", [])],
        index_version=found.index_version,
    )
    await audit.write(
        request,
        "guideline",
        200,
        summary={"recommendation_id": rec_id},
        reply=orjson.dumps(
            {"citations": [{"recommendation_id": rec_id}], "index_version": found.index_version}
        ),
    )
    return out
