"""The criteria engine on the knowledge served by the real retrieval server: boundaries, negation,
test results, near misses, stale criteria and determinism."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from assessment.engine import MAX_NEAR_MISSES, assess
from assessment.knowledge import GuidelineKnowledge, KnowledgeCache
from assessment.narrative import rules_reasoning
from ng12_common.models import PatientRecord
from ng12_common.reading.record import finish, read_record
from ng12_common.retrieval_client import RetrievalClient


def _record(**kw: Any) -> PatientRecord:
    base: dict[str, Any] = {"age": 50, "gender": "Male", "smoking_history": "Never Smoked", "symptoms": []}
    return PatientRecord(**{**base, **kw})


def _matched(knowledge: GuidelineKnowledge, **kw: Any) -> list[str]:
    return assess(_record(**kw), knowledge).matched_ids


def test_only_site_specific_usable_criteria_are_evaluated(knowledge: GuidelineKnowledge) -> None:
    assert knowledge.criteria_by_id, "no criteria served"
    for rid in knowledge.criteria_by_id:
        rec = knowledge.recommendations[rid]
        assert rec.section in {f"1.{n}" for n in range(1, 14)}
        assert rec.criteria_status in ("curated", "derived")
    assert [r.id for r in knowledge.safety_netting][:1] == ["1.15.1"]


@pytest.mark.parametrize(
    ("record", "rec_id", "met"),
    [
        # 1.1.2: chest X-ray, aged 40 and over, ever smoked and one symptom
        ({"age": 40, "smoking_history": "Ex-Smoker", "symptoms": ["cough"]}, "1.1.2", True),
        ({"age": 39, "smoking_history": "Ex-Smoker", "symptoms": ["cough"]}, "1.1.2", False),
        ({"age": 40, "smoking_history": "Never Smoked", "symptoms": ["cough"]}, "1.1.2", False),
        ({"age": 40, "symptoms": ["cough", "weight loss"]}, "1.1.2", True),
        # 1.2.1: dysphagia at any age
        ({"age": 20, "symptoms": ["dysphagia"]}, "1.2.1", True),
        # 1.3.1: FIT for unexplained weight loss and abdominal pain, 40 and over
        ({"age": 40, "symptoms": ["abdominal pain", "weight loss"]}, "1.3.1", True),
        # 1.4.1: breast lump, people aged 30 and over
        ({"age": 30, "gender": "Female", "symptoms": ["unexplained breast lump"]}, "1.4.1", True),
        ({"age": 29, "gender": "Female", "symptoms": ["unexplained breast lump"]}, "1.4.1", False),
        # 1.6.4: visible haematuria, aged 45 and over
        ({"age": 45, "symptoms": ["visible haematuria"]}, "1.6.4", True),
        ({"age": 44, "symptoms": ["visible haematuria"]}, "1.6.4", False),
        # 1.6.2 PSA table does not apply to an age 80+ patient without a threshold
        ({"age": 60, "symptoms": ["erectile dysfunction"]}, "1.6.2", True),
        # 1.8.1: persistent unexplained hoarseness, 45 and over
        ({"age": 45, "symptoms": ["persistent hoarseness"]}, "1.8.1", True),
        ({"age": 44, "symptoms": ["persistent hoarseness"]}, "1.8.1", False),
    ],
)
def test_boundaries(knowledge: GuidelineKnowledge, record: dict[str, Any], rec_id: str, met: bool) -> None:
    assert (rec_id in _matched(knowledge, **record)) is met


def test_negation_and_explanation(knowledge: GuidelineKnowledge) -> None:
    assert "1.2.1" not in _matched(knowledge, symptoms=["no dysphagia"])
    assert "1.1.1" in _matched(knowledge, age=45, symptoms=["unexplained haemoptysis"])


def test_age_near_miss_says_what_is_missing(knowledge: GuidelineKnowledge) -> None:
    outcome = assess(_record(age=39, smoking_history="Current Smoker", symptoms=["haemoptysis"]), knowledge)
    assert outcome.top_action == "no_criteria_met"
    near = {n.recommendation_id: n.missing for n in outcome.near_misses}
    assert "1.1.1" in near and any("age ≥ 40 (patient is 39)" in m for m in near["1.1.1"])
    assert len(outcome.near_misses) <= MAX_NEAR_MISSES
    assert outcome.safety_netting and outcome.risk_level == "no_criteria_met"


def test_test_results_used_unused_and_unknown(knowledge: GuidelineKnowledge) -> None:
    outcome = assess(
        _record(
            age=65,
            gender="Female",
            symptoms=["change in bowel habit"],
            test_results={"fit_ug_hb_per_g_faeces": 12, "platelets_10e9_per_l": 480, "mystery_marker": "odd"},
        ),
        knowledge,
    )
    assert "1.3.2" in outcome.matched_ids
    unused = {u.key: u.reason for u in outcome.unused_test_results}
    assert set(unused) == {"mystery_marker"}
    assert "not understood" in unused["mystery_marker"]
    # platelets 480 is read against the documented reference range (thrombocytosis above 400)
    shown = {t.key: t for t in outcome.test_interpretations}
    assert "480 x10^9/L > 400 x10^9/L" in shown["platelets_10e9_per_l"].rule
    assert shown["platelets_10e9_per_l"].finding == "thrombocytosis"
    # an unknown test makes the assessment incomplete (it was not understood)
    assert outcome.unrecognised == ["mystery_marker: odd"] and not outcome.complete


def test_result_values_in_words(knowledge: GuidelineKnowledge) -> None:
    sarcoma = _matched(
        knowledge, age=70, symptoms=["thigh pain"], test_results={"x_ray": "suggests bone sarcoma"}
    )
    assert "1.11.1" in sarcoma
    myeloma = _matched(
        knowledge,
        age=65,
        symptoms=["back pain"],
        test_results={"serum_protein_electrophoresis": "suggests myeloma"},
    )
    assert "1.10.5" in myeloma
    psa = _matched(knowledge, age=62, symptoms=["erectile dysfunction"], test_results={"psa_ug_per_l": 5.0})
    assert "1.6.3" in psa


def test_unrecognised_phrases_are_reported(knowledge: GuidelineKnowledge) -> None:
    outcome = assess(_record(symptoms=["dysphagia", "odd tingling in the left elbow"]), knowledge)
    assert outcome.unrecognised == ["odd tingling in the left elbow"]
    assert "1.2.1" in outcome.matched_ids


def test_stale_criteria_are_never_evaluated(knowledge: GuidelineKnowledge) -> None:
    rec = knowledge.recommendations["1.2.1"]
    stale = dataclasses.replace(rec, criteria=None, criteria_status="stale")
    criteria = {k: v for k, v in knowledge.criteria_by_id.items() if k != "1.2.1"}
    crippled = dataclasses.replace(
        knowledge, recommendations={**knowledge.recommendations, "1.2.1": stale}, criteria_by_id=criteria
    )
    assert "1.2.1" not in assess(_record(symptoms=["dysphagia"]), crippled).matched_ids


def test_deterministic_order(knowledge: GuidelineKnowledge) -> None:
    record = _record(age=55, smoking_history="Current Smoker", symptoms=["unexplained hemoptysis", "fatigue"])
    first = assess(record, knowledge)
    for _ in range(3):
        again = assess(record, knowledge)
        assert again.matched == first.matched and again.near_misses == first.near_misses
    ranks = [m.action for m in first.matched]
    from ng12_common.actions import action_rank

    assert ranks == sorted(ranks, key=action_rank)
    assert first.top_action == first.matched[0].action


def test_prefilter_changes_nothing(knowledge: GuidelineKnowledge) -> None:
    """Skipping recommendations that need a concept the patient lacks gives the same outcome."""
    records = [
        _record(age=55, smoking_history="Current Smoker", symptoms=["unexplained hemoptysis", "fatigue"]),
        _record(age=39, symptoms=["haemoptysis"]),
        _record(age=62, symptoms=["erectile dysfunction"], test_results={"psa_ug_per_l": 5.0}),
        _record(
            age=6, gender="Female", symptoms=["parent has persistent concern about the child's symptoms"]
        ),
        _record(age=45, gender="Female", symptoms=["abdominal swelling"], exam_findings=["ascites"]),
        _record(age=30, symptoms=[]),
    ]
    for record in records:
        fast, full = assess(record, knowledge), assess(record, knowledge, prefilter=False)
        assert fast.matched == full.matched and fast.near_misses == full.near_misses, record
        assert fast.unmet_ids == full.unmet_ids


def test_knowledge_cache_refetches_when_the_version_changes(retrieval_addr: str) -> None:
    async def scenario() -> tuple[Any, Any, Any]:
        client = RetrievalClient(retrieval_addr, timeout_seconds=10.0)
        try:
            cache = KnowledgeCache(client)
            first = await cache.get()
            same = await cache.get(first.index_version)
            other = await cache.get("a-version-retrieval-does-not-serve")  # as after a re-index
            return first, same, other
        finally:
            await client.close()

    first, same, other = asyncio.run(scenario())
    assert same is first
    assert other is not first and other.index_version == first.index_version


def test_lay_words_abbreviations_and_context_are_read(knowledge: GuidelineKnowledge) -> None:
    """The issue's records: blood the patient coughs up or passes is read, with the tier that decided."""
    haemoptysis = assess(
        _record(
            age=47,
            gender="Female",
            smoking_history="Ex-Smoker",
            symptoms=["brought up blood when coughing, twice this week"],
        ),
        knowledge,
    )
    assert "1.1.1" in haemoptysis.matched_ids and haemoptysis.complete
    read = {f.concept: f for f in haemoptysis.findings if f.concept}
    assert read["haemoptysis"].tier == "curated" and read["haemoptysis"].status == "finding"
    pee = assess(_record(age=63, symptoms=["says there was blood in my pee"]), knowledge)
    assert {"1.6.4", "1.6.6"} <= set(pee.matched_ids)
    swallow = assess(_record(age=59, symptoms=["meat gets stuck when he swallows"]), knowledge)
    assert {"1.2.1", "1.2.7"} <= set(swallow.matched_ids)
    weight = assess(_record(age=62, symptoms=["lost 8 kg without trying", "tummy pain"]), knowledge)
    assert {"1.2.5", "1.13.2"} <= set(weight.matched_ids)  # 60+ with weight loss and abdominal pain
    family = assess(
        _record(age=50, gender="Female", symptoms=["mother had breast cancer", "no cough"]), knowledge
    )
    assert family.top_action == "no_criteria_met" and family.complete
    statuses = {f.clause: f.status for f in family.findings}
    assert statuses["mother had breast cancer"] == "family" and "cough" not in family.facts.symptoms


