"""False premises: the kinds of claim read without a "says" verb or apart from their test, and
checked against NG12's text and criteria (chat.premise). Wordings are this file's own."""

from __future__ import annotations

from typing import Any

from chat.premise import asserts_guideline, check, claimed_text, claims, describe, for_patient
from ng12_common.served_recommendations import ServedRecommendation
from tests.support import served_recommendation


def rec(
    rid: str, text: str, group: str = "any", criteria: dict[str, Any] | None = None
) -> ServedRecommendation:
    return served_recommendation(rid, text, criteria=criteria, group=group, strength="offer")


def kinds(message: str) -> set[tuple[str, str, str | None]]:
    return {(c.kind, c.value, c.subject) for c in claims(message)}


def test_assertions_written_as_an_equation_or_with_a_tag_question_mid_message() -> None:
    assert ("age", "60", "over") in kinds("NICE = hoarseness gets a 2ww only if 60+, so CXR first?")
    assert ("age", "45", "over") in kinds(
        "NG12: rectal bleeding needs referral from age 45, correct? He is 39."
    )
    assert kinds("which bloods does NG12 want for myeloma per NG12? he is 70") == set()  # asks only


def test_ages_with_a_plus_sign_or_an_only() -> None:
    (age,) = [c for c in claims("I was told NG12 refers a breast lump only in 50+ women") if c.kind == "age"]
    assert (age.value, age.subject, age.only) == ("50", "over", True)
    assert not [c for c in claims("NG12 says PSA above 4.5 in his age group, right?") if c.kind == "age"]


def test_a_threshold_apart_from_its_test_takes_the_test_from_the_unit_or_the_message() -> None:
    found = kinds("Her FIT was 8 last month. The NICE cut off to refer is 15 micrograms per gram, yes?")
    assert ("threshold", "15", "fit") in found
    found = kinds("ca125 of 40 here. I thought NG12's cut-off for a pelvic scan was 60?")
    assert ("threshold", "60", "ca125") in found and not [k for k in found if k[0] == "age"]
    assert ("age", "55", "over") in kinds("I remember the age cut-off for weight loss with reflux is 55")


def test_a_threshold_claimed_for_an_age_band_is_checked_against_that_band() -> None:
    table = rec(
        "1.6.3",
        "Refer if their PSA levels are above the threshold for their age in table 1.",
        criteria={
            "op": "test_by_age",
            "name": "psa",
            "unit": "micrograms/litre",
            "bands": [
                {"age_gte": 50, "age_lt": 60, "comparator": ">", "value": 3.5},
                {"age_gte": 70, "age_lt": 80, "comparator": ">", "value": 6.5},
            ],
        },
    )
    wrong = claims("PSA 4. I believe NG12 says refer above 6.5 for men aged 50-59?")
    assert [(c.value, c.ages) for c in wrong if c.kind == "threshold"] == [("6.5", (50, 60))]
    assert check(wrong, [table], [table])[0]
    right = claims("PSA 4. I believe NG12 says refer above 3.5 for men aged 50-59?")
    assert check(right, [table], [table])[0] == []


def test_a_test_ng12_never_names_is_contradicted() -> None:
    found = claims("Surely NICE recommends an AFP level for a 30 year old with a testicular lump?")
    assert ("unnamed_test", "AFP", None) in {(c.kind, c.value, c.subject) for c in found}
    testis = rec("1.6.5", "Consider a suspected cancer pathway referral for testicular cancer ...")
    contradicted, _ = check(found, [testis], [testis])
    assert [c.kind for c in contradicted] == ["unnamed_test"]
    assert "never mentions AFP" in describe(contradicted)
    assert not [c for c in claims("NG12 says offer a CT for this, right?") if c.kind == "unnamed_test"]


def test_intervals_in_working_days_hours_shorthand_and_conditions() -> None:
    assert ("interval", "3 working day", "deadline") in kinds(
        "NG12 allows 3 working days to send it, correct?"
    )
    assert ("interval", "72 hour", "deadline") in kinds("NG12 says bloods within 72h, yes?")
    assert ("interval", "8 week", "duration") in kinds(
        "NG12 says a sore throat only counts if it has been there over 8 weeks"
    )
    day = rec("1.16.8", "make sure that the referral is made within 1 working day.")
    found = claims("is it true that NICE gives us 3 working days for the referral?")
    assert check(found, [day], [day])[0]
    assert (
        check(claims("is it true that NICE gives us 1 working day for the referral?"), [day], [day])[0] == []
    )


