"""The guideline knowledge chat needs beyond search hits, cached per index version.

All canonical recommendations (`GetRecommendations`) with their structured criteria, and the
lexicon (`GetLexicon`; when the retrieval server predates that RPC, a lexicon built from the
concepts the criteria trees reference). Reloaded when retrieval reports a new index version.

A `Knowledge` also remembers what chat computes from it alone, for the version's lifetime (a new
version is a new `Knowledge`, so nothing outlives the index it was computed from): criteria
evaluations by the patient's facts and the recommendations evaluated (`evaluate`), and each
recommendation's counterpart for the other age group (`chat.selection.counterpart`), and the
clinical reading of a message (`read`).
"""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from chat.clinical import ClinicalState, extract
from ng12_common.citations import guideline_ref
from ng12_common.criteria import EvalContext, EvalResult, PatientFacts, evaluate_all, iter_nodes
from ng12_common.criteria_index import CriteriaIndex
from ng12_common.knowledge import LexiconEntry
from ng12_common.logs import get_logger
from ng12_common.memo import Memo
from ng12_common.models import GuidelineRef
from ng12_common.retrieval_client import RetrievalClient, RetrievalError
from ng12_common.served_recommendations import (
    LEXICON_KINDS,
    ServedRecommendation,
    lexicon_entry,
    served_recommendation,
)

log = get_logger("chat.knowledge")
EVALUATIONS_REMEMBERED = 2048  # criteria evaluations kept per index version (a few KB each)
READINGS_REMEMBERED = 4096  # clinical readings of messages kept per index version (~1 KB each)


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
    #: evaluate's results by (the facts' JSON, the recommendations evaluated)
    evaluations: Memo[tuple[str, frozenset[str]], dict[str, EvalResult]] = field(
        default_factory=lambda: Memo(EVALUATIONS_REMEMBERED), repr=False, compare=False
    )
    #: rec id -> its counterpart for the other age group (None: it has none); chat.selection fills it
    counterparts: dict[str, ServedRecommendation | None] = field(
        default_factory=dict, repr=False, compare=False
    )

    #: read's results by message text
    readings: Memo[str, ClinicalState] = field(
        default_factory=lambda: Memo(READINGS_REMEMBERED), repr=False, compare=False
    )

    def read(self, text: str) -> ClinicalState:
        """`chat.clinical.extract` of a message with this version's lexicon and cancer sites,
        remembered by the text; each caller gets its own copy."""
        reading = self.readings.get_or_compute(text, lambda: extract(text, self.lexicon, self.sites))
        return reading.model_copy(deep=True)

    def evaluate(self, facts: PatientFacts, only: frozenset[str]) -> dict[str, EvalResult]:
        """`evaluate_all` of these criteria for `only` (and the rec_applies targets they need),
        remembered by the facts (as `EvalContext.bind` compares them: by their JSON) and `only`.
        The results are shared: callers read them, never change them."""
        key = (facts.model_dump_json(), only)
        return self.evaluations.get_or_compute(key, lambda: evaluate_all(facts, self.context, only=only))

    @cached_property
    def sites(self) -> set[str]:
        return {r.cancer_site for r in self.recs.values() if r.cancer_site}

    @cached_property
    def idf(self) -> dict[str, float]:
        """Inverse document frequency of each word stem over the recommendations' text."""
        docs = [set(stems(r.text)) for r in self.recs.values()]
        counts: dict[str, int] = {}
        for doc in docs:
            for stem in doc:
                counts[stem] = counts.get(stem, 0) + 1
        return {stem: math.log((1 + len(docs)) / (1 + n)) for stem, n in counts.items()}

    def overlap(self, question: str, rec: ServedRecommendation) -> float:
        """How much of the question's wording a recommendation shares, weighted by how rare each
        shared word stem is in NG12 ("information ... give ... referring" and 1.14.5's "The
        information given to people ... being referred to")."""
        mine = set(stems(rec.text))
        return sum(self.idf.get(s, 0.0) for s in set(stems(question)) if s in mine)


#: Words a question uses that say nothing about which recommendation it means.
_STOP = frozenset(
    "what when which where whose does should would could will shall have has had this that these those "
    "with from about into they them their there then than your yours ng12 nice guideline guidelines "
    "recommend recommends recommendation say says said anything something advice patient patients "
    "person people someone also just only been being were some any more most very much such".split()
)


def stems(text: str) -> list[str]:
    """Crude word stems (the first 4 letters of each word of 4 or more letters that is not a
    question word): "referring", "referred", "referral" -> "refe"; "give", "given" -> "give"."""
    lowered = _NOT_SURE.sub("uncertainty", text.lower())
    words = re.findall(r"[a-z][a-z0-9]+", re.sub(r"\[\d{4}.*?\]", "", lowered))
    words = [m for w in words for m in _SAME_AS.get(w, w).split()]
    return [w[:4] for w in words if len(w) >= 4 and w not in _STOP]


#: Everyday words for the words NG12 itself uses for the same people and feelings: "parents or
#: carers", "child", "concern" (1.13.1, 1.14). Only words whose 4-letter stem differs from NG12's
#: word are listed ("anxious"/"anxiety" and "info"/"information" share theirs already; "unsure" and
#: "not sure" are read as "uncertainty" by _NOT_SURE).
_SAME_AS = {
    "mum": "parent",
    "mother": "parent",
    "dad": "parent",
    "father": "parent",
    "son": "child",
    "daughter": "child",
    "kid": "child",
    "kids": "child",
    "baby": "child",
    "worried": "concern",
    "worry": "concern",
    "worries": "concern",
    "uneasy": "concern",
    # what GPs call the referral process, in NG12's words (1.16.2, 1.16.3, 1.16.5-1.16.7)
    "ring": "telephone",
    "ringing": "telephone",
    "phone": "telephone",
    "phoning": "telephone",
    "call": "telephone",
    "calling": "telephone",
    "letter": "letter correspondence proformas",
    "letters": "letters correspondence proformas",
    "dna": "miss appointments",
    "dnas": "miss appointments",
    "routine": "non urgent",
}
_NOT_SURE = re.compile(r"\b(not sure|unsure|uncertain)\b")


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