def test_unread_finding_is_never_no_criteria_met(knowledge: GuidelineKnowledge) -> None:
    outcome = assess(_record(age=55, symptoms=["odd tingling in the left elbow"]), knowledge)
    assert outcome.top_action == "incomplete" and not outcome.complete
    assert "no criterion is met" not in outcome.recommended_action.lower()
    assert "odd tingling in the left elbow" in outcome.recommended_action
    assert [r.kind for r in outcome.needs_review] == ["unread_finding"]
    reasoning = rules_reasoning(outcome, knowledge.index_version)
    assert "criterion is met" not in reasoning and "incomplete" in reasoning


def test_a_duration_in_a_line_is_not_a_test_result(knowledge: GuidelineKnowledge) -> None:
    """'t' is shorthand for temperature, but "can't swallow for 2 weeks" is dysphagia."""
    outcome = assess(_record(age=59, symptoms=["can't swallow for 2 weeks"]), knowledge)
    assert {"1.2.1", "1.2.7"} <= set(outcome.matched_ids) and outcome.test_interpretations == []


def test_explained_and_persisting_findings(knowledge: GuidelineKnowledge) -> None:
    explained = assess(
        _record(
            age=61,
            smoking_history="Ex-Smoker",
            symptoms=["productive cough", "temperature 38.5"],
            history=["chest infection diagnosed 3 days ago, on amoxicillin and getting better"],
        ),
        knowledge,
    )
    assert explained.top_action == "no_criteria_met", explained.matched_ids
    assert any("explained by acute chest infection" in a for a in explained.assumptions)
    persists = assess(
        _record(
            age=60,
            symptoms=["visible haematuria"],
            history=["UTI treated with nitrofurantoin, haematuria persists after the course"],
        ),
        knowledge,
    )
    assert {"1.6.4", "1.6.6"} <= set(persists.matched_ids)
    treated = assess(
        _record(age=60, symptoms=["visible haematuria"], history=["UTI on trimethoprim"]), knowledge
    )
    assert "1.6.6" not in treated.matched_ids


