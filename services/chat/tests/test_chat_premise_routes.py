"""False premises NG12's words alone do not catch: a route, urgency or deadline claimed for findings
(checked against the actions of the recommendations met, chat.premise_action), an urgency claimed
to be one group's only, deadlines and definitions NG12 does not give, a cut-off beside a measured
test, a result claimed to make a repeat test unnecessary; and the guardrails around them ("?panc"
is shorthand, a process question in a conversation is the conversation's). Wordings are this
file's own; the last tests go through chat with a real retrieval server and the NG12 index."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from fastapi.testclient import TestClient

from chat.definitions import claims_definition, defined_terms
from chat.group_words import restricted_group
from chat.guardrails import clauses, rule_scope
from chat.premise import Claim, check, claimed_text, claims
from chat.premise_action import (
    NON_URGENT,
    TWO_WEEKS,
    VERY_URGENT,
    actions_said,
    claimed_actions,
    group_contradicted,
    probe_ages,
    route_contradicted,
)
from ng12_common.criteria import (
    EvalContext,
    EvalResult,
    PatientFacts,
    SymptomFact,
    evaluate_all,
)
from ng12_common.served_recommendations import ServedRecommendation
from tests.support import served_recommendation

from .conftest import ask, cited


def rec(
    rid: str, text: str, action: str, criteria: dict[str, Any], group: str = "any"
) -> ServedRecommendation:
    return served_recommendation(rid, text, action=action, criteria=criteria, group=group)


def symptom(concept: str, *modifiers: str) -> dict[str, Any]:
    return {"op": "symptom", "concept": concept, "modifiers": list(modifiers)}


# a made-up pair on one finding: a non-urgent referral at 60 and over for "recurrent infection", and a
# suspected cancer pathway referral that needs "bleeding" without the infection
ROUTINE = rec(
    "9.1.1",
    "Consider non-urgent referral in people aged 60 and over with recurrent infection.",
    "non_urgent_referral",
    {"op": "all", "of": [{"op": "age_gte", "value": 60}, symptom("infection")]},
)
PATHWAY = rec(
    "9.1.2",
    "Refer people using a suspected cancer pathway referral if they have bleeding without infection.",
    "suspected_cancer_pathway_referral",
    {
        "op": "all",
        "of": [symptom("bleeding", "visible"), {"op": "not", "criterion": symptom("infection")}],
    },
)
FBC = rec(
    "9.2.1",
    "Consider a very urgent full blood count (within 48 hours) in adults with bruising.",
    "very_urgent_investigation",
    symptom("bruising"),
    group="adults",
)
IMMEDIATE = rec(
    "9.2.2",
    "Refer children and young people for immediate specialist assessment if they have bruising.",
    "immediate_referral",
    {"op": "all", "of": [{"op": "age_lt", "value": 25}, symptom("bruising")]},
    group="children_and_young_people",
)


def results_for(
    recs: list[ServedRecommendation], symptoms: set[str], negated: frozenset[str] = frozenset()
) -> Callable[[int], Mapping[str, EvalResult]]:
    context = EvalContext({r.id: r.criteria for r in recs})

    def results_at(age: int) -> Mapping[str, EvalResult]:
        facts = PatientFacts(
            age=age,
            symptoms={s: SymptomFact(modifiers={"unexplained"}) for s in symptoms},
            findings=set(symptoms),
            negated=set(negated),
        )
        return evaluate_all(facts, context)

    return results_at


def test_urgencies_name_ng12s_actions() -> None:
    assert claimed_actions(Claim("action", "2ww", "suspected cancer pathway")) == TWO_WEEKS
    assert claimed_actions(Claim("action", "routine referral", "non-urgent")) == NON_URGENT
    assert claimed_actions(Claim("interval", "within 48h", "48 hour", "deadline")) == VERY_URGENT
    assert claimed_actions(Claim("interval", "for 3 weeks", "3 week", "duration")) is None
    assert probe_ages([Claim("age", "over 60", "60", "over")], 30) == (60, 65, 75, 85)
    assert probe_ages([], 47) == (47,)


def test_a_route_the_findings_do_not_get_is_contradicted() -> None:
    found = [Claim("action", "2ww", "suspected cancer pathway"), Claim("age", "over 60", "60", "over")]
    pool = [ROUTINE, PATHWAY]
    verdict = route_contradicted(
        found, pool, results_for(pool, {"infection"}, frozenset({"bleeding"})), (60, 75)
    )
    assert verdict is not None and verdict.claim.text == "2ww"
    assert verdict.quoted == ["9.1.1", "9.1.2"]  # what is met first, then the route claimed
    assert verdict.said == "For these findings NG12 gives: non-urgent referral (9.1.1)."


def test_a_route_the_findings_can_get_is_not_contradicted() -> None:
    pool = [ROUTINE, PATHWAY]
    two_week = [Claim("action", "2ww", "suspected cancer pathway")]
    # bleeding given without the modifier NG12 names ("visible"): the claim may still hold
    assert route_contradicted(two_week, pool, results_for(pool, {"bleeding"}), (50,)) is None
    routine = [Claim("action", "routine referral", "non-urgent")]
    assert route_contradicted(routine, pool, results_for(pool, {"infection"}), (70,)) is None
    # nothing with a timeframe met (infection at 40): no verdict either way
    assert route_contradicted(two_week, pool, results_for(pool, {"infection"}), (40,)) is None


def test_a_deadline_beside_a_test_is_checked_against_that_tests_recommendations() -> None:
    found = [
        Claim("interval", "within 2 weeks", "2 week", "deadline"),
        Claim("test", "FBC", "full blood count"),
    ]
    pool = [FBC, IMMEDIATE]
    verdict = route_contradicted(found, pool, results_for(pool, {"bruising"}), (40,))
    assert verdict is not None and verdict.quoted == ["9.2.1"]
    right = [Claim("interval", "within 48 hours", "48 hour", "deadline"), found[1]]
    assert route_contradicted(right, pool, results_for(pool, {"bruising"}), (40,)) is None


def test_an_urgency_said_to_be_one_groups_only() -> None:
    assert restricted_group("the immediate referral, which is for children only") == ("children", "children")
    assert restricted_group("that's reserved for kids") == ("kids", "children")
    assert restricted_group("immediate referral for children and young people") is None
    found = [Claim("urgency", "immediate", "immediate")]
    pool = [FBC, IMMEDIATE]
    results = results_for(pool, {"bruising"})
    verdict = group_contradicted(found, ("kids", "children"), pool, results, 21)
    assert verdict is not None and verdict.claim.text == "immediate is only for kids"
    assert verdict.quoted[0] == "9.2.2"
    assert group_contradicted(found, ("kids", "children"), pool, results, 9) is None  # a child: true
    assert group_contradicted(found, ("adults", "adults"), pool, results, 30) is None


def test_actions_said_in_ng12s_vocabulary() -> None:
    assert actions_said([FBC, IMMEDIATE]) == (
        "For these findings NG12 gives: very urgent investigation (within 48 hours) (9.2.1); "
        "immediate referral (9.2.2)."
    )
    assert actions_said([]) == ""


def kinds(message: str) -> set[tuple[str, str, str | None]]:
    return {(c.kind, c.value, c.subject) for c in claims(message)}


def test_deadlines_and_definitions_read_as_claims() -> None:
    assert ("interval", "1 week", "deadline") in kinds(
        "Surely NG12 allows up to a week to get the referral off?"
    )
    assert ("interval", "3 month", "duration") in kinds("NICE defines persistent as >3 months, right?")
    assert ("test", "full blood count", "full blood count") in kinds(
        "NG12 says an FBC within 2 weeks, right?"
    )


def test_a_small_over_or_under_beside_a_measured_test_is_its_cut_off() -> None:
    found = kinds("CA125 came back 31, I thought NG12 treats under 35 as fine")
    assert ("threshold", "35", "ca125") not in found  # 35 is an age-sized number: left to the age rules
    found = kinds("PSA of 2.9 in a 64 year old, that's below 3 so NG12 is happy, right?")
    assert ("threshold", "3", "psa") in found and not [k for k in found if k[0] == "age"]


def test_a_result_claimed_to_make_a_repeat_test_unnecessary() -> None:
    (claim,) = [
        c for c in claims("She had a clear FIT last year so NG12 says we don't need to repeat the FIT?")
    ]
    assert (claim.kind, claim.text) == ("waived", "don't need to repeat the FIT")
    fit = rec(
        "9.3.1",
        "Offer FIT ... FIT should be offered even if the person has previously had a negative FIT result.",
        "primary_care_test",
        symptom("change_in_bowel_habit"),
    )
    other = rec(
        "9.3.2", "Refer if the FIT result is at least 10.", "suspected_cancer_pathway_referral", symptom("x")
    )
    contradicted, quoted = check([claim], [other], [other, fit])
    assert contradicted == [claim] and quoted[0].id == "9.3.1"


def test_a_conclusion_that_is_ng12s_is_read_as_a_claim() -> None:
    assert "immediate" in claimed_text("He is 19 so NG12 says very urgent FBC, not the immediate one?")
    assert "routine" not in claimed_text("NICE says CXR first for cough, so I'll refer routinely?")


def test_a_question_mark_against_a_word_is_suspected_not_a_clause_end() -> None:
    message = "how much codeine can I prescribe for ?bowel ca pain while she waits for her scope?"
    assert len(clauses(message)) == 1 and rule_scope(message) == "treatment"
    assert rule_scope("normal bowel screening FIT in March, now rectal bleeding") is None


# --- through chat, with a real retrieval server and the NG12 index ----------------------------------


@pytest.fixture
def client(ready_client: TestClient) -> TestClient:
    return ready_client


def test_routes_ng12_gives_otherwise_are_contradicted_through_chat(client: TestClient) -> None:
    body = ask(
        client,
        f"route-{uuid.uuid4().hex[:8]}",
        "My trainer reckons NG12 puts over-60s with recurrent urine infections on the 2WW bladder "
        "pathway - is that right? 71M, urine dip negative for blood",
    )
    assert body["grounding"] == "contradicted", body["answer"]
    assert "1.6.5" in cited(body) and "non-urgent referral (1.6.5)" in str(body["answer"])
    body = ask(
        client,
        f"route-{uuid.uuid4().hex[:8]}",
        "44F with unexplained petechiae, NICE says an FBC within 2 weeks, correct?",
    )
    assert body["grounding"] == "contradicted" and "1.10.1" in cited(body), body["answer"]


def test_a_route_ng12_does_give_is_answered_through_chat(client: TestClient) -> None:
    body = ask(
        client,
        f"route-{uuid.uuid4().hex[:8]}",
        "NG12 says a suspected cancer pathway referral for unexplained haemoptysis at 52, right?",
    )
    assert body["grounding"] != "contradicted", body["answer"]
    assert "1.1.1" in cited(body)


def test_what_to_tell_the_family_follows_the_conversation(client: TestClient) -> None:
    sid = f"family-{uuid.uuid4().hex[:8]}"
    ask(client, sid, "7 year old with unexplained bruising and hepatosplenomegaly, what does NG12 advise?")
    body = ask(client, sid, "what should I say to his mum and dad")
    assert body["grounding"] not in ("out_of_scope", "none"), body["answer"]
    assert {"1.14.2", "1.14.3"} & set(cited(body))


def test_a_definition_claim_names_the_terms_whose_definitions_settle_it() -> None:
    claim = "NICE classes young people as 18 to 30, right?"
    assert claims_definition(claim) and defined_terms(claim) == ["Young people"]
    assert not claims_definition("NG12 says refer over 40s with haemoptysis, right?")
    verdict = group_contradicted(
        [Claim("urgency", "immediate", "immediate")],
        ("kids", "children"),
        [FBC, IMMEDIATE],
        results_for([FBC, IMMEDIATE], {"bruising"}),
        21,
    )
    assert verdict is not None and verdict.define == ["Children and young people"]


def test_a_route_named_in_other_words_holds_by_the_recommendations_action() -> None:
    routine = rec(
        "9.4.1",
        "Consider routine referral for people with a skin lesion that raises the suspicion of X.",
        "non_urgent_referral",
        symptom("lesion"),
    )
    found = claims("NG12 says a routine referral for a lesion like that, right?")
    assert ("action", "non-urgent") in {(c.kind, c.value) for c in found}
    assert check(found, [routine], [routine], [routine], {"lesion"})[0] == []


def test_a_bare_value_beside_a_compared_one_is_the_patients_result() -> None:
    found = kinds("PSA 4.2 in clinic - NG12 says above 4 is abnormal, right?")
    assert ("threshold", "4", "psa") in found and ("threshold", "4.2", "psa") not in found
    assert ("threshold", "10", "psa") in kinds("NG12 says PSA 10 needs a referral, right?")  # the only value
