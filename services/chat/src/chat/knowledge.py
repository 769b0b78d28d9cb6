"""The guideline knowledge chat needs beyond search hits, cached per index version.

All canonical recommendations (`GetRecommendations`) with their structured criteria, and the
lexicon (`GetLexicon`; when the retrieval server predates that RPC, a lexicon built from the
concepts the criteria trees reference). Reloaded when retrieval reports a new index version.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ng12_common.citations import guideline_ref
from ng12_common.criteria import EvalContext, iter_nodes
from ng12_common.criteria_index import CriteriaIndex
from ng12_common.knowledge import LexiconEntry
from ng12_common.logs import get_logger
from ng12_common.models import GuidelineRef
from ng12_common.retrieval_client import RetrievalClient, RetrievalError
from ng12_common.served_recommendations import (
    LEXICON_KINDS,
    ServedRecommendation,
    lexicon_entry,
    served_recommendation,
)

log = get_logger("chat.knowledge")


def rec_from_pb(message: Any) -> ServedRecommendation:
    """A hit's or GetRecommendations' recommendation (criteria only when usable: never stale)."""
    return served_recommendation(message)[0]


@dataclass
class Knowledge:
    version: str
    recs: dict[str, ServedRecommendation]
    lexicon: list[LexiconEntry]
    context: EvalContext
    index: CriteriaIndex  # what each criteria tree needs: evaluate only what a patient can meet
    guideline: GuidelineRef  # the guideline this version was built from (for every answer)

    @cached_property
    def sites(self) -> set[str]:
        return {r.cancer_site for r in self.recs.values() if r.cancer_site}


def _criteria_lexicon(recs: dict[str, ServedRecommendation]) -> list[LexiconEntry]:
    concepts: dict[str, str] = {}
    for rec in recs.values():
        if rec.criteria is None:
            continue
        for node in iter_nodes(rec.criteria):
            concept = getattr(node, "concept", None)
            if isinstance(concept, str):
                concepts.setdefault(concept, str(getattr(node, "op", "symptom")))
    return [
        LexiconEntry(concept=c, kind=k if k in LEXICON_KINDS else "symptom", label=c.replace("_", " "))  # type: ignore[arg-type]
        for c, k in concepts.items()
    ]


class KnowledgeCache:
    def __init__(self, retrieval: RetrievalClient) -> None:
        self._retrieval = retrieval
        self._current: Knowledge | None = None
        self._lock = asyncio.Lock()

    @property
    def current(self) -> Knowledge | None:
        """The knowledge loaded last (None before the first turn that searched)."""
        return self._current

    async def get(self, version: str | None = None) -> Knowledge | None:
        """Knowledge for `version` (loaded once; None: whatever version retrieval serves now, the
        start-up warm-up); None when retrieval cannot supply it."""
        current = self._current
        if current is not None and (version is None or current.version == version):
            return current
        async with self._lock:
            if self._current is not None and (version is None or self._current.version == version):
                return self._current
            try:
                reply = await self._retrieval.get_recommendations()
            except RetrievalError as exc:
                log.warning("chat_knowledge_unavailable", error=str(exc))
                return self._current
            version = reply.index_version
            recs = {m.id: rec_from_pb(m) for m in reply.recommendations}
            lexicon: list[LexiconEntry]
            try:
                terms = (await self._retrieval.get_lexicon()).terms
                lexicon = [lexicon_entry(t) for t in terms]
            except RetrievalError:
                lexicon = []
            if not lexicon:
                lexicon = _criteria_lexicon(recs)
            criteria = {rid: r.criteria for rid, r in recs.items() if r.criteria is not None}
            context = EvalContext(criteria)
            index = CriteriaIndex.build(criteria)
            self._current = Knowledge(
                version=version,
                recs=recs,
                lexicon=lexicon,
                context=context,
                index=index,
                guideline=guideline_ref(reply.guideline, version),
            )
            log.info("chat_knowledge_loaded", version=version, recommendations=len(recs), terms=len(lexicon))
            return self._current