def test_results_as_people_write_them(knowledge: GuidelineKnowledge) -> None:
    outcome = assess(
        _record(
            age=64,
            gender="Female",
            symptoms=["tired all the time"],
            test_results={"Hb": "118 g/L", "PSA": 1.0, "ESR": 30, "FIT": "7 ug/g"},
        ),
        knowledge,
    )
    shown = {t.key: t for t in outcome.test_interpretations}
    assert "118 g/L < 120 g/L (women)" in shown["Hb"].rule and shown["Hb"].finding
    assert shown["FIT"].value_used == 7.0
    assert {u.key for u in outcome.unused_test_results} >= {"ESR"}


def test_a_finding_word_and_a_body_site_compose_the_finding(knowledge: GuidelineKnowledge) -> None:
    """A mass, lump or swelling and where it is, however worded (reading/compose.py)."""
    vagina = assess(
        _record(
            age=70, gender="Female", exam_findings=["hard 3cm mass felt high on the anterior vaginal wall"]
        ),
        knowledge,
    )
    assert "1.5.15" in vagina.matched_ids and vagina.complete
    breast = assess(_record(age=52, gender="Female", symptoms=["lump R breast 3/52"]), knowledge)
    assert "1.4.1" in breast.matched_ids
    child = assess(
        _record(age=2, gender="Female", exam_findings=["o/e firm 5 cm mass in R flank"]), knowledge
    )
    assert {"1.12.1", "1.12.3"} <= set(child.matched_ids)
    spleen = assess(
        _record(age=4, exam_findings=["o/e pallor; liver 2cm and spleen 3cm below costal margin"]), knowledge
    )
    assert "1.10.2" in spleen.matched_ids  # hepatosplenomegaly in a child: immediate referral
    assert {"hepatomegaly", "splenomegaly", "hepatosplenomegaly"} <= set(spleen.facts.symptoms)
    impalpable = assess(_record(age=4, exam_findings=["spleen not palpable, liver just palpable"]), knowledge)
    assert not {"splenomegaly", "hepatomegaly"} & set(impalpable.facts.symptoms)
    assert "splenomegaly" in impalpable.facts.negated
    regions = assess(
        _record(
            age=50, symptoms=["pain in lower abdomen"], exam_findings=["thyroid enlarged", "mass on shoulder"]
        ),
        knowledge,
    )
    assert {"abdominal_pain", "thyroid_lump", "lump"} <= set(regions.facts.symptoms)
    pv = assess(_record(age=52, gender="Female", symptoms=["PV bleeding for a week"]), knowledge)
    assert "bleeding" not in pv.facts.symptoms  # not the unexplained bleeding of 1.10.1


