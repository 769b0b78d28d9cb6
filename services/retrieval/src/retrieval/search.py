"""Search over the served index: query normalisation, dense + BM25 candidates, fusion.

- Normalisation: lower-case, whitespace folded, and lexicon expansion (a synonym or
  abbreviation found in the query appends the concept's guideline wording).
- Candidates: fetch_k = 3 x top_k from the dense index (Chroma) and from BM25.
- Fusion: reciprocal rank fusion (k = 60) orders the candidates.
- Score: the calibrated relevance in [0, 1] is the cosine similarity between the query and
  the chunk (MiniLM vectors are normalised), clamped at 0; when the dense path is down the
  BM25 score divided by the best BM25 score of the query stands in (and `degraded` is set).
- De-duplication: a recommendation appears once (its best-ranked chunk).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ng12_common.logs import get_logger
from retrieval.embeddings import CachedQueryEmbedder
from retrieval.index_store import SEARCH_DOC_TYPES, ChunkRecord, ServingIndex

log = get_logger("retrieval.search")
RRF_K = 60


@dataclass
class Boost:
    name: str
    value: float
    reason: str


@dataclass
class ScoredHit:
    chunk: ChunkRecord
    score: float
    dense: float
    lexical: float
    fused: float
    boosts: list[Boost] = field(default_factory=list)


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


class QueryNormaliser:
    """Lower-cases a query and appends the guideline wording of every lexicon synonym in it.

    One compiled alternation of all synonyms (longest first), built once per index version.
    """

    def __init__(self, lexicon: list[dict[str, Any]]) -> None:
        self.label_of: dict[str, str] = {}
        for term in lexicon:
            label = str(term.get("label", "")).lower().strip()
            for syn in [*term.get("synonyms", []), label]:
                s = str(syn).lower().strip()
                if s and label and s not in self.label_of:
                    self.label_of[s] = label
        alternation = "|".join(re.escape(s) for s in sorted(self.label_of, key=len, reverse=True))
        self._pattern = re.compile(rf"(?<![a-z0-9])(?:{alternation})(?![a-z0-9])") if alternation else None

    def __call__(self, query: str) -> str:
        text = re.sub(r"\s+", " ", query.lower()).strip()
        if self._pattern is None:
            return text
        additions = [self.label_of[m.group(0)] for m in self._pattern.finditer(text)]
        extra = [a for a in dict.fromkeys(additions) if a not in text]
        return " ".join([text, *extra]) if extra else text


def _allowed(chunk: ChunkRecord, p: SearchParams) -> bool:
    if p.doc_types and chunk.doc_type not in p.doc_types:
        return False
    if p.sections and not any(chunk.section == s or chunk.section.startswith(s + ".") for s in p.sections):
        return False
    if p.recommendation_ids and not set(chunk.recommendation_ids) & set(p.recommendation_ids):
        return False
    return chunk.doc_type in SEARCH_DOC_TYPES


def run_search(serving: ServingIndex, embedder: CachedQueryEmbedder, p: SearchParams) -> SearchOutcome:
    normalized = serving.normaliser(p.query)
    fetch_k = 3 * p.top_k
    row_of = {cid: i for i, cid in enumerate(serving.order)}
    ranks: dict[int, dict[str, int]] = {}
    degraded, reason = False, ""
    sims: np.ndarray | None = None
    try:
        qv = embedder.embed_query(normalized)
        sims = serving.matrix @ qv
        where: dict[str, Any] | None = None
        if p.doc_types:
            where = {"doc_type": {"$in": list(p.doc_types)}}
        n = min(fetch_k * 2 if (p.sections or p.recommendation_ids) else fetch_k, len(serving.order))
        dense = serving.collection.query(
            query_embeddings=[qv.tolist()], n_results=max(n, 1), where=where, include=["distances"]
        )
        rank = 0
        for cid in dense["ids"][0]:
            chunk = serving.chunks.get(cid)
            if chunk is None or not _allowed(chunk, p):
                continue
            ranks.setdefault(row_of[cid], {})["dense"] = rank
            rank += 1
            if rank >= fetch_k:
                break
    except Exception as exc:  # noqa: BLE001 - any dense failure degrades to BM25, and says so
        degraded, reason = True, f"dense search unavailable ({type(exc).__name__}: {exc}); BM25 only"
        log.warning("dense_search_failed", error=repr(exc))
        sims = None
    lexical = serving.lexical.search(normalized, fetch_k * 3)
    best_lex = lexical[0][1] if lexical else 1.0
    lex_score: dict[int, float] = {}
    rank = 0
    for row, score in lexical:
        if not _allowed(serving.chunks[serving.order[row]], p):
            continue
        ranks.setdefault(row, {})["lexical"] = rank
        lex_score[row] = score / best_lex
        rank += 1
        if rank >= fetch_k:
            break
    scored: list[ScoredHit] = []
    for row, r in ranks.items():
        fused = sum(1.0 / (RRF_K + v + 1) for v in r.values())
        dense_sim = float(max(0.0, sims[row])) if sims is not None else 0.0
        lx = lex_score.get(row, 0.0)
        score = dense_sim if sims is not None else lx
        scored.append(ScoredHit(serving.chunks[serving.order[row]], min(1.0, score), dense_sim, lx, fused))
    scored.sort(key=lambda h: (-h.fused, -h.score, h.chunk.id))
    seen: set[tuple[str, ...]] = set()
    out: list[ScoredHit] = []
    for hit in scored:
        key = tuple(hit.chunk.recommendation_ids) if hit.chunk.doc_type == "rule_search" else ()
        if key and key in seen:
            continue
        if key:
            seen.add(key)
        out.append(hit)
        if len(out) >= p.top_k:
            break
    return SearchOutcome(out, normalized, degraded, reason)
