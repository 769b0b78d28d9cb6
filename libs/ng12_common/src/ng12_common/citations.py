"""Turn retrieval's protobuf answers into the shared API models (citations, passages, guideline).

Assessment, chat and the gateway all present retrieval hits; the mapping lives here once so
that a citation means the same thing everywhere. A citation's excerpt is always verbatim
guideline text: for a hit that resolves to numbered recommendations (a `rule_search` chunk or a
`symptom_index` row), one citation per recommendation quoting its canonical text and page; for
guideline prose, the passage itself. Search-enriched chunk text (title paths, synonyms) is
never shown as a quote.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12_common.models import BoostOut, Citation, GuidelineRef, Passage, SupportingPassageOut

VERBATIM_DOC_TYPES = frozenset({"guideline_text"})


class RecommendationLike(Protocol):
    """Anything carrying a numbered recommendation's id, section, printed page and verbatim text."""

    @property
    def id(self) -> str: ...

    @property
    def section(self) -> str: ...

    @property
    def page(self) -> int: ...

    @property
    def text(self) -> str: ...


def recommendation_citation(rec: RecommendationLike, score: float | None = None) -> Citation:
    """The citation of one numbered recommendation: its canonical text, verbatim, and page."""
    return Citation(
        recommendation_id=rec.id,
        section=rec.section,
        page=rec.page,
        chunk_id=f"ng12:rec:{rec.id}",
        excerpt=rec.text,
        doc_type="rule_canonical",
        score=score,
    )


def hit_to_citations(hit: pb.Hit) -> list[Citation]:
    """Citations for one hit: its canonical recommendations, or the verbatim passage."""
    if hit.canonical:
        return [recommendation_citation(rec, hit.score) for rec in hit.canonical]
    if hit.doc_type in VERBATIM_DOC_TYPES:
        return [
            Citation(
                recommendation_id=None,
                section=hit.section,
                page=hit.page,
                chunk_id=hit.chunk_id,
                excerpt=hit.text,
                doc_type=hit.doc_type,
                score=hit.score,
            )
        ]
    return []  # an enriched chunk without canonical text has nothing verbatim to quote


def hits_to_citations(hits: Iterable[pb.Hit]) -> list[Citation]:
    """Citations for ranked hits, best first, each recommendation or passage once."""
    out: list[Citation] = []
    seen: set[str] = set()
    for hit in hits:
        for citation in hit_to_citations(hit):
            if citation.chunk_id not in seen:
                seen.add(citation.chunk_id)
                out.append(citation)
    return out


def hit_excerpt(hit: pb.Hit) -> str:
    """Verbatim text for a hit: its single canonical recommendation, else the chunk text."""
    if len(hit.canonical) == 1 and hit.doc_type == "rule_search":
        return hit.canonical[0].text
    return hit.text


def hit_to_passage(hit: pb.Hit) -> Passage:
    """A public search passage for one hit, with the reranking boosts that explain its score."""
    return Passage(
        chunk_id=hit.chunk_id,
        doc_type=hit.doc_type,
        score=hit.score,
        recommendation_ids=list(hit.recommendation_ids),
        page=hit.page,
        section=hit.section,
        excerpt=hit_excerpt(hit),
        boosts=[BoostOut(name=b.name, value=b.value, reason=b.reason) for b in hit.boosts],
        supporting=[
            SupportingPassageOut(
                chunk_id=s.chunk_id,
                doc_type=s.doc_type,
                score=s.score,
                page=s.page,
                section=s.section,
                excerpt=s.text,
            )
            for s in hit.supporting
        ],
    )


def guideline_ref(info: pb.GuidelineInfo, index_version: str) -> GuidelineRef:
    """The guideline an answer was drawn from, as the API shows it."""
    return GuidelineRef(
        title=info.title,
        code=info.code or "NG12",
        last_updated=info.last_updated,
        index_version=index_version,
    )
