"""What chat remembers per index version gives the answers it would compute, and a new version
starts afresh: criteria evaluations, counterparts, cancer-site patterns, redacted texts."""

from __future__ import annotations

import re
from typing import Any

from google.protobuf.struct_pb2 import Struct

from chat.clinical import _site_words, extract
from chat.knowledge import KnowledgeCache
from chat.selection import _counterpart, counterpart
from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12_common.criteria import evaluate_all
from ng12_common.memo import Memo
from ng12_common.redaction import shared_redactor
from ng12_common.retrieval_client import RetrievalError

HAEMOPTYSIS_40 = {
    "op": "all",
    "of": [{"op": "age_gte", "value": 40}, {"op": "symptom", "concept": "haemoptysis"}],
}
HAEMOPTYSIS_ANY = {"op": "symptom", "concept": "haemoptysis"}


def _rec(rid: str, text: str, criteria: dict[str, Any], group: str) -> pb.CanonicalRecommendation:
    meta = Struct()
    meta.update({"criteria": criteria, "criteria_status": "curated", "population": {"age_group": group}})
    return pb.CanonicalRecommendation(
        id=rid, section="1.1", cancer_site="lung", text=text, action="suspected_cancer_pathway_referral",
        strength="refer", metadata=meta,
    )  # fmt: skip


class FakeRetrieval:
    """GetRecommendations of whichever index version is set as served; no lexicon RPC."""

    def __init__(self) -> None:
        self.version = "v1"

    async def get_recommendations(self) -> pb.GetRecommendationsResponse:
        adults = "Refer people aged 40 and over with unexplained haemoptysis."
        children = "Refer children and young people with unexplained haemoptysis."
        recs = [
            _rec("1.1.1", adults, HAEMOPTYSIS_40, "adults"),
            _rec("1.1.9", children, HAEMOPTYSIS_ANY, "children_and_young_people"),
        ]
        return pb.GetRecommendationsResponse(recommendations=recs, index_version=self.version)

    async def get_lexicon(self) -> Any:
        raise RetrievalError("no lexicon RPC")


async def test_evaluations_and_counterparts_are_remembered_per_index_version() -> None:
    retrieval = FakeRetrieval()
    cache = KnowledgeCache(retrieval)  # type: ignore[arg-type]
    first = await cache.get("v1")
    assert first is not None
    turn = extract("haemoptysis in a 52 year old", first.lexicon, first.sites)
    facts, only = turn.to_facts(), frozenset({"1.1.1", "1.1.9"})
    results = first.evaluate(facts, only)
    assert results == evaluate_all(facts, first.context, only=only)  # what evaluating gives
    assert results["1.1.1"].met and first.evaluate(facts, only) is results  # remembered
    younger = turn.model_copy(update={"age": 30}).to_facts()
    assert not first.evaluate(younger, only)["1.1.1"].met  # other facts: evaluated, not recalled
    adults = first.recs["1.1.1"]
    assert counterpart(adults, first) is first.recs["1.1.9"] == _counterpart(adults, first)
    assert first.counterparts == {"1.1.1": first.recs["1.1.9"]}

    retrieval.version = "v2"  # a new index version: a new Knowledge, nothing carried over
    second = await cache.get("v2")
    assert second is not None and second is not first and second.version == "v2"
    assert len(second.evaluations) == 0 and second.counterparts == {}
    assert second.evaluate(facts, only) is not results and second.evaluate(facts, only) == results


async def test_a_hit_copy_of_a_recommendation_is_not_remembered_as_the_versions() -> None:
    knowledge = await KnowledgeCache(FakeRetrieval()).get()  # type: ignore[arg-type]
    assert knowledge is not None
    copy = knowledge.recs["1.1.1"].__class__(**vars(knowledge.recs["1.1.1"]))
    assert counterpart(copy, knowledge) is knowledge.recs["1.1.9"]
    assert knowledge.counterparts == {}


def test_memo_forgets_the_least_recently_used_first() -> None:
    memo: Memo[str, int] = Memo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # "b" is now the least recently used
    memo.put("c", 3)
    assert memo.get("b") is None and memo.get("a") == 1 and memo.get("c") == 3
    assert memo.get_or_compute("d", lambda: 4) == 4 and len(memo) == 2
    off: Memo[str, int] = Memo(0)
    assert off.put("a", 1) == 1 and off.get("a") is None


def _reference_sites(message: str, sites: set[str]) -> list[str]:
    """extract's cancer sites as it read them before its patterns were compiled once per set."""

    def site_in(site: str, lowered: str) -> bool:
        words = site.lower().replace("_", " ")
        stem = words.rstrip("s") if len(words) > 5 else words
        return re.search(rf"\b{re.escape(stem)}", lowered) is not None

    lowered = message.lower()
    found = [s for s in sorted(sites, key=len, reverse=True) if s and site_in(s, lowered)]
    named = [
        s for s in sorted(sites, key=len, reverse=True) if any(site_in(w, lowered) for w in _site_words(s))
    ]
    if not found:
        return named
    return found + [
        s for s in named if s not in found and s.lower().split()[-1] not in {"lymphoma", "sarcoma"}
    ]


def test_site_patterns_find_what_searching_each_time_found() -> None:
    sites = {
        "lung", "Hodgkin's lymphoma", "non-Hodgkin's lymphoma", "basal cell carcinoma", "brain and CNS",
        "Wilms' tumour", "soft tissue sarcoma", "bone sarcoma", "testicular", "breast", "bladder", "kidney",
    }  # fmt: skip
    for message in [
        "lymphoma in a 30 year old", "BCC on the nose", "wilms / neuroblastoma recs", "NHL or lymphoma?",
        "a brain tumour in a child", "lungs and breasts", "sarcoma: bone or soft tissue?", "kidneys",
        "testicular lump", "bladder and kidney", "nothing here", "CNS lymphoma",
    ]:  # fmt: skip
        assert extract(message, [], sites).cancer_sites == _reference_sites(message, sites), message


def test_the_redactor_remembers_what_it_redacted() -> None:
    redactor = shared_redactor()
    text = "memo test: Mrs Jane Example, NHS 943 476 5919"
    assert redactor.remembered(text) is None
    redacted = redactor.redact(text)
    assert redacted == redactor._replace(text) and "<UK_NHS>" in redacted
    assert redactor.remembered(text) == redacted and redactor.redact(text) == redacted
    assert redactor.remembered("") == ""


async def test_readings_are_remembered_per_version_and_each_caller_gets_a_copy() -> None:
    retrieval = FakeRetrieval()
    cache = KnowledgeCache(retrieval)  # type: ignore[arg-type]
    knowledge = await cache.get()
    assert knowledge is not None
    message = "57M with haemoptysis for 3 weeks, lung?"
    first = knowledge.read(message)
    assert first == extract(message, knowledge.lexicon, knowledge.sites) and len(knowledge.readings) == 1
    first.symptoms.append("changed by a caller")
    assert knowledge.read(message) == extract(message, knowledge.lexicon, knowledge.sites)
    retrieval.version = "v2"
    newer = await cache.get("v2")
    assert newer is not None and len(newer.readings) == 0
