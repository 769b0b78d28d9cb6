"""False premises in the phrasings GPs use: an age rule stated by a verb ("kicks in at 40"), a copula
between a test and its comparison ("platelets are over 600"), a cut-off "for his age", counts and
scores ("5 or more"), and a definition claimed for a term NG12 defines ("X = Y, that's the
definition"); and the patient facts and plain questions that must stay no claim. Wordings are this
file's own; the last tests go through chat with a real retrieval server and the NG12 index."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from chat.clinical import ClinicalState
from chat.definitions import claimed_definition
from chat.premise import check, claims, definition_contradicted, stated_counts
from chat.query import build
from ng12_common.served_recommendations import ServedRecommendation
from tests.support import served_recommendation

from .conftest import ask, cited


def rec(rid: str, text: str, criteria: dict[str, Any] | None = None) -> ServedRecommendation:
    return served_recommendation(rid, text, criteria=criteria, strength="offer")


def kinds(message: str) -> set[tuple[str, str, str | None]]:
    return {(c.kind, c.value, c.subject) for c in claims(message)}


def ages(message: str) -> list[tuple[str, str | None, bool]]:
    return [(c.value, c.subject, c.only) for c in claims(message) if c.kind == "age"]


# --- an age rule stated by a verb -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "value", "only"),
    [
        ("NICE's 2WW for a testicular lump only kicks in at 25, correct?", "25", True),
        ("I was told the NG12 bowel FIT rule starts at 50", "50", False),
        ("NG12's haematuria pathway applies from 45 so refer, right?", "45", False),
        ("apparently the NICE lung rule begins at age 60", "60", False),
        ("NG12 gives a 2ww only at 55 for dyspepsia, isn't it?", "55", True),
        ("NG12 says not until 60 for weight loss, right?", "60", True),
        ("NICE: CXR from 40 in smokers with cough", "40", False),
        ("NG12 refers from the age of 30 onwards, right?", "30", False),
        ("NG12 says refer 50 and upwards, right?", "50", False),
    ],
)
def test_an_age_rule_stated_by_a_verb(message: str, value: str, only: bool) -> None:
    assert (value, "over", only) in ages(message)


@pytest.mark.parametrize(
    "message",
    [
        "NG12 says refer, right? His weight is down from 80 to 71 kg.",
        "NG12 says refer when the PSA rose from 3 to 5, right?",
        "NG12 says to review her in 2 weeks from 9am tomorrow, right?",
        "47yo, NICE says refer from a 54yo threshold?",
    ],
)
def test_a_change_or_a_time_is_not_an_age_rule(message: str) -> None:
    assert not [a for a in ages(message) if a[0] in ("80", "3", "9", "47")]


def test_a_plain_question_about_an_age_claims_nothing() -> None:
    assert claims("from what age does NG12 want a FIT for rectal bleeding?") == []
    assert claims("at what age does the NG12 breast rule kick in?") == []


# --- a copula between a test and its comparison ------------------------------------------------------


def test_a_copula_between_a_test_and_its_comparison() -> None:
    assert ("threshold", "700", "platelets") in kinds("NG12 wants an X-ray only if platelets are over 700?")
    assert ("threshold", "6", "psa") in kinds("NICE refers when the PSA is above 6, right?")
    assert ("threshold", "20", "fit") in kinds("NG12 says 2ww if the FIT was over 20, right?")  # a condition
    found = kinds("71yo whose platelets were over 700, NG12 says an X-ray, right?")
    assert not [k for k in found if k[0] == "threshold"]  # the patient's own result
    assert not [k for k in kinds("plt 520 in a 61yo, NG12 says X-ray, right?") if k[0] == "threshold"]


def test_a_threshold_named_by_a_test_ng12_gives_no_number_for_is_contradicted() -> None:
    xray = rec("9.1.1", "Consider an urgent chest X-ray in people aged 40 and over with thrombocytosis.")
    found = claims("NG12 wants an X-ray only if platelets are over 700?")
    contradicted, quoted = check(found, [xray], [xray])
    assert [c.value for c in contradicted] == ["700"] and quoted == [xray]


# --- a cut-off for the patient's age ---------------------------------------------------------------

PSA_TABLE = rec(
    "9.2.1",
    "Refer if their PSA levels are above the threshold for their age in table 1.",
    criteria={
        "op": "test_by_age",
        "name": "psa",
        "unit": "micrograms/litre",
        "bands": [
            {"age_gte": 50, "age_lt": 60, "comparator": ">", "value": 3.5},
            {"age_gte": 60, "age_lt": 70, "comparator": ">", "value": 4.5},
        ],
    },
)


def test_a_cut_off_for_the_patients_age_is_that_age_bands() -> None:
    wrong = [
        c
        for c in claims("63M, PSA 4.1. NICE cut-off for his age is 3.5 so 2ww, yes?")
        if c.kind == "threshold"
    ]
    assert [(c.value, c.subject, c.ages) for c in wrong] == [("3.5", "psa", (63, 64))]
    assert check(wrong, [PSA_TABLE], [PSA_TABLE])[0] == wrong
    right = [
        c for c in claims("63M, PSA 4.1. NICE cut-off for his age is 4.5, yes?") if c.kind == "threshold"
    ]
    assert right and check(right, [PSA_TABLE], [PSA_TABLE])[0] == []


# --- counts and scores ----------------------------------------------------------------------------

CHECKLIST = rec(
    "9.3.1",
    "Refer for melanoma if they have a pigmented skin lesion with a weighted 7-point checklist score of 3 or "
    "more. Major features (scoring 2 points each). Minor features: largest diameter 7 mm or more.",
)
TWO_OF = rec("9.3.2", "Offer an X-ray if they have 2 or more of the following unexplained symptoms.")
NO_COUNT = rec("9.3.3", "Consider a suspected cancer pathway referral for a skin lesion like that.")


@pytest.mark.parametrize(
    ("message", "value"),
    [
        ("I thought NG12 needed 4 or more for the 2ww?", "4"),
        ("surely NICE wants at least 4 on the checklist", "4"),
        ("NG12 says a score of 5 or above, right?", "5"),
        ("i thought you needed 6 points to refer?", "6"),
        ("NG12 says ≥4, right?", "4"),
        ("NICE says 3+ symptoms for an X-ray, right?", "3"),
    ],
)
def test_counts_and_scores_read_as_claims(message: str, value: str) -> None:
    assert ("count", value, None) in kinds(message)
    assert not [a for a in ages(message) if a[0] == value]  # a count, not an age


@pytest.mark.parametrize(
    "message",
    [
        "she scored 4, NG12 says refer, right?",
        "NG12 says a 2ww, right? he's got 5 or more moles",
        "lost 5 kg, NG12 says CT at 60 and over, right?",
        "NG12 says at least 3 weeks of hoarseness, right?",
        "NG12 says a lesion 7 mm or more, right?",
        "how many points does NG12 need for a 2ww?",
    ],
)
def test_a_patients_count_a_measure_or_a_question_is_no_count_claim(message: str) -> None:
    assert not [k for k in kinds(message) if k[0] == "count"]


def test_a_bare_score_beside_a_compared_one_is_the_patients() -> None:
    found = [
        c
        for c in claims("checklist total 4 here, NG12 says a score of 5 or more, right?")
        if c.kind == "count"
    ]
    assert [c.value for c in found] == ["5"]


def test_a_count_is_checked_against_the_counts_the_topic_states() -> None:
    assert stated_counts(CHECKLIST) == {"3"} and stated_counts(TWO_OF) == {"2"}
    (five,) = [c for c in claims("I thought NG12 needed 5 or more for the 2ww?") if c.kind == "count"]
    contradicted, quoted = check([five], [CHECKLIST, NO_COUNT], [CHECKLIST], [CHECKLIST, NO_COUNT], {"x"})
    assert contradicted == [five] and quoted == [CHECKLIST]
    (three,) = [c for c in claims("I thought NG12 needed 3 or more for the 2ww?") if c.kind == "count"]
    assert check([three], [CHECKLIST], [CHECKLIST], [CHECKLIST], {"x"})[0] == []
    assert check([five], [NO_COUNT], [NO_COUNT], [NO_COUNT], {"x"})[0] == []  # no count stated: no verdict


# --- a definition claimed for a term NG12 defines -----------------------------------------------------

DEFINED = {
    "Suspected cancer pathway referral": "Person to receive a diagnosis or ruling out of cancer within "
    "28 days of being referred urgently by their GP for suspected cancer.",
    "Very urgent": "To happen within 48 hours.",
    "Urgent": "To happen or be done before 2 weeks.",
    "Immediate": "An acute admission or referral occurring within a few hours, or even more quickly "
    "if necessary.",
    "Children": "From birth to 15 years.",
    "Young people": "Aged 16 to 24 years.",
    "Persistent": "The continuation of specified symptoms beyond a period that would normally be associated "
    "with self-limiting problems. The precise period will vary.",
}


def verdict(message: str) -> list[str]:
    found = claimed_definition(message)
    assert found is not None, message
    term, what = found
    return [c.text for c in definition_contradicted(term, what, DEFINED[term])]


@pytest.mark.parametrize(
    "message",
    [
        "2ww = seen by a specialist within 14 days, that's the NG12 definition?",
        "very urgent means within 1 week, right?",
        "NICE defines urgent as within 4 weeks, yes?",
        "the definition of children in NG12 is under 18, correct?",
        "NG12 classes young people as 18 to 30, right?",
        "persistent is more than 3 weeks - that's NICE's definition, isn't it?",
    ],
)
def test_a_definition_ng12_does_not_give_is_contradicted(message: str) -> None:
    assert verdict(message)


@pytest.mark.parametrize(
    "message",
    [
        "suspected cancer pathway = diagnosis within 28 days, right?",
        "very urgent means within 2 days, right?",
        "urgent = 2 weeks, right?",
        "NG12 defines children as under 16, right?",
        "young people means 16-24, yes?",
        "immediate means within 4 hours, right?",
    ],
)
def test_a_definition_ng12_gives_holds(message: str) -> None:
    assert verdict(message) == []


def test_a_question_about_a_term_claims_no_definition() -> None:
    assert claimed_definition("what does very urgent mean?") is None
    assert claimed_definition("very urgent = how long?") is None
    assert claimed_definition("NG12 says 2ww for haemoptysis, right?") is None


def test_a_claim_naming_nothing_of_its_own_follows_the_conversation() -> None:
    state = ClinicalState(symptoms=["pigmented_skin_lesion"])
    assert build("hmm NG12 wants 5 or more, no?", True, "melanoma", state).strategy == "direct"
    assert build("hmm NG12 wants 5 or more, no?", True, "melanoma", state, follows=True).strategy == "topic"
    assert build("hmm NG12 wants 5 or more, no?", False, None, state, follows=True).strategy == "direct"


# --- through chat, with a real retrieval server and the NG12 index ----------------------------------


@pytest.fixture
def client(ready_client: TestClient) -> TestClient:
    return ready_client


def test_phrasings_of_false_premises_through_chat(client: TestClient) -> None:
    sid = f"phrasing-{uuid.uuid4().hex[:8]}"
    ask(
        client, sid, "pigmented lesion on her arm, bigger over 3 months with an irregular outline. 7pt score?"
    )
    body = ask(client, sid, "really? i thought NG12 needed 6 or more for the 2ww?")
    assert body["grounding"] == "contradicted" and "1.7.1" in cited(body), body["answer"]
    body = ask(
        client, f"phrasing-{uuid.uuid4().hex[:8]}", "very urgent = within a week, that's the NG12 definition?"
    )
    assert body["grounding"] == "contradicted" and "within 48 hours" in body["answer"], body["answer"]
    body = ask(
        client, f"phrasing-{uuid.uuid4().hex[:8]}", "32F unexplained breast lump, NICE 2ww starts at 40, yes?"
    )
    assert body["grounding"] == "contradicted" and "1.4.1" in cited(body), body["answer"]


def test_true_phrasings_are_answered_through_chat(client: TestClient) -> None:
    body = ask(client, f"phrasing-{uuid.uuid4().hex[:8]}", "very urgent means within 48 hours, right?")
    assert body["grounding"] != "contradicted", body["answer"]
    body = ask(
        client, f"phrasing-{uuid.uuid4().hex[:8]}", "32F unexplained breast lump, NICE 2ww starts at 30, yes?"
    )
    assert body["grounding"] != "contradicted" and "1.4.1" in cited(body), body["answer"]


@pytest.mark.parametrize(
    "message",
    [
        "I'm assuming a 48yo with food sticking doesn't need a 2WW as she's under 55?",
        "lesion scores 3, has to be 4 or more before it's a 2WW though hasn't it?",
        "FIT only counts as positive above 20 so 14 can be safety netted - agree?",
    ],
)
def test_assumptions_and_further_tag_questions_assert_a_claim(message: str) -> None:
    assert claims(message)


def test_a_rule_that_has_to_be_n_or_more_is_a_count_not_the_patients() -> None:
    assert ("count", "4", None) in kinds(
        "she scores 3. Has to be 4 or more before it's a 2WW though hasn't it?"
    )
    assert not any(k == "count" for k, _v, _s in kinds("he has 5 or more moles, is that right?"))


def test_what_makes_a_result_positive_is_the_tests_cut_off_not_an_age() -> None:
    found = kinds("FIT only counts as positive above 20 so 14 can be safety netted - agree?")
    assert ("threshold", "20", "fit") in found
    assert not any(k == "age" for k, _v, _s in found)
