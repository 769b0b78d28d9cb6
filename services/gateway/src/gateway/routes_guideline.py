"""The guideline viewer's data (clinicians and admins), all from the ACTIVE index version.

- `GET /guideline/recommendations/{id}`: the canonical text with `highlights`: one box per
  printed line, in PDF points (top-left origin) on the PDF page `page_index` (printed page
  `page`), as ingestion read them from the PDF's layout. Audited as a guideline view.
- `GET /guideline/pages/{page}.png?highlight={id}&scale=`: the printed page rendered by retrieval
  from the version's own PDF, the recommendation's boxes drawn (cached there per version, page,
  scale and highlight; the gateway passes the bytes through with an ETag).
- `GET /guideline/sections`, `GET /guideline/recommendations?section=&q=`: browse and search
  (filtered and paged by retrieval's ListChunks, doc type `rule_canonical`).
- `GET /guideline/symptom-tables?q=`: the Part B symptom table rows the knowledge base holds
  (filtered by retrieval, read page by page).

Retrieval's NOT_FOUND says what is missing (`RetrievalNotFound.missing`); the error codes here
map that, never the message text. The browse routes (sections, recommendation search, symptom
tables) return the published guideline only, no patient data, and are not audited.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, HTTPException, Path, Query, Request
from fastapi.responses import Response
from google.protobuf.json_format import MessageToDict
from pydantic import BaseModel, Field

from gateway.deps import Audit, Retrieval
from gateway.security.authenticate import Clinical
from ng12_common.models import ErrorResponse
from ng12_common.retrieval_client import RetrievalInvalidArgument, RetrievalNotFound
from ng12_common.served_recommendations import rec_sort_key

router = APIRouter(
    prefix="/guideline",
    tags=["guideline"],
    responses={
        401: {"model": ErrorResponse},
        403: {"model": ErrorResponse},
        429: {"model": ErrorResponse},
        503: {"model": ErrorResponse},
    },
)
REC_ID = r"^1\.\d{1,2}\.\d{1,2}$"
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
    async with audit.on_failure(request, "guideline", {"recommendation_id": rec_id}):
        try:
            found = await retrieval.get_recommendations([rec_id])
        except RetrievalNotFound:  # of the active version: the id is the only thing to miss
            raise HTTPException(
                status_code=404,
                detail={
                    "code": "recommendation_not_found",
                    "message": f"NG12 has no recommendation {rec_id} in the served index.",
                },
            ) from None
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


# --- pages ---------------------------------------------------------------------------------------

_PAGE = re.compile(r"^(-?\d{1,6})\.png$")
# what retrieval says is missing -> the error code (no source PDF: the page cannot be shown)
_PAGE_NOT_FOUND = {"recommendation": "recommendation_not_found", "source_pdf": "page_not_found"}
PAGE_CACHE_CONTROL = "private, max-age=3600"


def _page_not_found(page_file: str) -> HTTPException:
    return HTTPException(
        status_code=404,
        detail={
            "code": "page_not_found",
            "message": f"No guideline page '{page_file}'; ask for /pages/<n>.png.",
        },
    )


@router.get(
    "/pages/{page_file}",
    response_class=Response,
    responses={
        200: {"content": {"image/png": {}}, "description": "the printed page, highlight drawn"},
        304: {"description": "If-None-Match matched the ETag"},
        404: {"model": ErrorResponse},
        422: {"model": ErrorResponse},
    },
)
async def page_png(
    request: Request,
    page_file: Annotated[str, Path(max_length=16, description="'<printed page>.png', e.g. 9.png")],
    user: Clinical,
    retrieval: Retrieval,
    audit: Audit,
    highlight: Annotated[
        str | None, Query(pattern=REC_ID, description="a recommendation id whose boxes are drawn")
    ] = None,
    scale: Annotated[float, Query(ge=1.0, le=3.0, description="zoom; 1.5 is 108 dpi")] = 1.5,
) -> Response:
    match = _PAGE.match(page_file)
    if match is None:
        raise _page_not_found(page_file)
    page = int(match.group(1))
    summary = {"page": page, "recommendation_id": highlight}
    async with audit.on_failure(request, "guideline", summary):
        try:
            rendered = await retrieval.render_page(page, highlight_id=highlight or "", scale=scale)
        except RetrievalNotFound as exc:
            code = _PAGE_NOT_FOUND.get(exc.missing, "page_not_found")
            raise HTTPException(status_code=404, detail={"code": code, "message": exc.message}) from None
        except RetrievalInvalidArgument as exc:  # the page is outside the PDF (scale is checked here)
            raise HTTPException(
                status_code=422, detail={"code": "page_out_of_range", "message": exc.message}
            ) from None
    headers = {
        "Cache-Control": PAGE_CACHE_CONTROL,
        "ETag": rendered.etag,
        "X-Index-Version": rendered.index_version,
    }
    await audit.write(request, "guideline", 200, summary={**summary, "index_version": rendered.index_version})
    if rendered.etag and rendered.etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(content=rendered.png, media_type="image/png", headers=headers)


# --- sections, recommendation search, symptom tables ----------------------------------------------


class Section(BaseModel):
    id: str
    title: str
    recommendation_ids: list[str]


class SectionList(BaseModel):
    index_version: str
    sections: list[Section]


class RecommendationItem(BaseModel):
    id: str
    section: str
    section_title: str
    action: str
    text: str
    page: int


class RecommendationPage(BaseModel):
    index_version: str
    total: int
    items: list[RecommendationItem]


class SymptomRow(BaseModel):
    chunk_id: str
    table: str = Field(description="the Part B table (symptom group)")
    heading_path: list[str]
    symptom: str
    cancer: str
    recommendation_ids: list[str]
    text: str = Field(description="the row's recommendation wording, as printed")
    page: int


class SymptomTable(BaseModel):
    index_version: str
    total: int
    items: list[SymptomRow]


SYMPTOM_PAGE = 500  # rows per ListChunks call (retrieval allows up to 1000)


@router.get("/sections", response_model=SectionList)
async def sections(user: Clinical, retrieval: Retrieval) -> SectionList:
    found = await retrieval.get_recommendations()
    by_id: dict[str, Section] = {}
    for rec in found.recommendations:
        section = by_id.setdefault(
            rec.section, Section(id=rec.section, title=rec.section_title, recommendation_ids=[])
        )
        section.recommendation_ids.append(rec.id)
    ordered = sorted(by_id.values(), key=lambda s: rec_sort_key(s.id))
    return SectionList(index_version=found.index_version, sections=ordered)


@router.get("/recommendations", response_model=RecommendationPage)
async def recommendations(
    user: Clinical,
    retrieval: Retrieval,
    section: Annotated[str | None, Query(pattern=r"^1\.\d{1,2}$", description="e.g. 1.5")] = None,
    q: Annotated[str | None, Query(max_length=200, description="words, all in the text or the id")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000)] = 0,
) -> RecommendationPage:
    """Recommendations in guideline order; retrieval filters (section, words in the text or id)
    and pages them."""
    found = await retrieval.list_chunks(
        doc_type="rule_canonical", section=section or "", q=q or "", offset=offset, limit=limit
    )
    return RecommendationPage(
        index_version=found.index_version, total=found.total, items=[_rec_item(c) for c in found.items]
    )


def _rec_item(chunk: Any) -> RecommendationItem:
    """A recommendation from its `rule_canonical` chunk (retrieval.browse.canonical_chunk)."""
    meta = MessageToDict(chunk.metadata) if chunk.HasField("metadata") else {}
    return RecommendationItem(
        id=chunk.recommendation_ids[0] if chunk.recommendation_ids else chunk.chunk_id.rsplit(":", 1)[-1],
        section=chunk.section,
        section_title=str(meta.get("section_title", "")),
        action=str(meta.get("action", "")),
        text=chunk.text,
        page=chunk.page,
    )


_ROW_LINE = re.compile(r"^(Symptom and specific features|Possible cancer|Recommendation): (.*)$")


def symptom_row(chunk: Any) -> SymptomRow:
    """A Part B row from its symptom_index chunk (ingestion.kb.chunks.row_chunks writes the text
    as labelled lines and the heading path in the metadata)."""
    meta = MessageToDict(chunk.metadata) if chunk.HasField("metadata") else {}
    fields: dict[str, str] = {}
    for line in chunk.text.splitlines():
        m = _ROW_LINE.match(line.strip())
        if m:
            fields[m.group(1)] = m.group(2).strip()
    path = [str(p) for p in meta.get("heading_path", [])] or chunk.section.split(" > ")
    return SymptomRow(
        chunk_id=chunk.chunk_id,
        table=path[0] if path else "",
        heading_path=path,
        symptom=fields.get("Symptom and specific features", ""),
        cancer=str(meta.get("possible_cancer") or fields.get("Possible cancer", "")),
        recommendation_ids=list(chunk.recommendation_ids),
        text=fields.get("Recommendation", ""),
        page=chunk.page,
    )


@router.get("/symptom-tables", response_model=SymptomTable)
async def symptom_tables(
    user: Clinical,
    retrieval: Retrieval,
    q: Annotated[str | None, Query(max_length=200, description="words, all in the row")] = None,
) -> SymptomTable:
    """Every matching row: retrieval filters (words in the row's text, which holds its table
    heading, symptom, cancer and wording, or its recommendation ids); read page by page."""
    rows: list[SymptomRow] = []
    version = ""
    while True:
        found = await retrieval.list_chunks(
            version=version, doc_type="symptom_index", q=q or "", offset=len(rows), limit=SYMPTOM_PAGE
        )
        version = found.index_version  # later pages from the same version, even if one is activated
        rows.extend(symptom_row(c) for c in found.items)
        if not found.items or len(rows) >= found.total:
            return SymptomTable(index_version=version, total=len(rows), items=rows)
