"""The structured claim model (chat.claim_model): a claim read as (subject, attribute, value,
polarity) and each attribute checked against the recommendations themselves. Wordings are this
file's own; the last tests go through chat with a real retrieval server and the NG12 index."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from chat import claim_check as cc
from chat import claim_model as cm
from ng12_common.criteria import parse_criteria
from ng12_common.served_recommendations import ServedRecommendation
from tests.support import served_recommendation

from .conftest import ask, cited

SITES = ("breast", "lung", "head and neck", "laryngeal", "oral", "prostate", "gynaecological")


def rec(
    rid: str,
    text: str,
    *,
    action: str = "suspected_cancer_pathway_referral",
    site: str = "site",
    title: str = "",
    sex: str = "any",
    min_age: int | None = None,
    criteria: dict[str, Any] | None = None,
) -> ServedRecommendation:
    return ServedRecommendation(
        id=rid,
        section=rid.rsplit(".", 1)[0],
        cancer_site=site,
        page=10,
        text=text,
        action=action,
        strength="consider",
        section_title=title,
        population={"age_group": "any", "sex": sex, "min_age": min_age},
        criteria=parse_criteria(criteria) if criteria else None,
    )


def attrs(message: str) -> set[tuple[str, str, bool]]:
    return {(c.attribute, c.value, c.polarity) for c in cm.read(message, SITES)}


def never_met(*_: Any) -> frozenset[str]:
    return frozenset()


# --- reading -----------------------------------------------------------------------------------------


def test_a_sex_restriction_is_read_with_the_sites_it_names() -> None:
    (claim,) = cm.read("Our practice nurse insists the breast criteria apply only to women, agree?", SITES)
    assert (claim.attribute, claim.value, claim.subject) == ("sex", "female", ("breast",))
    # a statement about "the recommendations" asserts without a "NG12 says"
    assert ("sex", "female", True) in attrs("the breast recs are just for women, so men don't qualify?")
    assert ("sex", "male", True) in attrs("prostate guidance is for men only, right?")


def test_a_prerequisite_test_before_a_referral() -> None:
    assert ("prerequisite", "fit", True) in attrs("I was told a FIT has to be done before referral, true?")
    assert ("prerequisite", "ultrasound", True) in attrs(
        "surely I can't 2ww her without an ultrasound first?"
    )
    assert ("prerequisite", "psa", True) in attrs("NICE says I must get a PSA back before I refer him?")
    assert ("prerequisite", "ultrasound", True) in attrs(
        "I was told we can't refer a breast lump without a breast ultrasound first"
    )


def test_a_prerequisite_stated_without_naming_ng12_is_still_a_claim() -> None:
    # an obligation before a referral states a rule, asked for confirmation or not
    assert ("prerequisite", "ultrasound", True) in attrs(
        "he has to have an ultrasound before I can refer him?"
    )


def test_an_order_of_tests() -> None:
    (claim,) = cm.read("NG12 says ultrasound first and then an MRI, correct?", SITES)
    assert (claim.attribute, claim.before, claim.value) == ("order", "ultrasound", "mri")
    (claim,) = cm.read("My registrar says NG12 wants an MRI only if the x-ray is normal", SITES)
    assert (claim.before, claim.value) == ("x-ray", "mri")


def test_a_group_cut_off_an_outcome_timeframe_a_count_and_an_age_floor() -> None:
    assert ("group", "south asian", True) in attrs(
        "I believe NICE has a different age threshold for South Asian men"
    )
    assert ("timeframe", "14 day", True) in attrs(
        "NG12 says the cancer will be ruled out within 14 days on the pathway, yes?"
    )
    assert ("count", "1", True) in attrs("Apparently one symptom on its own is enough for the chest x-ray?")
    assert ("age_scope", "50", True) in attrs("I thought the bowel recommendations were all for 50 and over")
    assert ("age_scope", "60", True) in attrs("I thought all the bowel recommendations were for 60 and over")


def test_an_order_in_which_the_second_test_is_done_only_if_the_first_is_not_available() -> None:
    (claim,) = cm.read("NICE says to only use a SPEP if the FLC is unavailable?", SITES)
    assert (claim.attribute, claim.before, claim.value) == ("order", "free light chain", "electrophoresis")
    myeloma = rec(
        "1.10.4",
        "... free light chains. If serum free light chain testing is not available, use a Bence-Jones test.",
    )
    wrong = cm.StructuredClaim(
        "order", "Bence-Jones first, light chains only if not", "free light chain", before="bence-jones"
    )
    verdict = cc.contradicted([wrong], ctx([myeloma]), [])
    assert verdict is not None and verdict.quoted == [myeloma]
    right = cm.StructuredClaim(
        "order", "light chains first, else Bence-Jones", "bence-jones", before="free light chain"
    )
    assert cc.contradicted([right], ctx([myeloma]), []) is None


def test_something_claimed_to_be_left_unsaid_that_ng12_says_to_explain() -> None:
    assert ("information", "cancer", False) in attrs(
        "Our partner reckons it's kinder not to mention cancer at referral"
    )
    assert attrs("Should I mention cancer when I refer her?") == set()
    explain = rec(
        "1.14.3",
        "Explain to people who are being referred with suspected cancer that they are being "
        "referred to a cancer service.",
        action="other",
    )
    claim = cm.StructuredClaim("information", "not to mention cancer", "cancer", polarity=False)
    verdict = cc.contradicted([claim], ctx([explain]), [])
    assert verdict is not None and verdict.quoted == [explain]


def test_a_route_denied_and_a_test_claimed_as_the_first_step() -> None:
    assert ("route", "suspected cancer pathway", False) in attrs(
        "NG12 says she doesn't need a 2ww for this, right?"
    )
    assert ("route", "ct", True) in attrs("NICE says go straight to a CT for this, doesn't it?")


@pytest.mark.parametrize(
    "message",
    [
        # a GP describing their own patient, or planning, claims nothing about NG12
        "64F, PMB for 2 weeks. I did a CA125 before referring her on the 2WW. What does NG12 say?",
        "58M, dysphagia, I'm going to 2WW him and he doesn't need a CT. NG12?",
        "She's a woman aged 40 with a breast lump - does NG12 recommend a 2WW?",
        # questions ask; they do not claim
        "Are the breast recommendations only for women?",
        "Does NG12 say an MRI or a CT first for a suspected brain tumour?",
        "Is there a lower PSA threshold for Black men in NG12?",
        "Does one symptom count for the urgent chest X-ray?",
        "lump in the groin on exam - do I need an ultrasound first before referring?",
        "should we get a PSA before we refer him?",
    ],
)
def test_what_is_not_a_structured_claim(message: str) -> None:
    assert cm.read(message, SITES) == []


# --- checking ----------------------------------------------------------------------------------------

BREAST = [
    rec(
        "1.4.1",
        "Refer people using a suspected cancer pathway referral if aged 30 and over ...",
        site="breast",
    ),
    rec("1.4.3", "Consider non-urgent referral in people aged under 30 ...", site="breast"),
]
WOMEN = [rec("1.5.10", "Refer women aged 55 and over with bleeding ...", site="endometrial", sex="female")]


def ctx(every: list[ServedRecommendation], **kw: Any) -> cc.Context:
    kw.setdefault("met_for", never_met)
    return cc.Context(every=every, retrieved=kw.pop("retrieved", every), for_symptoms=kw.pop("on", []), **kw)


def test_a_sex_claim_is_held_to_each_recommendation_of_the_site() -> None:
    claim = cm.StructuredClaim("sex", "breast recs are for women", "female", ("breast",))
    verdict = cc.contradicted([claim], ctx([*BREAST, *WOMEN]), [])
    assert verdict is not None and [r.id for r in verdict.quoted] == ["1.4.1", "1.4.3"]
    true = cm.StructuredClaim("sex", "endometrial recs are for women", "female", ("endometrial",))
    assert cc.contradicted([true], ctx([*BREAST, *WOMEN]), []) is None


def test_a_group_named_before_its_cut_off_and_a_prerequisite_about_nothing_named() -> None:
    assert ("group", "smokers", True) in attrs("I read that NICE gives smokers a lower age for the x-ray")
    # "a FIT before referral" with no findings, site or patient: nothing to hold it against
    claim = cm.StructuredClaim("prerequisite", "a FIT must be done before referral", "fit")
    direct = rec("1.3.5", "Consider a suspected cancer pathway referral in adults with a rectal mass.")
    assert cc.contradicted([claim], ctx([direct]), ["fit"]) is None
    assert cc.contradicted([claim], ctx([direct], on=[direct]), ["fit"]) is not None


def test_a_prerequisite_holds_only_when_every_referral_on_the_findings_names_the_test() -> None:
    claim = cm.StructuredClaim("prerequisite", "a CA125 before I can 2WW", "ca125")
    direct = rec("1.5.10", "Refer women aged 55 and over with post-menopausal bleeding.", sex="female")
    test = rec("1.5.6", "Measure serum CA125 in primary care ...", action="primary_care_test")
    verdict = cc.contradicted([claim], ctx([direct, test], on=[direct, test]), ["ca125"])
    assert verdict is not None and [r.id for r in verdict.quoted] == ["1.5.10", "1.5.6"]
    psa = rec("1.6.3", "Refer people as specified in 1.6.2 if their PSA levels are above the threshold.")
    luts = rec(
        "1.6.2",
        "Consider a PSA test in people with lower urinary tract symptoms.",
        action="primary_care_test",
    )
    true = cm.StructuredClaim("prerequisite", "a PSA before I refer", "psa")
    assert cc.contradicted([true], ctx([psa, luts], on=[psa]), ["psa"]) is None
    # the referral that names the recommendation on the findings by number counts as theirs
    assert cc.settled([true], ctx([psa, luts], on=[luts])) == {
        ("action", "suspected cancer pathway"),
        ("test", "psa"),
    }


def test_an_order_needs_the_second_test_conditioned_on_the_first() -> None:
    brain = rec("1.9.1", "Consider an MRI scan of the brain (or CT scan if MRI is contraindicated).")
    claim = cm.StructuredClaim("order", "CT first, then MRI", "mri", before="ct")
    verdict = cc.contradicted([claim], ctx([brain]), [])
    assert verdict is not None and [r.id for r in verdict.quoted] == ["1.9.1"]
    ovarian = rec("1.5.7", "If serum CA125 is 35 IU/ml or greater, arrange an ultrasound scan.")
    true = cm.StructuredClaim("order", "CA125 first then ultrasound", "ultrasound", before="ca125")
    assert cc.contradicted([true], ctx([ovarian]), []) is None


def test_a_group_cut_off_must_name_the_group_somewhere() -> None:
    table = rec("1.6.3", "Refer if their PSA levels are above the threshold for their age in table 1.")
    claim = cm.StructuredClaim("group", "a lower PSA cut-off for Black men", "black")
    verdict = cc.contradicted([claim], ctx([table]), ["psa"])
    assert verdict is not None and verdict.quoted == [table]
    lung = rec("1.1.2", "Offer an urgent chest X-ray if they have ever smoked and have 1 or more ...")
    smokers = cm.StructuredClaim("group", "a lower bar for smokers", "smokers")
    assert cc.contradicted([smokers], ctx([lung]), ["x-ray"]) is None


_TWO_OR_SMOKED = {
    "op": "all",
    "of": [
        {"op": "age_gte", "value": 40},
        {
            "op": "any",
            "of": [
                {
                    "op": "at_least",
                    "n": 2,
                    "of": [{"op": "symptom", "concept": "cough"}, {"op": "symptom", "concept": "fatigue"}],
                },
                {
                    "op": "all",
                    "of": [
                        {"op": "ever_smoked"},
                        {
                            "op": "at_least",
                            "n": 1,
                            "of": [
                                {"op": "symptom", "concept": "cough"},
                                {"op": "symptom", "concept": "fatigue"},
                            ],
                        },
                    ],
                },
            ],
        },
    ],
}


def test_one_finding_is_enough_only_when_the_patient_meets_the_recommendation_with_one() -> None:
    xray = rec("1.1.2", "Offer an urgent chest X-ray ... 2 or more ...", site="lung", criteria=_TWO_OR_SMOKED)
    claim = cm.StructuredClaim("count", "any single symptom is enough for the X-ray", "1", ("lung",))
    smokers: list[tuple[Any, ...]] = []

    def met_for(
        symptoms: tuple[str, ...], age: int | None, smoking: str | None, ids: tuple[str, ...]
    ) -> frozenset[str]:
        smokers.append((symptoms, age, smoking))
        return frozenset(ids) if smoking in ("current", "ex") else frozenset()

    never = ctx([xray], symptoms=("fatigue",), age=70, smoking="never", met_for=met_for)
    verdict = cc.contradicted([claim], never, ["x-ray"])
    assert verdict is not None and verdict.quoted == [xray]
    assert smokers[-1] == (("fatigue",), 70, "never")  # the patient's own symptom, age and smoking
    smoker = ctx([xray], symptoms=("fatigue",), age=70, smoking="current", met_for=met_for)
    assert cc.contradicted([claim], smoker, ["x-ray"]) is None


def test_the_patients_smoking() -> None:
    assert cm.smoking("70F, never smoked, cough") == "never"
    assert cm.smoking("ex-smoker (quit 10y ago)") == "ex"
    assert cm.smoking("smoker? no, actually a non-smoker") == "never"
    assert cm.smoking("52M with a cough") is None


def test_an_age_floor_claimed_for_every_recommendation_of_a_section() -> None:
    larynx = rec(
        "1.8.1",
        "... aged 45 and over ...",
        site="laryngeal",
        title="Head and neck cancers",
        min_age=45,
        criteria={"op": "age_gte", "value": 45},
    )
    mouth = rec(
        "1.8.2",
        "... a persistent and unexplained lump in the neck.",
        site="oral",
        title="Head and neck cancers",
        criteria={"op": "symptom", "concept": "neck_lump"},
    )
    claim = cm.StructuredClaim("age_scope", "head and neck recs are all 45+", "45", ("head and neck",))
    verdict = cc.contradicted([claim], ctx([larynx, mouth], on=[mouth]), [])
    assert verdict is not None and [r.id for r in verdict.quoted] == ["1.8.2"]
    true = cm.StructuredClaim("age_scope", "laryngeal recs are all 45+", "45", ("laryngeal",))
    assert cc.contradicted([true], ctx([larynx, mouth]), []) is None


def test_a_route_denied_to_a_patient_who_meets_it() -> None:
    dysphagia = served_recommendation("1.2.1", "Refer people with dysphagia ...")
    claim = cm.StructuredClaim("route", "doesn't need a 2WW", "suspected cancer pathway", polarity=False)

    def meets(*args: Any) -> frozenset[str]:
        return frozenset(args[-1])

    verdict = cc.contradicted(
        [claim], ctx([dysphagia], on=[dysphagia], symptoms=("dysphagia",), met_for=meets), []
    )
    assert verdict is not None and verdict.quoted == [dysphagia]
    assert cc.contradicted([claim], ctx([dysphagia], on=[dysphagia], symptoms=("dysphagia",)), []) is None


def test_a_test_claimed_straight_away_for_a_patient_who_meets_only_other_recommendations() -> None:
    ct = rec(
        "1.2.5", "Consider an urgent, direct access CT scan ... aged 60 and over with weight loss and ..."
    )
    assess = rec(
        "1.13.2",
        "For people with unexplained weight loss ... carry out an assessment ...",
        action="other_advice",
    )
    claim = cm.StructuredClaim("route", "straight to CT", "ct")

    def met_for(*args: Any) -> frozenset[str]:
        return frozenset({"1.13.2"}) & frozenset(args[-1])

    context = ctx([ct, assess], on=[ct, assess], symptoms=("weight_loss",), age=52, met_for=met_for)
    verdict = cc.contradicted([claim], context, ["ct"])
    assert verdict is not None and [r.id for r in verdict.quoted] == ["1.13.2", "1.2.5"]


# --- through chat, with the NG12 index ----------------------------------------------------------------


def test_structured_claims_through_chat(ready_client: TestClient) -> None:
    def turn(message: str) -> dict[str, Any]:
        return ask(ready_client, str(uuid.uuid4()), message)

    sex = turn("55M with an unexplained breast lump. The breast criteria only apply to women, correct?")
    assert sex["grounding"] == "contradicted" and "1.4.1" in cited(sex)
    order = turn(
        "NICE says a CT of the head first and MRI only if the CT is normal for new progressive "
        "neurological loss in an adult, right?"
    )
    assert order["grounding"] == "contradicted" and "1.9.1" in cited(order)
    # true claims and a GP's own patient are answered, not contradicted
    psa = turn("My trainer says the PSA has to be back before I can 2WW a man with nocturia, right?")
    assert psa["grounding"] != "contradicted"
    own = turn(
        "62F, post-menopausal bleeding. I've checked a CA125 before I refer her. What does NG12 advise?"
    )
    assert own["grounding"] in ("sufficient", "weak") and "1.5.10" in cited(own)