def test_the_patients_own_sentences_and_the_writers_plan_are_not_claims() -> None:
    assert claimed_text("Lump 2 cm for 5 weeks in a 40F. NG12 says over 30 needs a 2ww?") == (
        "NG12 says over 30 needs a 2ww?"
    )
    found = kinds("Reflux at 58. NG12 says 2ww only over 60, so I'll book an OGD?")
    assert ("age", "60", "over") in found and not [k for k in found if k[0] == "test"]
    assert claimed_text("Chest pain. Is that right?") == "Chest pain. Is that right?"


def test_a_normal_result_claimed_to_exclude_cancer() -> None:
    found = claims("As per NICE a negative FIT rules out bowel cancer, yes?")
    assert "excludes" in {c.kind for c in found}
    review = rec("1.15.1", "Be aware of the possibility of false-negative results for chest X-rays.")
    other = rec("1.3.1", "Offer FIT to guide referral for suspected colorectal cancer.")
    contradicted, quoted = check(found, [other], [other, review])
    assert "excludes" in {c.kind for c in contradicted} and review in quoted


def test_a_claim_about_a_child_is_not_made_by_the_adults_recommendation() -> None:
    adults = rec("1.10.1", "Consider a very urgent full blood count (within 48 hours) for adults", "adults")
    children = rec(
        "1.10.2", "Refer children for immediate specialist assessment", "children_and_young_people"
    )
    assert for_patient([adults, children], 6) == [children]
    assert for_patient([adults, children], 40) == [adults]
    assert for_patient([adults, children], 20) == [adults, children]  # young people: either pathway
    found = claims("NG12 says a very urgent FBC for this, correct?")
    assert check(found, [adults, children], [adults, children], [children], set())[0]


def test_an_only_age_is_contradicted_by_a_lower_age_for_the_symptom() -> None:
    bladder = rec(
        "1.6.4",
        "Refer people aged 45 and over with visible haematuria using a suspected cancer pathway referral",
        criteria={
            "op": "all",
            "of": [{"op": "age_gte", "value": 45}, {"op": "symptom", "concept": "haematuria"}],
        },
    )
    only = claims("NG12 says haematuria only gets a 2ww from age 50, right?")
    assert check(only, [bladder], [bladder], [bladder], {"haematuria"})[0]
    from_45 = claims("NG12 says haematuria gets a 2ww from age 45, right?")
    assert check(from_45, [bladder], [bladder], [bladder], {"haematuria"})[0] == []


def test_a_vignette_result_and_a_dropped_does_are_not_claims() -> None:
    """A bare test value after the patient ("45M with ED, PSA 3.0") is the patient's result; "NG12 say
    refer?" is a question with its "does" dropped; "... according to NICE NG12?" asks. A stated rule
    ("NG12 uses PSA >4 for all ages", "just to check ...") is still a claim to check."""
    assert claims("45M with ED, PSA 3.0. NG12 say refer?") == []
    assert not asserts_guideline("is it a dentist thing according to NICE NG12?")
    assert [c.kind for c in claims("just to check NG12 uses PSA >4 for all ages?")] == ["threshold"]
    assert [c.value for c in claims("NG12 says refer at PSA 3.0 for a 45 year old")] == ["3.0"]


def test_a_routine_referral_is_claimed_as_non_urgent_however_it_is_worded() -> None:
    """ "Routine" is the everyday word for NG12's "non-urgent": a routine referral to any service,
    or referring routinely, claims the non-urgent route (checked against the recommendations on
    the symptoms, so "routine referral for an absent red reflex" is contradicted by 1.12.x's urgent
    referral). Without "routine" (or "non-urgent") no route is claimed."""
    from chat.premise import claims

    def routes(message: str) -> list[str]:
        return [c.value for c in claims(message) if c.kind == "action"]

    assert routes("NG12 just says routine optometry/ophthalmology referral doesn't it") == ["non-urgent"]
    assert routes("NG12 says refer hoarseness routinely, right?") == ["non-urgent"]
    assert routes("NG12 says a routine referral is fine for this") == ["non-urgent"]
    assert routes("NG12 says refer to ophthalmology, right?") == []
