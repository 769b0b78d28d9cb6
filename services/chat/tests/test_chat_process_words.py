"""Process questions in a GP's words: how soon a referral goes, getting someone seen sooner,
ringing the specialist, what goes in the letter, DNAs; found in NG12's own wording (1.16)."""

from __future__ import annotations

from chat.graph import PROCESS_SEARCHED, _process_first
from chat.knowledge import KnowledgeCache, stems
from chat.query import asks_about_process
from ng12_common.retrieval_client import RetrievalClient


def test_referral_timing_and_seeing_someone_sooner_are_process_questions() -> None:
    assert asks_about_process("how quickly should the referral be sent once I've decided?")
    assert asks_about_process("when do I need to send the referral by")
    assert asks_about_process("can she be seen sooner than the routine list?")
    # a clinical question about when to refer is not
    assert not asks_about_process("when should I refer a 50 year old with rectal bleeding?")


def test_everyday_words_carry_ng12s_wording() -> None:
    assert "tele" in stems("can I just call the oncologist")
    assert {"corr", "prof"} <= set(stems("what goes in the referral letter"))
    assert {"miss", "appo"} <= set(stems("what about DNAs"))
    assert "urge" in stems("a routine referral")


async def test_a_process_recommendation_named_by_wording_joins_what_search_found(retrieval_addr: str) -> None:
    client = RetrievalClient(retrieval_addr, timeout_seconds=30.0)
    knowledge = await KnowledgeCache(client).get()
    assert knowledge is not None
    question = "unsure whether these odd symptoms need a referral - can I phone the specialist first?"
    found = await client.search(question, top_k=10, mode="chat", sections=PROCESS_SEARCHED)
    hits = [h for h in found.hits if h.canonical]
    top = max(h.score for h in hits)
    first = _process_first(question, hits, knowledge, top)
    # 1.16.2: "Discussion with a specialist (for example, by telephone or email) ... uncertainty"
    assert first[0] == "1.16.2"
