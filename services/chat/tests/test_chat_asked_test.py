"""The recommendations that name what the question asks are selected (chat.selection): imaging
asked without naming the scan, a test asked about for the patient's symptom (from all of NG12's,
not only what search found), a recommendation that names the patient's symptom in its text, and
the sex a symptom implies."""

from __future__ import annotations

from chat.knowledge import Knowledge, KnowledgeCache
from chat.selection import asked_for, select, with_implied_sex
from ng12_common.retrieval_client import RetrievalClient


async def _knowledge(retrieval_addr: str) -> Knowledge:
    knowledge = await KnowledgeCache(RetrievalClient(retrieval_addr, timeout_seconds=30.0)).get()
    assert knowledge is not None
    return knowledge


async def test_a_scan_asked_for_a_symptom_finds_ngs_scans_for_that_symptom(retrieval_addr: str) -> None:
    knowledge = await _knowledge(retrieval_addr)
    text = "60F, frank blood in urine twice this wk, MSU negative. urology 2ww or gynae scan??"
    turn = knowledge.read(text)
    urology = [(knowledge.recs["1.6.4"], 0.7)]  # search found the urology recommendation only
    asked = [r.id for r, _ in asked_for(text, urology, knowledge, turn)]
    assert "1.5.12" in asked  # direct access ultrasound, women 55 and over with visible haematuria
    assert all(r in knowledge.recs for r in asked)
    # imaging named without a scan: every scan NG12 recommends for weight loss, none for other symptoms
    turn = knowledge.read("61F lost 6kg not trying. what imaging does NG12 suggest?")
    imaging = [r.id for r, _ in asked_for("what imaging does NG12 suggest?", [], knowledge, turn)]
    assert "1.2.5" in imaging
    assert "1.5.12" not in imaging  # visible haematuria or vaginal discharge: not this patient's


async def test_a_recommendation_naming_the_symptom_in_words_is_kept(retrieval_addr: str) -> None:
    knowledge = await _knowledge(retrieval_addr)
    text = "pt with an unexplained anal ulcer - do i need to send off a FIT first before the 2ww?"
    turn = knowledge.read(text)
    found = [(knowledge.recs["1.3.6"], 0.7), (knowledge.recs["1.3.1"], 0.6)]
    sel = select(found, knowledge, turn, 5, text)
    # 1.3.1's criteria name other symptoms, but its text says anal ulceration needs no FIT first
    assert "1.3.1" in [r.id for r, _ in sel.recs]


async def test_a_symptom_only_one_sex_has_implies_the_sex(retrieval_addr: str) -> None:
    knowledge = await _knowledge(retrieval_addr)
    turn = knowledge.read("a 58 yo with new watery vaginal discharge, first time")
    assert turn.sex is None
    assert with_implied_sex(turn, knowledge).sex == "female"
    sel = select([(knowledge.recs["1.5.15"], 0.6)], knowledge, turn, 5, "")
    assert "1.5.12" in sel.met
    # a symptom of both sexes implies neither
    assert with_implied_sex(knowledge.read("58 yo with visible haematuria"), knowledge).sex is None
