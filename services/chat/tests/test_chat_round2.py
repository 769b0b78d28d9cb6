"""Issue 12, round 2: mixed requests in many phrasings, universal claims, process questions,
age groups named without an age, and the word overlap that orders process recommendations."""

from __future__ import annotations

from typing import Any

import pytest

from chat.group_words import groups_named
from chat.guardrails import mixed_request
from chat.knowledge import stems
from chat.premise import Claim, claims, universal_contradicted
from chat.query import asks_about_process
from ng12_common.served_recommendations import ServedRecommendation
from tests.support import served_recommendation


@pytest.mark.parametrize(
    ("message", "kind", "kept"),
    [
        ("is haemoptysis a 2WW and write me the letter", "task_request", "haemoptysis"),
        ("what does NG12 say about dyspepsia, and what omeprazole dose?", "treatment", "dyspepsia"),
        (
            "When should I refer a breast lump? Also what's the waiting time at our local hospital?",
            "logistics",
            "breast lump",
        ),
        (
            "Which patients with haematuria need a 2WW, and what's the prognosis for bladder cancer?",
            "treatment",
            "haematuria",
        ),
        ("refer criteria for melanoma; and the phone number for dermatology", "logistics", "melanoma"),
        ("what are the red flags for ovarian cancer + how is it treated", "treatment", "ovarian"),
        ("breast lump at 35, refer? / can you fill in the 2ww form", "task_request", "breast lump"),
        ("how is myeloma treated and which blood tests does NG12 suggest?", "treatment", "blood tests"),
        ("need the 2ww criteria for lung ca, then book her an appointment please", "logistics", "lung"),
        (
            "Draft a referral letter for my 70yo with iron deficiency anaemia, which NG12 rec applies?",
            "task_request",
            "iron deficiency anaemia",
        ),
    ],
)
def test_a_mixed_request_keeps_the_in_scope_part_and_names_the_rest(
    message: str, kind: str, kept: str
) -> None:
    found = mixed_request(message)
    assert found is not None
    text, declined = found
    assert kind in {k for _, k in declined}
    assert kept in text.lower()


def test_treatment_resistant_dyspepsia_is_not_a_treatment_request() -> None:
    assert mixed_request("treatment-resistant dyspepsia in a 60 year old: when to refer?") is None


def _rec(rid: str, text: str, criteria: dict[str, Any]) -> ServedRecommendation:
    return served_recommendation(rid, text, criteria=criteria, cancer_site="lung", strength="must", page=1)


def test_universal_claims_are_extracted_only_from_assertions() -> None:
    assert [c.kind for c in claims("NG12 says everyone with haemoptysis needs a chest X-ray")].count(
        "universal"
    ) == 1
    assert not claims("Does NG12 say anything about any patient with a neck lump?")
    never = [
        c for c in claims("NG12 says never refer rectal bleeding under 50, right?") if c.kind == "universal"
    ]
    assert never and never[0].value == "never"


def test_a_universal_claim_holds_only_for_every_age_it_covers() -> None:
    aged_40 = {
        "op": "all",
        "of": [{"op": "age_gte", "value": 40}, {"op": "symptom", "concept": "haemoptysis"}],
    }
    any_age = {"op": "symptom", "concept": "dysphagia"}
    rec40 = _rec("1.1.1", "Refer people aged 40 and over with unexplained haemoptysis.", aged_40)
    rec_any = _rec("1.2.1", "Refer people with dysphagia.", any_age)
    everyone = [Claim("universal", "everyone with it", "all")]

    def from_40(age: int) -> set[str]:  # the recommendations met at each age
        return {"1.1.1"} if age >= 40 else set()

    assert universal_contradicted(everyone, [rec40], from_40, {"haemoptysis"}) is not None
    assert universal_contradicted(everyone, [rec_any], lambda age: {"1.2.1"}, {"dysphagia"}) is None
    over_40 = [*everyone, Claim("age", "over 40", "40", "over")]
    assert universal_contradicted(over_40, [rec40], from_40, {"haemoptysis"}) is None
    never_under = [Claim("universal", "never", "never"), Claim("age", "under 50", "50", "under")]
    assert universal_contradicted(never_under, [rec40], from_40, {"haemoptysis"}) is not None
    never_under_30 = [Claim("universal", "never", "never"), Claim("age", "under 30", "30", "under")]
    assert universal_contradicted(never_under_30, [rec40], from_40, {"haemoptysis"}) is None


@pytest.mark.parametrize(
    "message",
    [
        "My patient has a symptom that cancer can cause but doesn't fulfil the referral criteria: now what?",
        "she doesn't quite meet the 2WW criteria - now what?",
        "the presentation is unusual and I am unsure if a referral is warranted",
    ],
)
def test_process_questions(message: str) -> None:
    assert asks_about_process(message)


def test_groups_named_without_an_age() -> None:
    assert groups_named("an adult presenting with enlarged lymph nodes") == ("adults",)
    assert groups_named("a child with bruising") == ("children", "children_and_young_people")
    assert groups_named("adults and children with lymphadenopathy") is None
    assert groups_named("lymphadenopathy") is None


def test_stems_match_everyday_and_guideline_wording() -> None:
    assert set(stems("What info should I give a patient I'm referring?")) >= {"info", "give", "refe"}
    assert "pare" in stems("Mum keeps coming back worried")
    assert "unce" in stems("not sure if I should refer her")


def test_the_age_each_symptom_goes_with_is_said() -> None:
    from chat.answer import symptom_ages

    either = {
        "op": "any",
        "of": [
            {"op": "symptom", "concept": "dysphagia"},
            {
                "op": "all",
                "of": [{"op": "age_gte", "value": 55}, {"op": "symptom", "concept": "weight_loss"}],
            },
        ],
    }
    rec = _rec("1.2.1", "Refer people with dysphagia, or aged 55 and over with weight loss.", either)
    assert symptom_ages([rec], ["dysphagia"]) == "In NG12, dysphagia has no age threshold (1.2.1)."
    assert symptom_ages([rec], ["weight_loss"]) == "In NG12, weight loss goes with aged 55 and over (1.2.1)."
    assert symptom_ages([rec], ["cough"]) is None


def test_the_criterion_met_is_said_in_ng12s_words() -> None:
    from chat.selection import met_in_words
    from ng12_common.criteria import AtomResult

    def atom(op: str, requirement: str, threshold: float | None = None) -> AtomResult:
        return AtomResult(op=op, met=True, requirement=requirement, evidence=requirement, threshold=threshold)

    # the ages come from the atoms' typed thresholds, never from their words
    adult, fifty = atom("age_gte", "age ≥ 18", 18), atom("age_gte", "aged 50 and over", 50)
    bleeding = atom("symptom", "unexplained rectal bleeding")
    assert met_in_words([adult, fifty, bleeding]) == "aged 50 and over with unexplained rectal bleeding"
    pain = atom("symptom", "unexplained abdominal pain")
    under = atom("age_lt", "age < 50", 50)
    assert met_in_words([adult, under, bleeding, pain]) == (
        "aged 18 to 49 with unexplained rectal bleeding and unexplained abdominal pain"
    )
    assert met_in_words([atom("rec_applies", "criteria of recommendation 1.3.1 met")]) == ""
    assert met_in_words([atom("sex", "sex female"), atom("test", "ca125 ≥ 35 IU/ml")]) == "ca125 ≥ 35 IU/ml"