def test_reports_and_examinations_that_state_what_they_suggest(knowledge: GuidelineKnowledge) -> None:
    uss = assess(
        _record(
            age=55,
            gender="Female",
            test_results={
                "USS thigh": "7cm mass deep to fascia - appearances suggestive of soft tissue sarcoma"
            },
        ),
        knowledge,
    )
    assert "1.11.5" in uss.matched_ids
    xray = assess(
        _record(
            age=15,
            test_results={"X-ray L femur": "destructive lesion - suggests possibility of bone sarcoma"},
        ),
        knowledge,
    )
    assert xray.top_action == "very_urgent_referral" and "1.11.2" in xray.matched_ids
    prostate = assess(
        _record(age=61, exam_findings=["DRE: R lobe rock hard and craggy, sulcus lost"]),
        knowledge,
    )
    assert "1.6.1" in prostate.matched_ids and prostate.complete
    benign = assess(
        _record(age=72, exam_findings=["DRE: smooth, symmetrically enlarged, feels benign"]), knowledge
    )
    assert "1.6.1" not in benign.matched_ids


def test_neurological_signs_and_their_progression(knowledge: GuidelineKnowledge) -> None:
    adult = assess(
        _record(
            age=52,
            symptoms=["unsteady walking, getting worse over 4/52"],
            exam_findings=["broad-based gait, past-pointing, dysdiadochokinesis"],
        ),
        knowledge,
    )
    assert "1.9.1" in adult.matched_ids
    not_progressive = assess(_record(age=52, exam_findings=["past-pointing"]), knowledge)
    assert "1.9.1" not in not_progressive.matched_ids
    child = assess(
        _record(
            age=14, gender="Female", exam_findings=["R hemiparesis 4/5, R pronator drift, slurred speech"]
        ),
        knowledge,
    )
    assert child.top_action == "very_urgent_referral" and "1.9.2" in child.matched_ids


def test_a_recorded_result_of_the_offered_test_decides(knowledge: GuidelineKnowledge) -> None:
    """PSA already done and below the age threshold: the 'offer a PSA test' recommendation is met
    but does not head; nothing else is met, so no criterion is met (1.15 safety netting)."""
    outcome = assess(
        _record(age=72, symptoms=["nocturia", "urinary frequency"], test_results={"PSA": "6.0 ng/ml"}),
        knowledge,
    )
    assert "1.6.2" in outcome.matched_ids and outcome.top_action == "no_criteria_met"
    assert outcome.safety_netting and "already been done" in outcome.recommended_action
    assert any(r.kind == "test_done" and r.recommendation_id == "1.6.2" for r in outcome.needs_review)
    not_done = assess(_record(age=72, symptoms=["nocturia", "urinary frequency"]), knowledge)
    assert not_done.top_action == "primary_care_test"


def test_more_explanations(knowledge: GuidelineKnowledge) -> None:
    warfarin = assess(
        _record(
            age=44,
            symptoms=["bruising on both legs for a week"],
            history=["on warfarin for atrial fibrillation"],
        ),
        knowledge,
    )
    assert "1.10.1" not in warfarin.matched_ids and warfarin.complete
    recurrent = assess(
        _record(
            age=55,
            smoking_history="Current Smoker",
            symptoms=["4th chest infection this winter, each needed antibiotics"],
            history=["LRTI Dec, Jan and Mar"],
        ),
        knowledge,
    )
    assert "1.1.3" in recurrent.matched_ids  # three infections are recurrent, not one acute episode
    hypothyroid = assess(
        _record(
            age=52,
            symptoms=["tired all the time"],
            symptom_duration_days=60,
            history=["hypothyroidism diagnosed 3/52 ago"],
        ),
        knowledge,
    )
    assert hypothyroid.top_action == "no_criteria_met"  # explained fatigue is not taken as persistent


def test_bleeding_from_a_described_site_is_not_unexplained_bleeding(knowledge: GuidelineKnowledge) -> None:
    foreskin = assess(
        _record(age=70, symptoms=["foreskin tight and cracked, bleeding from under it for 3/12"]), knowledge
    )
    assert "1.6.10" in foreskin.matched_ids and "1.10.1" not in foreskin.matched_ids
    assert foreskin.top_action == "suspected_cancer_pathway_referral"
    easy = assess(_record(age=70, symptoms=["bleeding gums"]), knowledge)
    assert "1.10.1" in easy.matched_ids  # bleeding NG12 1.10.1 means is still read


def test_pain_in_a_bone_and_an_injury_that_explains_it(knowledge: GuidelineKnowledge) -> None:
    child = assess(_record(age=13, symptoms=["aching shin bone 5/52, waking her at night"]), knowledge)
    assert "1.11.3" in child.matched_ids
    tackle = assess(_record(age=11, symptoms=["sore shin since a tackle at rugby 4 days ago"]), knowledge)
    assert tackle.top_action == "no_criteria_met" and tackle.complete


