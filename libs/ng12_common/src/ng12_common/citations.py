"""Turn retrieval's protobuf answers into the shared API models (citations, passages, guideline).

Assessment, chat and the gateway all present retrieval hits; the mapping lives here once so
that a citation means the same thing everywhere: the excerpt is the hit text, verbatim.
"""

from __future__ import annotations

from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12_common.models import BoostOut, Citation, GuidelineRef, Passage


def hit_to_citation(hit: pb.Hit) -> Citation:
    """A citation for one hit: the first recommendation id it carries (or None), text verbatim."""
    return Citation(
        recommendation_id=hit.recommendation_ids[0] if hit.recommendation_ids else None,
        section=hit.section,
        page=hit.page,
        chunk_id=hit.chunk_id,
        excerpt=hit.text,
        doc_type=hit.doc_type,
        score=hit.score,
    )


def hit_to_passage(hit: pb.Hit) -> Passage:
    """A public search passage for one hit, with the reranking boosts that explain its score."""
    return Passage(
        chunk_id=hit.chunk_id,
        doc_type=hit.doc_type,
        score=hit.score,
        recommendation_ids=list(hit.recommendation_ids),
        page=hit.page,
        section=hit.section,
        excerpt=hit.text,
        boosts=[BoostOut(name=b.name, value=b.value, reason=b.reason) for b in hit.boosts],
    )


def guideline_ref(info: pb.GuidelineInfo, index_version: str) -> GuidelineRef:
    """The guideline an answer was drawn from, as the API shows it."""
    return GuidelineRef(
        title=info.title,
        code=info.code or "NG12",
        last_updated=info.last_updated,
        index_version=index_version,
    )
