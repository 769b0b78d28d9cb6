"""The guideline knowledge the engine evaluates, fetched from retrieval and cached per index version.

Retrieval is the only owner of the knowledge base. At the first assessment (and whenever a Search
answer names a different index version) this module asks retrieval for every canonical
recommendation (`GetRecommendations`: verbatim text, page, action, and in `metadata` the curated
criteria and their status) and for the lexicon (`GetLexicon`), and builds one immutable
`GuidelineKnowledge`. Concurrent requests share one fetch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from assessment.semantic import ConceptSpace, SemanticMatcher
from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12_common.citations import guideline_ref
from ng12_common.criteria import Criterion, dependency_order
from ng12_common.criteria_index import CriteriaIndex
from ng12_common.knowledge import LexiconEntry
from ng12_common.lexicon_match import normalise_phrase
from ng12_common.lexicon_match import prepare as prepare_lexicon
from ng12_common.logs import get_logger
from ng12_common.models import GuidelineRef
from ng12_common.retrieval_client import RetrievalClient, RetrievalError
from ng12_common.served_recommendations import (
    ServedRecommendation,
    lexicon_entry,
    served_recommendation,
)

log = get_logger("assessment.knowledge")

#: Section of the safety-netting recommendations quoted when nothing is met.
SAFETY_NETTING_SECTION = "1.15"


class KnowledgeUnavailable(Exception):
    """Retrieval answered, but what it serves cannot be used to assess (e.g. no criteria)."""


class KnowledgeVersionChanged(KnowledgeUnavailable):
    """The index version changed between fetching the recommendations and the lexicon."""


@dataclass(frozen=True)
class GuidelineKnowledge:
    """Everything the engine needs, for one index version."""

    index_version: str
    guideline: GuidelineRef
    recommendations: dict[str, ServedRecommendation]
    lexicon: list[LexiconEntry]
    labels: dict[str, str]
    criteria_by_id: dict[str, Criterion] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # rec id -> why its criteria are not used
    # criteria.describe memo shared by every evaluation on this knowledge (words depend only on it)
    describe_cache: dict[int, tuple[Any, str]] = field(default_factory=dict, compare=False, repr=False)
    # tier 3 of reading a record (None when retrieval cannot embed: clauses then stay unread)
    semantic: SemanticMatcher | None = field(default=None, compare=False, repr=False)
    # what each criteria tree needs (the evaluation prefilter); derived from criteria_by_id
    index: CriteriaIndex = field(init=False, compare=False, repr=False)
    # primary-care-test recommendation id -> the tests it offers (lexicon test concepts it names)
    offered_tests: dict[str, frozenset[str]] = field(init=False, compare=False, repr=False)
    # every criteria tree in rec_applies dependency order (computed once, not per patient)
    eval_order: tuple[str, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "eval_order", tuple(dependency_order(self.criteria_by_id)))
        object.__setattr__(self, "index", CriteriaIndex.build(self.criteria_by_id))
        object.__setattr__(self, "offered_tests", _offered_tests(self.recommendations, self.lexicon))

    @property
    def safety_netting(self) -> list[ServedRecommendation]:
        recs = [r for r in self.recommendations.values() if r.section == SAFETY_NETTING_SECTION]
        return sorted(recs, key=lambda r: r.sort_key)

    def all_criteria_concepts(self) -> frozenset[str]:
        return self.index.all_concepts()


def _offered_tests(
    recommendations: dict[str, ServedRecommendation], lexicon: Sequence[LexiconEntry]
) -> dict[str, frozenset[str]]:
    """For each recommendation whose action is a test in primary care, the tests its text names
    ("offer quantitative faecal immunochemical testing (FIT)": fit)."""
    tests = [e for e in lexicon if e.kind == "test"]
    out: dict[str, frozenset[str]] = {}
    for rid, rec in recommendations.items():
        if rec.action != "primary_care_test":
            continue
        text = f" {normalise_phrase(rec.text, keep_stop_words=True)} "
        named = {
            e.concept
            for e in tests
            for term in (e.label, *e.terms, *e.synonyms)
            if (t := normalise_phrase(term, keep_stop_words=True)) and f" {t} " in text
        }
        out[rid] = frozenset(named)
    return out


def build_knowledge(
    recs: pb.GetRecommendationsResponse, lexicon_terms: list[Any], lexicon_version: str
) -> GuidelineKnowledge:
    """Assemble the knowledge from the two retrieval answers (which must name the same version)."""
    if lexicon_version and lexicon_version != recs.index_version:
        raise KnowledgeVersionChanged(
            f"retrieval switched index version while loading ({recs.index_version} -> {lexicon_version})"
        )
    infos: dict[str, ServedRecommendation] = {}
    skipped: dict[str, str] = {}
    for rec in recs.recommendations:
        info, problem = served_recommendation(rec)
        infos[info.id] = info
        if problem:
            skipped[info.id] = problem
    criteria = {rid: r.criteria for rid, r in infos.items() if r.criteria is not None}
    if not criteria:
        raise KnowledgeUnavailable(
            f"index {recs.index_version} has no usable criteria for sections 1.1-1.13; "
            "re-run ingestion to build a complete knowledge base"
        )
    lexicon = [lexicon_entry(t) for t in lexicon_terms]
    prepare_lexicon(lexicon)  # the matching index is built with the knowledge, not on a request
    return GuidelineKnowledge(
        index_version=recs.index_version,
        guideline=guideline_ref(recs.guideline, recs.index_version),
        recommendations=infos,
        lexicon=lexicon,
        labels={e.concept: e.label for e in lexicon},
        criteria_by_id=criteria,
        skipped=skipped,
    )


async def fetch_knowledge(retrieval: RetrievalClient) -> GuidelineKnowledge:
    """Ask retrieval for the recommendations and the lexicon of its active index."""
    recs, lexicon = await asyncio.gather(retrieval.get_recommendations(), retrieval.get_lexicon())
    return build_knowledge(recs, list(lexicon.terms), lexicon.index_version)


class KnowledgeCache:
    """The knowledge of the index version retrieval currently serves; refreshed when it changes."""

    def __init__(self, retrieval: RetrievalClient) -> None:
        self._retrieval = retrieval
        self._current: GuidelineKnowledge | None = None
        self._lock = asyncio.Lock()

    @property
    def current(self) -> GuidelineKnowledge | None:
        return self._current

    async def get(self, index_version: str | None = None) -> GuidelineKnowledge:
        """Knowledge for `index_version` (the one a Search just answered from), or any if None."""
        cached = self._current
        if cached is not None and (index_version is None or cached.index_version == index_version):
            return cached
        async with self._lock:
            cached = self._current
            if cached is not None and (index_version is None or cached.index_version == index_version):
                return cached
            try:
                fresh = await fetch_knowledge(self._retrieval)
            except KnowledgeVersionChanged:  # an activation between the two calls: ask once more
                fresh = await fetch_knowledge(self._retrieval)
            fresh = replace(fresh, semantic=await self._semantic(fresh))
            self._current = fresh
            return fresh

    async def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        reply = await self._retrieval.embed(texts, timeout=15.0)
        return np.asarray([list(e.values) for e in reply.embeddings], dtype=np.float32)

    async def _semantic(self, knowledge: GuidelineKnowledge) -> SemanticMatcher | None:
        """The tier-3 matcher for this version; None (logged) when retrieval cannot embed."""
        try:
            space = await ConceptSpace.build(knowledge.lexicon, self._embed)
        except (RetrievalError, ValueError) as exc:  # e.g. an old retrieval without Embed
            log.warning("semantic_tier_unavailable", error=str(exc))
            return None
        return SemanticMatcher(space, self._embed)