def test_haemoptysis_with_a_diagnosed_pneumonia_is_explained_and_reviewed(
    knowledge: GuidelineKnowledge,
) -> None:
    """NG12 1.1.1 says unexplained haemoptysis; a pneumonia on the chest X-ray explains it (a
    decision recorded in docs/assessment.md), and the GP is asked to confirm it."""
    pneumonia = assess(
        _record(
            age=52,
            gender="Female",
            symptoms=["productive cough for 4 days", "blood-stained sputum today"],
            history=["CXR today: RLL consolidation c/w pneumonia", "on amoxicillin since yesterday"],
        ),
        knowledge,
    )
    assert "1.1.1" not in pneumonia.matched_ids, pneumonia.matched_ids
    assert any(r.kind == "explained_finding" and "haemoptysis" in r.detail for r in pneumonia.needs_review)
    assert any("haemoptysis" in a and "acute chest infection" in a for a in pneumonia.assumptions)
    persists = assess(
        _record(
            age=52,
            symptoms=["still coughing up blood after the antibiotics"],
            history=["pneumonia treated with amoxicillin"],
        ),
        knowledge,
    )
    assert "1.1.1" in persists.matched_ids
    queried = assess(_record(age=52, symptoms=["coughing up blood"], history=["?chest infection"]), knowledge)
    assert "1.1.1" in queried.matched_ids  # a queried diagnosis explains nothing


def test_an_old_cause_does_not_explain_a_finding_now(knowledge: GuidelineKnowledge) -> None:
    old = assess(
        _record(
            age=13,
            symptoms=["aching shin bone 5/52, waking her at night"],
            history=["fell off bike 18 months ago"],
        ),
        knowledge,
    )
    assert "1.11.3" in old.matched_ids
    recent = assess(
        _record(
            age=13,
            symptoms=["aching shin bone 5/52, waking her at night"],
            history=["fell off bike 5 weeks ago"],
        ),
        knowledge,
    )
    assert "1.11.3" not in recent.matched_ids


def test_a_positive_urine_culture_in_the_results_records_the_uti(knowledge: GuidelineKnowledge) -> None:
    child = assess(
        _record(
            age=6,
            symptoms=["wee looked red this morning", "stings when she wees"],
            test_results={"MSU": "E. coli grown, >10^5 per ml", "visible haematuria": "yes"},
        ),
        knowledge,
    )
    assert "1.12.3" not in child.matched_ids and "1.6.2" not in child.matched_ids, child.matched_ids
    dip_only = assess(
        _record(age=9, gender="Female", symptoms=["no symptoms"], test_results={"visible haematuria": "no"}),
        knowledge,
    )
    assert "1.12.3" not in dip_only.matched_ids


def test_nodes_in_several_regions_are_generalised(knowledge: GuidelineKnowledge) -> None:
    outcome = assess(
        _record(age=30, symptoms=["swollen glands in her neck, armpits and groins for a month"]), knowledge
    )
    assert "generalised_lymphadenopathy" in outcome.facts.symptoms and outcome.complete
    assert "1.10.1" in outcome.matched_ids
    exam = assess(
        _record(
            age=30, symptoms=["tired"], exam_findings=["bilateral cervical, axillary and inguinal nodes 2 cm"]
        ),
        knowledge,
    )
    assert "generalised_lymphadenopathy" in exam.facts.symptoms
    one_region = assess(
        _record(
            age=30,
            symptoms=["tired"],
            exam_findings=["tender cervical nodes bilaterally, no axillary or inguinal nodes"],
        ),
        knowledge,
    )
    assert "generalised_lymphadenopathy" not in one_region.facts.symptoms


@pytest.mark.parametrize(
    "text",
    [
        "oral thrush - white plaques that wipe off",
        "zigzag lines before the headache starts",
        "Tinel's sign +ve at the left wrist",
        "palpitations",
        "vertigo",
        "worried about cancer",
    ],
)
def test_findings_ng12_does_not_use_are_read(knowledge: GuidelineKnowledge, text: str) -> None:
    outcome = assess(_record(age=40, gender="Female", symptoms=[text]), knowledge)
    assert outcome.complete, [(f.clause, f.status) for f in outcome.findings]
    assert any(f.status == "not_ng12" and f.evidence for f in outcome.findings)


def test_a_finding_ng12_does_not_use_never_hides_an_ng12_finding(knowledge: GuidelineKnowledge) -> None:
    # a not-NG12 term with an NG12 finding word elsewhere in the clause: never read as not_ng12
    hidden = assess(_record(age=55, symptoms=["palpitations with a strange lump"]), knowledge)
    assert not any(f.status == "not_ng12" and "lump" in f.clause for f in hidden.findings)
    assert any(f.concept == "lump" and f.status == "finding" for f in hidden.findings)
    # an NG12 finding in the same entry is still read
    both = assess(_record(age=55, symptoms=["palpitations, coughing up blood"]), knowledge)
    assert "1.1.1" in both.matched_ids
    # an infection called recurrent is not waved through (NG12 1.10.1)
    recurrent = assess(_record(age=30, symptoms=["recurrent oral thrush"]), knowledge)
    assert not any(f.status == "not_ng12" for f in recurrent.findings)


