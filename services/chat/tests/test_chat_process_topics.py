"""Process questions read by what they ask (chat.process_topics): each topic a question asks brings
NG12's recommendations worded that way, in the order asked (1.14-1.16, 1.3.3-1.3.4)."""

from __future__ import annotations

import pytest

from chat.knowledge import KnowledgeCache
from chat.process_topics import answering, asked_topics
from chat.query import asks_about_process
from ng12_common.retrieval_client import RetrievalClient


def _names(text: str) -> list[str]:
    return [t.name for t in asked_topics(text)]


def test_what_to_tell_depends_on_whether_the_person_is_referred() -> None:
    assert _names("about to do a 2ww for a 58F. what should i be telling her?") == [
        "what to tell someone being referred"
    ]
    names = _names(
        "doesn't meet any 2WW criteria but is anxious. what should I tell her and how do I follow her up?"
    )
    assert "what to tell someone not referred" in names
    assert "what to tell someone being referred" not in names
    assert "safety netting" in names


def test_whether_to_mention_cancer_is_what_to_tell() -> None:
    text = "NG12 says best not to mention cancer when doing a 2WW so we don't scare people, right?"
    assert _names(text) == ["what to tell someone being referred"]


def test_a_question_about_the_guideline_itself_asks_no_process_topic() -> None:
    # "tell me" is the GP asking the assistant, not what to tell the patient
    assert _names("can you tell me what NG12 says about haemoptysis in a 45 year old smoker?") == []
    assert _names("60F, Hb was 98, visible haematuria - 2ww?") == []
    assert _names("no FIT done yet, 62M change in bowel habit") == []
    assert not asks_about_process("when should I refer a 50 year old with rectal bleeding?")


def test_every_topic_of_a_two_part_question_is_read_in_order() -> None:
    text = (
        "she's the main carer for her disabled husband, anything on that? "
        "and how soon does the referral have to go off"
    )
    assert _names(text) == ["additional support needs", "how soon the referral is sent"]
    assert asks_about_process(text)


def test_uncertainty_needs_the_referral_or_specialist_in_view() -> None:
    assert _names("odd presentation, i genuinely dont know if it warrants a referral") == [
        "uncertainty whether to refer"
    ]
    assert _names("not sure if I've read the notes right, 54M haemoptysis") == []


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("sending a 2WW for ?bowel ca today - what does NG12 say I should tell her?", ["1.14.3", "1.14.5"]),
        (
            "pt doesn't meet any 2WW criteria but is really anxious. "
            "what should i tell her and how do i follow her up?",
            ["1.14.9", "1.15.2", "1.14.8"],
        ),
        ("i genuinely dont know if it warrants a referral, any advice?", ["1.16.2"]),
        (
            "main carer for her husband with dementia. and how soon does the referral have to go off",
            ["1.14.11", "1.16.8"],
        ),
        ("2WW sent, pt very anxious while waiting for the appointment", ["1.14.10"]),
        ("what if she just never sends the sample back?", ["1.3.3", "1.3.4"]),
        ("CXR already done last wk, reported normal. can i hold off then?", ["1.15.1"]),
        ("if i'm uneasy can I get her seen faster than a routine?", ["1.16.2", "1.16.3"]),
    ],
)
async def test_each_topic_brings_the_recommendations_worded_that_way(
    retrieval_addr: str, question: str, expected: list[str]
) -> None:
    knowledge = await KnowledgeCache(RetrievalClient(retrieval_addr, timeout_seconds=30.0)).get()
    assert knowledge is not None
    found = answering(question, knowledge.recs, 5)
    assert set(expected) <= set(found), found
    assert found[0] == expected[0]
