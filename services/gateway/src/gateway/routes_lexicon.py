"""The symptom lexicon of the served index, for the web page's suggestions as a GP types.

`GET /api/v1/guideline/lexicon` answers the active index version's lexicon terms: the guideline's
wording (`label`), the synonyms and abbreviations the assessment reads, and the kind of term
(symptom, sign, test, history...). It holds no patient data, so it is not audited; browsers may
cache it for a few minutes (it changes only when another index version is activated).
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from gateway.deps import Retrieval
from gateway.security.authenticate import Clinical
from ng12_common.models import ErrorResponse

router = APIRouter(prefix="/guideline", tags=["guideline"])


class LexiconTermOut(BaseModel):
    concept: str
    label: str = Field(description="the guideline's wording")
    synonyms: list[str] = Field(default_factory=list)
    kind: str = ""


class LexiconOut(BaseModel):
    index_version: str
    terms: list[LexiconTermOut]


@router.get(
    "/lexicon",
    response_model=LexiconOut,
    responses={401: {"model": ErrorResponse}, 403: {"model": ErrorResponse}, 503: {"model": ErrorResponse}},
)
async def lexicon(user: Clinical, retrieval: Retrieval, response: Response) -> LexiconOut:
    served = await retrieval.get_lexicon()
    response.headers["Cache-Control"] = "private, max-age=300"
    return LexiconOut(
        index_version=served.index_version,
        terms=[
            LexiconTermOut(concept=t.concept, label=t.label, synonyms=list(t.synonyms), kind=t.kind)
            for t in served.terms
        ],
    )