def test_clauses_that_describe_the_finding(knowledge: GuidelineKnowledge) -> None:
    outcome = assess(_record(age=40, symptoms=["bruises on arms and legs, tummy"]), knowledge)
    assert outcome.complete, outcome.unrecognised
    lump = assess(_record(age=40, exam_findings=["lump in breast, armpit"]), knowledge)
    assert not any(f.clause == "armpit" and f.status == "context" for f in lump.findings)


def test_no_remembered_injury_and_a_repeat_test(knowledge: GuidelineKnowledge) -> None:
    bruises = assess(
        _record(age=30, symptoms=["bruises on arms and legs 2 wks, doesn't remember knocking them"]),
        knowledge,
    )
    assert bruises.complete and "1.10.1" in bruises.matched_ids
    repeat = assess(
        _record(
            age=50,
            gender="Female",
            symptoms=["pink urine again, on and off"],
            history=["E. coli UTI treated with nitrofurantoin 5/52 ago; repeat MSU 3/52 ago no growth"],
        ),
        knowledge,
    )
    assert {"1.6.4", "1.6.6"} <= set(repeat.matched_ids) and "1.10.1" not in repeat.matched_ids


def test_reports_that_query_or_cannot_decide(knowledge: GuidelineKnowledge) -> None:
    meso = assess(
        _record(
            age=69,
            symptoms=["short of breath for 8 weeks"],
            history=["CXR report: R pleural thickening, ?mesothelioma"],
        ),
        knowledge,
    )
    assert "1.1.4" in meso.matched_ids
    uncertain = assess(
        _record(
            age=39,
            symptoms=["lump on thigh getting bigger"],
            history=["ultrasound of thigh: 6 cm fatty lesion, appearances equivocal"],
            exam_findings=["clinical concern persists"],
        ),
        knowledge,
    )
    assert "1.11.5" in uncertain.matched_ids


def test_report_wording_and_results_that_make_a_diagnosis(knowledge: GuidelineKnowledge) -> None:
    cxr = assess(
        _record(age=61, history=["CXR report: L hilar mass 3cm, appearances suspicious for malignancy"]),
        knowledge,
    )
    assert "1.1.1" in cxr.matched_ids
    stomach = assess(
        _record(age=74, exam_findings=["upper abdominal mass consistent with stomach cancer"]), knowledge
    )
    assert "1.2.6" in stomach.matched_ids  # NG12's own words
    pale_poo = assess(_record(age=47, symptoms=["stools pale and urine dark"]), knowledge)
    assert "pallor" not in pale_poo.facts.symptoms
    thyroid = assess(
        _record(
            age=34,
            symptoms=["weight down 6 kg over 10 weeks"],
            exam_findings=["smooth diffuse goitre with lid lag"],
            test_results={"TSH": "0.02 mU/L", "fT4": "31 pmol/L"},
        ),
        knowledge,
    )
    assert "1.13.2" not in thyroid.matched_ids and "1.8.5" not in thyroid.matched_ids, thyroid.matched_ids
    assert any("hyperthyroidism read from the results" in a for a in thyroid.assumptions)
    nodule = assess(_record(age=34, exam_findings=["thyroid nodule 2cm"]), knowledge)
    assert "1.8.5" in nodule.matched_ids


def test_items_of_an_examination_stated_normal(knowledge: GuidelineKnowledge) -> None:
    normal = assess(
        _record(
            age=34,
            symptoms=["headache"],
            exam_findings=["neurological examination normal incl. cranial nerves, gait, coordination"],
        ),
        knowledge,
    )
    # "cranial nerves", "gait" and "coordination" name examined parts only: normal, nothing unread
    assert normal.complete, normal.unrecognised
    assert normal.unrecognised == []
    abnormal = assess(_record(age=34, exam_findings=["coordination poor, gait unsteady"]), knowledge)
    assert "newly_abnormal_central_neurological_function" in abnormal.facts.symptoms


def test_memory_and_belief_never_hide_a_finding(knowledge: GuidelineKnowledge) -> None:
    """What the patient does not remember or think is not a negation of the finding beside it."""
    outcome = assess(
        _record(age=62, symptoms=["can't remember when she started coughing up blood"]), knowledge
    )
    assert "1.1.1" in outcome.matched_ids
    outcome = assess(
        _record(age=55, symptoms=["cannot remember when the bleeding from her back passage started"]),
        knowledge,
    )
    assert "rectal_bleeding" in outcome.facts.symptoms


def test_a_finding_under_a_negated_verb_is_still_read(knowledge: GuidelineKnowledge) -> None:
    """ "does not think the lump has gone": the patient's belief is negated, not the lump."""
    outcome = assess(
        _record(age=44, gender="Female", symptoms=["doesn't think the breast lump has gone away"]), knowledge
    )
    assert "1.4.1" in outcome.matched_ids, [(f.clause, f.status) for f in outcome.findings]
    absent = assess(_record(age=44, gender="Female", symptoms=["does not have a breast lump"]), knowledge)
    assert "1.4.1" not in absent.matched_ids


