"""The deterministic NG12 criteria engine: a patient record in, the recommendations it meets out.

1. The record's free text (symptoms, exam findings, history, test results) is read clause by
   clause (`ng12_common.reading`: tiers 1-2, ConText, test results, explanations; tier 3 is run
   by the graph before the engine) into `PatientFacts`.
2. Every site-specific recommendation (1.1-1.13) whose criteria are curated or derived is
   evaluated with `ng12_common.criteria.evaluate_all`; stale criteria are never evaluated.
3. The met ones, most urgent first, become `matched_recommendations` with their verbatim text;
   the closest unmet ones sharing a concept with the patient become `near_misses`; when nothing
   is met the verbatim 1.15 safety-netting recommendations are quoted.
4. Safety: when a finding was not understood the assessment is not `complete`; with nothing met
   the top action is then `incomplete`, never `no_criteria_met`, and the headline names the
   unread findings.

No randomness and no I/O: the same record and knowledge give the same outcome, in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assessment.knowledge import GuidelineKnowledge
from ng12_common.actions import INCOMPLETE, NO_CRITERIA_MET, action_info, action_rank
from ng12_common.criteria import (
    ASSUMPTIONS,
    Criterion,
    EvalContext,
    EvalResult,
    PatientFacts,
    SexMismatch,
    evaluate_all,
)
from ng12_common.criteria_index import patient_concepts
from ng12_common.models import (
    FindingRead,
    MatchedRecommendation,
    NearMiss,
    PatientRecord,
    ReviewItem,
    TestInterpretation,
    UnusedTestResult,
)
from ng12_common.reading.record import RecordReading, finish, read_record
from ng12_common.served_recommendations import ServedRecommendation, rec_sort_key

MAX_NEAR_MISSES = 5


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
    complete: bool = True
    findings: list[FindingRead] = field(default_factory=list)
    test_interpretations: list[TestInterpretation] = field(default_factory=list)

    @property
    def matched_ids(self) -> list[str]:
        return [m.recommendation_id for m in self.matched]


def _tests(
    reading: RecordReading, knowledge: GuidelineKnowledge, matched: list[MatchedRecommendation]
) -> tuple[list[TestInterpretation], list[UnusedTestResult]]:
    """Each result as read (with the matched recommendations that rely on it), and the unused ones."""
    used_concepts = knowledge.all_criteria_concepts()
    shown: list[TestInterpretation] = []
    unused: list[UnusedTestResult] = []
    for lab in reading.labs:
        concept = lab.finding or lab.test
        decides = [
            m.recommendation_id
            for m in matched
            if concept and concept in knowledge.index.concepts_by_rec.get(m.recommendation_id, frozenset())
        ]
        label = knowledge.labels.get(lab.finding, lab.finding.replace("_", " ")) if lab.finding else None
        shown.append(
            TestInterpretation(
                key=lab.key,
                value=lab.value,
                analyte=lab.analyte,
                value_used=lab.value_used,
                unit=lab.unit,
                rule=lab.rule,
                finding=label,
                decides=decides,
                source=lab.source,
            )
        )
        if lab.kind == "not_ng12":
            unused.append(
                UnusedTestResult(
                    key=lab.key, value=lab.value, reason="read; NG12 uses no result of this test"
                )
            )
        elif lab.earlier:
            unused.append(
                UnusedTestResult(key=lab.key, value=lab.value, reason=f"an earlier result: {lab.rule}")
            )
        elif concept is None:
            unused.append(UnusedTestResult(key=lab.key, value=lab.value, reason=lab.rule))
        elif concept not in used_concepts:
            unused.append(
                UnusedTestResult(
                    key=lab.key, value=lab.value, reason=f"{lab.rule}; no NG12 criterion uses it"
                )
            )
    not_understood = "not understood: no known test or NG12 finding matches this name or value"
    nothing_found = "a test NG12 does not use, reported negative or normal: it names no NG12 finding"
    for texts, reason in (
        (reading.unread_tests, not_understood),
        (reading.negative_unknown_tests, nothing_found),
    ):
        for text in texts:
            key, _, value = text.partition(": ")
            unused.append(UnusedTestResult(key=key, value=value, reason=reason))
    return shown, unused


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
        if any(isinstance(g, SexMismatch) and g.actual is not None for g in res.gaps):
            continue  # a recommendation for the other sex is not "nearly" met
        rec = knowledge.recommendations[rid]
        candidates.append((-res.closeness, action_rank(rec.action), rec.sort_key, rid, res.missing))
    candidates.sort()
    return [
        NearMiss(recommendation_id=rid, missing=missing) for *_, rid, missing in candidates[:MAX_NEAR_MISSES]
    ]


def _unread_note(unread: list[str]) -> str:
    names = "; ".join(f"'{u}'" for u in unread)
    return (
        f"Incomplete: these findings were not understood and were NOT checked against NG12: {names}. "
        "Review them (or re-enter them in other words) before relying on this assessment."
    )


def _done_note(done: list[ServedRecommendation]) -> str:
    ids = ", ".join(r.id for r in done)
    return (
        f"The test NG12 recommends for these findings ({ids}) has already been done; the recorded result "
        "is what decides (see test_interpretations)."
    )


def _recommended_action(
    top: list[ServedRecommendation], unread: list[str], done: list[ServedRecommendation]
) -> str:
    if not top:
        if unread:
            return (
                _unread_note(unread)
                + " The findings that were understood did not match an NG12 recommendation on their own."
                + (f" {_done_note(done)}" if done else "")
            )
        if done:
            return (
                f"{_done_note(done)} No NG12 referral or investigation criterion is met by the recorded "
                "findings and results. Follow the NG12 safety-netting recommendations (1.15) quoted below."
            )
        return (
            "No NG12 referral or investigation criterion is met by the recorded findings. "
            "Follow the NG12 safety-netting recommendations (1.15) quoted below."
        )
    words = action_info(top[0].action).words
    quoted = " ".join(f'NG12 {r.id} (page {r.page}): "{r.text}"' for r in top)
    headline = f"{words[0].upper()}{words[1:]}. {quoted}"
    return f"{headline} {_unread_note(unread)}" if unread else headline


def relevant_criteria(knowledge: GuidelineKnowledge, facts: PatientFacts) -> dict[str, Criterion]:
    """The criteria worth evaluating for these facts: all of them except those that can only be met
    with a concept the patient does not have (those are unmet, and share no concept, so they are
    not near misses either). The result is the same as evaluating everything, only faster."""
    return knowledge.index.relevant(patient_concepts(facts))


def assess(
    record: PatientRecord,
    knowledge: GuidelineKnowledge,
    prefilter: bool = True,
    reading: RecordReading | None = None,
) -> EngineOutcome:
    """Evaluate every usable NG12 criteria tree for this patient. `reading` is the record as read
    (with the semantic tier already applied by the graph); without it, tiers 1-2 only."""
    reading = reading or read_record(record, knowledge.lexicon)
    facts = finish(reading)
    criteria = relevant_criteria(knowledge, facts) if prefilter else knowledge.criteria_by_id
    context = EvalContext(
        criteria, knowledge.labels, describe_cache=knowledge.describe_cache, order=knowledge.eval_order
    )
    results = evaluate_all(facts, context)
    met = [knowledge.recommendations[rid] for rid, res in results.items() if res.met]
    met.sort(key=lambda r: (action_rank(r.action), r.sort_key))
    matched = [_matched(r, results[r.id]) for r in met]
    unread = reading.unread
    complete = reading.complete
    # The headline is what the record firmly meets; a match that relies on a judgement call (a
    # duration taken as "persistent") is listed and reviewed, and heads only when nothing is firm.
    # A test in primary care whose result is already recorded has been done: its result (and the
    # recommendations that use it, e.g. FIT 1.3.2, PSA 1.6.3) decides, so it does not head.
    done = [r for r in met if knowledge.offered_tests.get(r.id, frozenset()) & facts.tests.keys()]
    pending = [r for r in met if r not in done]
    firm = [r for r in pending if not results[r.id].provisional]
    heads = firm or pending
    top_action = heads[0].action if heads else (NO_CRITERIA_MET if complete else INCOMPLETE)
    top = [r for r in heads if r.action == top_action]
    sites: list[str] = []
    for r in met:
        if r.cancer_site and r.cancer_site not in sites:
            sites.append(r.cancer_site)
    review = [
        ReviewItem(
            kind="unread_finding",
            detail=f"not understood, not checked against NG12: '{u}'",
        )
        for u in unread
    ]
    review += [
        ReviewItem(
            kind="semantic_match",
            detail=(
                f"'{f.clause}' read as {f.label} by similarity (score {f.score}); confirm that this is what "
                "the record means"
            ),
        )
        for f in reading.findings
        if f.tier == "semantic" and f.status == "finding"
    ]
    review += [ReviewItem(kind="explained_finding", detail=note) for note in reading.explained_review]
    review += [
        ReviewItem(kind="provisional_judgement", recommendation_id=m.recommendation_id, detail=note)
        for m in matched
        for note in m.provisional
    ]
    review += [
        ReviewItem(
            kind="test_done",
            recommendation_id=r.id,
            detail="the test this recommendation offers has a recorded result; the result decides",
        )
        for r in done
    ]
    shown, unused = _tests(reading, knowledge, matched)
    return EngineOutcome(
        facts=facts,
        matched=matched,
        matched_recs=met,
        near_misses=_near_misses(results, knowledge, patient_concepts(facts)),
        top_action=top_action,
        risk_level=action_info(top_action).risk_level,
        cancer_types=sites,
        recommended_action=_recommended_action(top, unread, done),
        safety_netting=[] if heads else knowledge.safety_netting,
        unrecognised=unread,
        unused_test_results=unused,
        needs_review=review,
        assumptions=[*ASSUMPTIONS, *reading.explanations],
        unmet_ids=frozenset(knowledge.criteria_by_id) - {r.id for r in met},
        complete=complete,
        findings=reading.findings,
        test_interpretations=shown,
    )


def sorted_ids(ids: list[str]) -> list[str]:
    return sorted(set(ids), key=rec_sort_key)
