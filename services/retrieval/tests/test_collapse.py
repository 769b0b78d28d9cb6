"""Search collapses ranked passages to distinct recommendations (pure function, no index)."""

from __future__ import annotations

from retrieval.records import ChunkRecord
from retrieval.search import ScoredHit, collapse_hits


def _hit(chunk_id: str, doc_type: str, ids: list[str], score: float) -> ScoredHit:
    chunk = ChunkRecord(chunk_id, doc_type, f"text of {chunk_id}", 1, "1.10", ids)
    return ScoredHit(chunk, score, score, 0.0, score)


def test_one_hit_per_recommendation_with_the_others_supporting() -> None:
    ranked = [
        _hit("row:a", "symptom_index", ["1.10.4"], 0.60),
        _hit("row:b", "symptom_index", ["1.10.4"], 0.59),
        _hit("search:1.10.4", "rule_search", ["1.10.4"], 0.64),
        _hit("row:c", "symptom_index", ["1.10.5", "1.10.4"], 0.57),
        _hit("text:x", "guideline_text", [], 0.55),
        _hit("row:d", "symptom_index", ["1.6.4"], 0.51),
    ]
    out = collapse_hits(ranked, top_k=3)
    assert [(h.chunk.id, h.chunk.recommendation_ids) for h in out] == [
        ("row:a", ["1.10.4"]),
        ("row:c", ["1.10.5"]),  # a row citing two: the hit of the one not yet seen, narrowed to it
        ("text:x", []),  # prose is a result of its own
    ]
    assert [s.chunk.id for s in out[0].supporting] == ["row:b", "search:1.10.4"]
    assert ranked[3].chunk.recommendation_ids == ["1.10.5", "1.10.4"]  # the index's record is untouched
    ids = [rid for h in collapse_hits(ranked, top_k=10) for rid in h.chunk.recommendation_ids]
    assert len(ids) == len(set(ids)) == 3