def test_the_bottom_lip_is_not_the_anal_bottom(knowledge: GuidelineKnowledge) -> None:
    outcome = assess(_record(age=60, symptoms=["lump on bottom lip for 4 weeks"]), knowledge)
    assert "anal_mass" not in outcome.facts.symptoms
    assert not any(r.startswith("1.3.") for r in outcome.matched_ids)


def test_a_finding_listed_after_normal_incl_is_not_taken_as_normal(knowledge: GuidelineKnowledge) -> None:
    outcome = assess(
        _record(age=70, exam_findings=["neuro exam normal incl. cranial nerves, weakness L arm"]), knowledge
    )
    # a weak arm alone is not read as a central deficit, so it stays unread: never absorbed into "normal"
    assert not outcome.complete, [(f.clause, f.status) for f in outcome.findings]
    assert outcome.unrecognised == ["weakness l arm"]
    assert outcome.top_action == "incomplete"


def test_a_negative_result_of_an_unknown_test_is_not_used_and_leaves_it_complete(
    knowledge: GuidelineKnowledge,
) -> None:
    """A result that reports nothing found names no finding, whatever the test; a positive or
    unexplained value of an unknown test still leaves the assessment incomplete."""
    outcome = assess(
        _record(
            age=40, gender="Male", symptoms=["cough"], test_results={"QX-7 assay": "negative", "MSU": "NAD"}
        ),
        knowledge,
    )
    reasons = {u.key: u.reason for u in outcome.unused_test_results}
    assert "reported negative or normal" in reasons["QX-7 assay"] and "MSU" in reasons
    assert outcome.unrecognised == [] and outcome.complete
    positive = assess(
        _record(age=40, gender="Male", symptoms=["cough"], test_results={"QX-7 assay": "positive"}),
        knowledge,
    )
    assert positive.unrecognised == ["QX-7 assay: positive"] and not positive.complete


def test_a_common_test_ng12_does_not_use_is_listed_as_not_used_whatever_its_value(
    knowledge: GuidelineKnowledge,
) -> None:
    """Common primary-care tests NG12 gives no threshold for (NT-proBNP, tTG, faecal calprotectin,
    urine ACR, STI tests) are read and listed as not used, so their value never makes the record
    incomplete; an imaging report is still read for what it says."""
    outcome = assess(
        _record(
            age=40,
            gender="Male",
            symptoms=["cough"],
            test_results={
                "NT-proBNP": "96 ng/L",
                "tTG IgA": "<1 U/mL",
                "faecal calprotectin": "35 ug/g",
                "urine ACR": "1.2 mg/mmol",
                "chlamydia NAAT": "positive",
            },
        ),
        knowledge,
    )
    reasons = {u.key: u.reason for u in outcome.unused_test_results}
    assert set(reasons) == {"NT-proBNP", "tTG IgA", "faecal calprotectin", "urine ACR", "chlamydia NAAT"}
    assert all("NG12 uses no result of this test" in r for r in reasons.values()), reasons
    assert outcome.unrecognised == [] and outcome.complete
    xray = assess(
        _record(
            age=30,
            gender="Male",
            symptoms=["aching thigh"],
            test_results={"X-ray R femur": "lytic lesion with cortical destruction and periosteal reaction"},
        ),
        knowledge,
    )
    assert "xray_suggests_bone_sarcoma" in {f.concept for f in xray.findings}
    assert "1.11.1" in xray.matched_ids


@pytest.mark.parametrize(
    ("entry", "field", "concept"),
    [
        ("coughing up streaks of bright red blood with his morning phlegm", "symptoms", "haemoptysis"),
        ("blood stained sputum most mornings", "symptoms", "haemoptysis"),
        ("1 cm indurated ulcer at the left anal margin", "exam_findings", "anal_ulceration"),
        ("ulcerated lesion on the lateral border of the tongue", "exam_findings", "oral_ulceration"),
        (
            "stony dull to percussion at the left base",
            "exam_findings",
            "chest_signs_compatible_with_pleural_disease",
        ),
        ("pee the colour of rose wine on and off", "symptoms", "haematuria"),
        ("heaviness in the left testicle for 6 weeks", "symptoms", "testicular_symptoms"),
    ],
)
def test_general_compositions_and_signs(
    knowledge: GuidelineKnowledge, entry: str, field: str, concept: str
) -> None:
    """Blood with phlegm is haemoptysis (NHS A-Z); an ulcer at a site is that site's ulceration (SNOMED);
    stony dullness is a pleural sign (Macleod's); pink or rose urine is visible haematuria (NHS A-Z)."""
    reading = read_record(_record(age=60, gender="Male", **{field: [entry]}), knowledge.lexicon)
    facts = finish(reading)
    assert concept in facts.symptoms or concept in facts.findings, reading.findings


