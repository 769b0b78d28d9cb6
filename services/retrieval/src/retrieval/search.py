"""Search over the served index: query normalisation, dense + BM25 candidates, fusion.

- Normalisation: lower-case, whitespace folded, GP shorthand written out (`SHORTHAND`: "pts",
  "2ww", "appt", "DNA", "CXR", ...: words the embedder does not know, replaced by NG12's wording),
  and lexicon expansion (a synonym or abbreviation found in the query appends the concept's
  guideline wording).
- Candidates: fetch_k = 3 x top_k from the dense index and from BM25. Dense candidates are
  ranked exactly over the active version's vectors, which are read from its Chroma collection
  when the version loads and held in memory (373 x 384 floats: 0.01 ms per query, against
  ~1 ms for Chroma's HNSW query, and exact rather than approximate); `dense_backend="chroma"`
  queries the collection instead, for comparison (docs/retrieval.md).
- Fusion (ordering): reciprocal rank fusion (k = 60), normalised to [0, 1] by its maximum, or
  a weighted sum of cosine and max-normalised BM25 (`SearchConfig.fusion`); docs/retrieval.md
  has the measurement that chose the default.
- Reranking (rerank.py): additive, explained boosts by mode; candidates are ordered by fused
  base + boosts.
- Score (calibrated, what callers threshold on): cosine similarity of query and chunk (MiniLM
  vectors are normalised; absolute, unlike per-query-normalised BM25) plus the boosts,
  clamped to [0, 1]. When the dense path is down, max-normalised BM25 stands in and the
  response says `degraded`.
- Collapse (`collapse_hits`): the ranked passages become distinct results, one per
  recommendation: a recommendation's best-ranked passage (its rule_search chunk or a symptom-table
  row citing it) is its hit, and its other passages among the candidates are kept on that hit as
  supporting passages; a row citing two recommendations stands for each of them. Guideline prose
  (no recommendation) is a result of its own. So top_k means top_k recommendations (or prose
  passages), never the same recommendation twice. `SearchConfig(collapse=False)` gives the old
  list (only rule_search chunks de-duplicated), for the comparison in docs/retrieval.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ng12_common.logs import get_logger
from retrieval import rerank
from retrieval.embeddings import CachedQueryEmbedder
from retrieval.normalise import SHORTHAND, QueryNormaliser, expand_shorthand
from retrieval.records import SEARCH_DOC_TYPES, Boost, ChunkRecord, ScoredHit
from retrieval.serving import ServingIndex

__all__ = [
    "SHORTHAND",
    "Boost",
    "QueryNormaliser",
    "ScoredHit",
    "SearchConfig",
    "SearchOutcome",
    "SearchParams",
    "collapse_hits",
    "expand_shorthand",
    "run_search",
]

log = get_logger("retrieval.search")
RRF_K = 60


@dataclass
class SearchOutcome:
    hits: list[ScoredHit]
    normalized_query: str
    degraded: bool = False
    degraded_reason: str = ""


@dataclass
class SearchParams:
    query: str
    top_k: int
    mode: str  # "assessment" | "chat"
    patient: dict[str, Any] | None = None
    doc_types: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    recommendation_ids: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SearchConfig:
    use_dense: bool = True
    use_lexical: bool = True
    fusion: str = "weighted"  # "rrf" | "weighted"
    dense_weight: float = 0.7  # for "weighted"
    rerank: bool = True
    boost_scale: float = 1.0  # multiplies the boosts when ordering (the reported score keeps them whole)
    dense_backend: str = "memory"  # "memory" (exact, vectors loaded from Chroma) | "chroma" (HNSW query)
    collapse: bool = True  # one hit per recommendation, other passages as supporting (False: old list)


DEFAULT_CONFIG = SearchConfig()


def _allowed(chunk: ChunkRecord, p: SearchParams) -> bool:
    if p.doc_types and chunk.doc_type not in p.doc_types:
        return False
    if p.sections and not any(chunk.section == s or chunk.section.startswith(s + ".") for s in p.sections):
        return False
    if p.recommendation_ids and not set(chunk.recommendation_ids) & set(p.recommendation_ids):
        return False
    return chunk.doc_type in SEARCH_DOC_TYPES


def run_search(
    serving: ServingIndex,
    embedder: CachedQueryEmbedder,
    p: SearchParams,
    config: SearchConfig = DEFAULT_CONFIG,
    query_vector: np.ndarray | None = None,
    dense_error: str = "",
) -> SearchOutcome:
    """Rank chunks for one query. The caller may pass the query's embedding (computed off the
    event loop) or the reason it could not be computed (the search then degrades to BM25)."""
    normalized = serving.normaliser(p.query)
    fetch_k = 3 * p.top_k
    ranks: dict[int, dict[str, int]] = {}
    degraded, reason = False, ""
    sims: np.ndarray | None = None
    if config.use_dense:
        try:
            if dense_error:
                raise RuntimeError(dense_error)
            qv = query_vector if query_vector is not None else embedder.embed_query(normalized)
            sims = serving.matrix @ qv
            rank = 0
            for row in _dense_order(serving, sims, qv, p, fetch_k, config.dense_backend):
                if not _allowed(serving.chunks[serving.order[row]], p):
                    continue
                ranks.setdefault(row, {})["dense"] = rank
                rank += 1
                if rank >= fetch_k:
                    break
        except Exception as exc:  # noqa: BLE001 - any dense failure degrades to BM25, and says so
            degraded, reason = True, f"dense search unavailable ({type(exc).__name__}: {exc}); BM25 only"
            log.warning("dense_search_failed", error=repr(exc))
            sims = None
    lex_score: dict[int, float] = {}
    if config.use_lexical or sims is None:
        lexical = serving.lexical.search(normalized, fetch_k * 3)
        best_lex = lexical[0][1] if lexical else 1.0
        rank = 0
        for row, score in lexical:
            if not _allowed(serving.chunks[serving.order[row]], p):
                continue
            ranks.setdefault(row, {})["lexical"] = rank
            lex_score[row] = score / best_lex
            rank += 1
            if rank >= fetch_k:
                break
    rrf = {row: sum(1.0 / (RRF_K + v + 1) for v in r.values()) for row, r in ranks.items()}
    best_rrf = max(rrf.values(), default=1.0)
    symptom_terms = _symptom_terms(serving, p)
    intent = rerank.query_intent(normalized)
    scored: list[ScoredHit] = []
    for row in ranks:
        chunk = serving.chunks[serving.order[row]]
        dense_sim = float(max(0.0, sims[row])) if sims is not None else 0.0
        lx = lex_score.get(row, 0.0)
        if config.fusion == "weighted" and sims is not None:
            base = config.dense_weight * dense_sim + (1 - config.dense_weight) * lx
        else:
            base = rrf[row] / best_rrf
        boosts = _boosts(serving.features[row], p, intent, symptom_terms) if config.rerank else []
        bonus = sum(b.value for b in boosts)
        relevance = dense_sim if sims is not None else lx
        score = min(1.0, max(0.0, relevance + bonus))
        scored.append(ScoredHit(chunk, score, dense_sim, lx, base + config.boost_scale * bonus, boosts))
    scored.sort(key=lambda h: (-h.fused, -h.score, h.chunk.id))
    out = collapse_hits(scored, p.top_k) if config.collapse else _dedupe_rule_search(scored, p.top_k)
    return SearchOutcome(out, normalized, degraded, reason)


MAX_SUPPORTING = 3  # supporting passages kept per result


def collapse_hits(ranked: list[ScoredHit], top_k: int) -> list[ScoredHit]:
    """Distinct results from ranked passages: one per recommendation (its best passage, the
    recommendation's other passages as `supporting`), prose passages as results of their own.
    A passage citing several recommendations becomes the hit of each one not yet seen (its
    `chunk.recommendation_ids` narrowed to that one), and supports those already seen. After
    top_k results, the remaining candidates only add supporting passages."""
    results: list[ScoredHit] = []
    by_rec: dict[str, ScoredHit] = {}
    for hit in ranked:
        ids = hit.chunk.recommendation_ids
        if not ids:
            if len(results) < top_k:
                results.append(hit)
            continue
        used = False
        for rid in ids:
            head = by_rec.get(rid)
            if head is None and len(results) < top_k:
                chunk = hit.chunk if len(ids) == 1 else replace(hit.chunk, recommendation_ids=[rid])
                head = replace(hit, chunk=chunk, supporting=[])
                by_rec[rid] = head
                results.append(head)
                used = True
            elif head is not None and not used and head.chunk.id != hit.chunk.id:
                if len(head.supporting) < MAX_SUPPORTING:
                    head.supporting.append(hit)
                used = True  # a passage supports one result (its best-ranked recommendation)
    return results


def _dedupe_rule_search(ranked: list[ScoredHit], top_k: int) -> list[ScoredHit]:
    """The list before collapsing: only a recommendation's rule_search chunk is de-duplicated."""
    seen: set[tuple[str, ...]] = set()
    out: list[ScoredHit] = []
    for hit in ranked:
        key = tuple(hit.chunk.recommendation_ids) if hit.chunk.doc_type == "rule_search" else ()
        if key and key in seen:
            continue
        if key:
            seen.add(key)
        out.append(hit)
        if len(out) >= top_k:
            break
    return out


def _symptom_terms(serving: ServingIndex, p: SearchParams) -> list[str]:
    if not p.patient:
        return []
    terms: list[str] = []
    for phrase in p.patient.get("symptoms") or []:
        terms.extend(serving.normaliser.labels_in(str(phrase)))
    return list(dict.fromkeys(t for t in terms if len(t) > 2))


def _boosts(
    features: rerank.ChunkFeatures, p: SearchParams, intent: rerank.QueryIntent, symptom_terms: list[str]
) -> list[Boost]:
    if p.mode == "assessment" and p.patient:
        specs = rerank.assessment_boosts(features, p.patient, symptom_terms)
    else:
        specs = rerank.chat_boosts(intent, features)
    return [Boost(s.name, s.value, s.reason) for s in specs]


def _dense_order(
    serving: ServingIndex, sims: np.ndarray, qv: np.ndarray, p: SearchParams, fetch_k: int, backend: str
) -> list[int]:
    """Rows by descending cosine similarity: exact, over the version's vectors held in memory
    ("memory"), or as Chroma's HNSW query returns them ("chroma"; kept for comparison)."""
    if backend == "memory":
        return list(np.argsort(-sims, kind="stable").tolist())
    where: dict[str, Any] | None = {"doc_type": {"$in": list(p.doc_types)}} if p.doc_types else None
    n = min(fetch_k * 2 if (p.sections or p.recommendation_ids) else fetch_k, len(serving.order))
    found = serving.collection.query(
        query_embeddings=[qv.tolist()], n_results=max(n, 1), where=where, include=["distances"]
    )
    return [serving.row_of[cid] for cid in found["ids"][0] if cid in serving.row_of]
