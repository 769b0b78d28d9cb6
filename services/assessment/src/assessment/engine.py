"""The deterministic NG12 criteria engine: a patient record in, the recommendations it meets out.

1. The record's free text (symptoms, exam findings, history, test results) becomes
   `PatientFacts` through the lexicon served by retrieval (`ng12_common.lexicon_match`).
2. Every site-specific recommendation (1.1-1.13) whose criteria are curated or derived is
   evaluated with `ng12_common.criteria.evaluate_all`; stale criteria are never evaluated.
3. The met ones, most urgent first, become `matched_recommendations` with their verbatim text;
   the closest unmet ones sharing a concept with the patient become `near_misses`; when nothing
   is met the verbatim 1.15 safety-netting recommendations are quoted.

No randomness and no I/O: the same record and knowledge give the same outcome, in the same order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assessment.knowledge import GuidelineKnowledge
from assessment.risk import ACTION_WORDS, RISK_LEVELS, action_rank
from ng12_common.criteria import (
    ASSUMPTIONS,
    Criterion,
    EvalContext,
    EvalResult,
    PatientFacts,
    evaluate_all,
)
from ng12_common.criteria_index import patient_concepts
from ng12_common.lexicon_match import facts_and_unmatched, facts_from_record
from ng12_common.models import MatchedRecommendation, NearMiss, PatientRecord, ReviewItem, UnusedTestResult
from ng12_common.served_recommendations import ServedRecommendation, rec_sort_key

MAX_NEAR_MISSES = 5
NO_CRITERIA_MET = "no_criteria_met"
_SEX_MISSING = re.compile(r"^sex (female|male) \(patient is")


@dataclass
class EngineOutcome:
    """What the rules decided for one patient (the narrative is written afterwards)."""

    facts: PatientFacts
    matched: list[MatchedRecommendation]
    matched_recs: list[ServedRecommendation]
    near_misses: list[NearMiss]
    top_action: str
    risk_level: str
    cancer_types: list[str]
    recommended_action: str
    safety_netting: list[ServedRecommendation]
    unrecognised: list[str]
    unused_test_results: list[UnusedTestResult]
    needs_review: list[ReviewItem]
    assumptions: list[str] = field(default_factory=lambda: list(ASSUMPTIONS))
    unmet_ids: frozenset[str] = frozenset()

    @property
    def matched_ids(self) -> list[str]:
        return [m.recommendation_id for m in self.matched]


def _classify_tests(record: PatientRecord, knowledge: GuidelineKnowledge) -> list[UnusedTestResult]:
    """Which test results the criteria cannot use, each with the reason (deterministic order)."""
    used_concepts = knowledge.all_criteria_concepts()
    unused: list[UnusedTestResult] = []
    for key in sorted(record.test_results):
        value = record.test_results[key]
        facts, _ = facts_from_record({"test_results": {key: value}}, knowledge.lexicon)
        produced = patient_concepts(facts) | facts.negated
        if not produced:
            unused.append(
                UnusedTestResult(
                    key=key,
                    value=value,
                    reason="not recognised: no NG12 test or finding in the lexicon matches this key or value",
                )
            )
        elif not produced & used_concepts:
            names = ", ".join(sorted(knowledge.labels.get(c, c) for c in produced))
            unused.append(
                UnusedTestResult(
                    key=key,
                    value=value,
                    reason=(
                        f"recognised as {names}, but no NG12 criterion uses this result as given: NG12 "
                        "states no numeric threshold for it (record the finding as the laboratory reports "
                        "it, for example 'thrombocytosis' or 'low haemoglobin', in exam_findings)"
                    ),
                )
            )
    return unused


def _matched(rec: ServedRecommendation, result: EvalResult) -> MatchedRecommendation:
    return MatchedRecommendation(
        recommendation_id=rec.id,
        action=rec.action,
        strength=rec.strength,
        cancer_site=rec.cancer_site,
        criteria_met=result.criteria_met,
        text=rec.text,
        page=rec.page,
        provisional=list(result.provisional),
    )


def _near_misses(
    results: dict[str, EvalResult], knowledge: GuidelineKnowledge, concepts: set[str]
) -> list[NearMiss]:
    candidates: list[tuple[float, int, tuple[int, ...], str, list[str]]] = []
    for rid, res in results.items():
        if res.met or not (knowledge.index.concepts_by_rec.get(rid, frozenset()) & concepts):
            continue
        if any(_SEX_MISSING.match(m) for m in res.missing):
            continue  # a recommendation for the other sex is not "nearly" met
        rec = knowledge.recommendations[rid]
        candidates.append((-res.closeness, action_rank(rec.action), rec.sort_key, rid, res.missing))
    candidates.sort()
    return [
        NearMiss(recommendation_id=rid, missing=missing) for *_, rid, missing in candidates[:MAX_NEAR_MISSES]
    ]


def _recommended_action(top: list[ServedRecommendation]) -> str:
    if not top:
        return (
            "No NG12 referral or investigation criterion is met by the recorded findings. "
            "Follow the NG12 safety-netting recommendations (1.15) quoted below."
        )
    words = ACTION_WORDS.get(top[0].action, top[0].action)
    quoted = " ".join(f'NG12 {r.id} (page {r.page}): "{r.text}"' for r in top)
    return f"{words[0].upper()}{words[1:]}. {quoted}"


def relevant_criteria(knowledge: GuidelineKnowledge, facts: PatientFacts) -> dict[str, Criterion]:
    """The criteria worth evaluating for these facts: all of them except those that can only be met
    with a concept the patient does not have (those are unmet, and share no concept, so they are
    not near misses either). The result is the same as evaluating everything, only faster."""
    return knowledge.index.relevant(patient_concepts(facts))


def assess(record: PatientRecord, knowledge: GuidelineKnowledge, prefilter: bool = True) -> EngineOutcome:
    """Evaluate every usable NG12 criteria tree for this patient."""
    facts, unrecognised, _ = facts_and_unmatched(record, knowledge.lexicon)  # tests: _classify_tests
    criteria = relevant_criteria(knowledge, facts) if prefilter else knowledge.criteria_by_id
    context = EvalContext(criteria, knowledge.labels, describe_cache=knowledge.describe_cache)
    results = evaluate_all(facts, context)
    met = [knowledge.recommendations[rid] for rid, res in results.items() if res.met]
    met.sort(key=lambda r: (action_rank(r.action), r.sort_key))
    matched = [_matched(r, results[r.id]) for r in met]
    top_action = met[0].action if met else NO_CRITERIA_MET
    top = [r for r in met if r.action == top_action]
    sites: list[str] = []
    for r in met:
        if r.cancer_site and r.cancer_site not in sites:
            sites.append(r.cancer_site)
    review = [
        ReviewItem(kind="provisional_judgement", recommendation_id=m.recommendation_id, detail=note)
        for m in matched
        for note in m.provisional
    ]
    return EngineOutcome(
        facts=facts,
        matched=matched,
        matched_recs=met,
        near_misses=_near_misses(results, knowledge, patient_concepts(facts)),
        top_action=top_action,
        risk_level=RISK_LEVELS[top_action],
        cancer_types=sites,
        recommended_action=_recommended_action(top),
        safety_netting=[] if met else knowledge.safety_netting,
        unrecognised=unrecognised,
        unused_test_results=_classify_tests(record, knowledge),
        needs_review=review,
        unmet_ids=frozenset(knowledge.criteria_by_id) - {r.id for r in met},
    )


def sorted_ids(ids: list[str]) -> list[str]:
    return sorted(set(ids), key=rec_sort_key)
