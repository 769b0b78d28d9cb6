"""The guideline knowledge chat needs beyond search hits, cached per index version.

All canonical recommendations (`GetRecommendations`) with their structured criteria, and the
lexicon (`GetLexicon`; when the retrieval server predates that RPC, a lexicon built from the
concepts the criteria trees reference). Reloaded when retrieval reports a new index version.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from google.protobuf.json_format import MessageToDict

from ng12_common.citations import guideline_ref
from ng12_common.criteria import EvalContext, iter_nodes, parse_criteria
from ng12_common.criteria_index import CriteriaIndex
from ng12_common.knowledge import LexiconEntry
from ng12_common.logs import get_logger
from ng12_common.models import GuidelineRef
from ng12_common.retrieval_client import RetrievalClient, RetrievalError

log = get_logger("chat.knowledge")
_KINDS = {"symptom", "finding", "test", "history", "abbreviation", "other"}


@dataclass(frozen=True)
class Rec:
    """One canonical recommendation, as chat uses it."""

    id: str
    section: str
    section_title: str
    cancer_site: str
    page: int
    text: str
    action: str
    strength: str
    timeframe: str
    population: dict[str, Any] = field(default_factory=dict)
    criteria: dict[str, Any] | None = None


def rec_from_pb(message: Any) -> Rec:
    meta = MessageToDict(message.metadata) if message.HasField("metadata") else {}
    criteria = meta.get("criteria")
    return Rec(
        id=message.id,
        section=message.section,
        section_title=message.section_title,
        cancer_site=message.cancer_site,
        page=message.page,
        text=message.text,
        action=message.action,
        strength=message.strength,
        timeframe=message.timeframe,
        population=dict(meta.get("population") or {}),
        criteria=criteria if isinstance(criteria, dict) and criteria.get("op") else None,
    )


@dataclass
class Knowledge:
    version: str
    recs: dict[str, Rec]
    lexicon: list[LexiconEntry]
    context: EvalContext
    index: CriteriaIndex  # what each criteria tree needs: evaluate only what a patient can meet
    guideline: GuidelineRef  # the guideline this version was built from (for every answer)

    @cached_property
    def sites(self) -> set[str]:
        return {r.cancer_site for r in self.recs.values() if r.cancer_site}


def _criteria_lexicon(recs: dict[str, Rec]) -> list[LexiconEntry]:
    concepts: dict[str, str] = {}
    for rec in recs.values():
        if rec.criteria is None:
            continue
        try:
            tree = parse_criteria(rec.criteria)
        except ValueError:
            continue
        for node in iter_nodes(tree):
            concept = getattr(node, "concept", None)
            if isinstance(concept, str):
                concepts.setdefault(concept, str(getattr(node, "op", "symptom")))
    return [
        LexiconEntry(concept=c, kind=k if k in _KINDS else "symptom", label=c.replace("_", " "))  # type: ignore[arg-type]
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
                lexicon = [
                    LexiconEntry(
                        concept=t.concept,
                        kind=t.kind if t.kind in _KINDS else "symptom",  # type: ignore[arg-type]
                        label=t.label or t.concept.replace("_", " "),
                        synonyms=list(t.synonyms),
                    )
                    for t in terms
                ]
            except RetrievalError:
                lexicon = []
            if not lexicon:
                lexicon = _criteria_lexicon(recs)
            context = EvalContext({rid: r.criteria for rid, r in recs.items()})
            index = CriteriaIndex.build({k: v for k, v in context.criteria_by_id.items() if v is not None})
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