def test_a_list_after_denies_is_negated_item_by_item(knowledge: GuidelineKnowledge) -> None:
    outcome = assess(
        _record(age=63, gender="Female", symptoms=["tickly cough", "denies SOB, haemoptysis, chest pain"]),
        knowledge,
    )
    assert "1.1.1" not in outcome.matched_ids and "1.1.2" not in outcome.matched_ids


def test_one_action_vocabulary_is_shared_with_the_frontend() -> None:
    """The web app's badges (frontend/js/vocab.js) cover exactly the actions and outcomes of
    ng12_common.actions, and the knowledge base's actions are its NG12 actions, most urgent first."""
    import re
    from pathlib import Path

    from ng12_common.actions import ACTION_ORDER, ACTIONS, action_rank

    vocab = (Path(__file__).resolve().parents[3] / "frontend" / "js" / "vocab.js").read_text("utf-8")
    block = vocab.split("export const ACTIONS = {", 1)[1].split("\n};", 1)[0]
    frontend = set(re.findall(r"^  ([a-z_]+): \{", block, re.M))
    assert frontend == set(ACTIONS)
    assert [action_rank(a) for a in ACTION_ORDER] == list(range(len(ACTION_ORDER)))
    assert all(action_rank(o) > action_rank("other") for o in ("no_criteria_met", "incomplete"))


@pytest.mark.parametrize(
    ("record", "not_expected"),
    [
        (  # a lesion that bleeds is not the bleeding tendency of 1.10.1
            {
                "age": 74,
                "gender": "Female",
                "symptoms": [
                    "red lump on her forearm, growing quickly",
                    "caught it on her sleeve and it bled a lot",
                ],
            },
            "1.10.1",
        ),
        (  # genital herpes explains a vulval ulcer
            {
                "age": 72,
                "gender": "Female",
                "symptoms": ["sore blisters then a raw ulcer on the vulva for 5 days"],
                "history": ["Diagnosis: primary genital herpes"],
                "test_results": {"HSV PCR swab": "HSV-2 DETECTED"},
            },
            "1.5.14",
        ),
        (  # a negated list runs on past an item the lexicon does not know
            {
                "age": 57,
                "gender": "Female",
                "symptoms": ["denies bloating, PR bleed, urinary symptoms, cough, dysphagia"],
            },
            "1.2.1",
        ),
        (  # one UTI treated; "again" is said of the blood
            {
                "age": 52,
                "gender": "Female",
                "symptoms": [
                    "visible blood in her urine again, 3 weeks after finishing trimethoprim for a UTI"
                ],
            },
            "1.10.1",
        ),
    ],
)
def test_local_or_explained_findings_do_not_meet_a_recommendation(
    knowledge: GuidelineKnowledge, record: dict[str, Any], not_expected: str
) -> None:
    outcome = assess(_record(**record), knowledge)
    assert not_expected not in outcome.matched_ids, outcome.matched_ids


def test_petechiae_above_the_nipple_line_after_vomiting_are_explained_and_reviewed(
    knowledge: GuidelineKnowledge,
) -> None:
    outcome = assess(
        _record(
            age=3,
            symptoms=["tiny red spots round his eyes and on his neck after being sick repeatedly yesterday"],
            exam_findings=[
                "petechiae confined to cheeks and neck (above nipple line); none on trunk or limbs"
            ],
        ),
        knowledge,
    )
    assert "1.10.2" not in outcome.matched_ids
    assert any(r.kind == "explained_finding" for r in outcome.needs_review), outcome.needs_review


def test_copd_explains_its_usual_cough_but_not_a_changed_one(knowledge: GuidelineKnowledge) -> None:
    """NICE NG115 / CKS Lung cancer: COPD's lasting cough is explained; a new or worse cough is not."""
    stable = assess(
        _record(
            age=79,
            smoking_history="current smoker",
            history=["COPD on inhalers - stable, no change in cough or breathing"],
        ),
        knowledge,
    )
    assert "1.1.2" not in stable.matched_ids
    assert any(r.kind == "explained_finding" for r in stable.needs_review)
    worse = assess(
        _record(
            age=79, smoking_history="current smoker", symptoms=["cough worse for 4 weeks"], history=["COPD"]
        ),
        knowledge,
    )
    assert "1.1.2" in worse.matched_ids
    queried = assess(
        _record(
            age=68,
            smoking_history="ex-smoker",
            symptoms=["cough for 5/52, dry"],
            history=["COPD? never had spirometry"],
        ),
        knowledge,
    )
    assert "1.1.2" in queried.matched_ids


def test_a_rectal_mass_beside_a_benign_prostate_is_not_a_malignant_prostate(
    knowledge: GuidelineKnowledge,
) -> None:
    outcome = assess(
        _record(
            age=78,
            exam_findings=[
                "PR: hard, irregular, fixed mass on posterior rectal wall; "
                "prostate separately palpable - smooth, moderately enlarged, benign feel"
            ],
        ),
        knowledge,
    )
    assert "1.6.1" not in outcome.matched_ids and "1.3.5" in outcome.matched_ids
