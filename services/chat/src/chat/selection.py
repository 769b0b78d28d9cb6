"""Which retrieved recommendations an answer presents.

Candidates are the canonical recommendations of the retrieval hits (each with its best hit
score). When the question describes a patient (symptoms from the lexicon, maybe age/sex), the
structured criteria of every recommendation are evaluated: recommendations whose criteria are
met come first (even when search ranked them low), and candidates that fail only on an age
threshold are reported as near misses. When the question names cancer sites, candidates for
those sites are preferred. Candidates far below the best score are dropped.

The question asked comes first: when it names a test (CT, FIT, CA125, PSA, X-ray, endoscopy,
ultrasound, MRI, ...), the recommendations for that test (for the named cancer site, when one is
named: from all of NG12's recommendations, not only the retrieved ones) are presented first,
and a recommendation the stated patient happens to meet comes second, not instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from chat.clinical import ClinicalState
from chat.knowledge import Knowledge
from chat.premise import named_tests
from ng12_common.criteria import AgeBelow, Gap, evaluate_all
from ng12_common.criteria_index import patient_concepts
from ng12_common.served_recommendations import ServedRecommendation

SCORE_MARGIN = 0.15  # keep candidates within this of the best candidate


@dataclass
class NearMiss:
    rec: ServedRecommendation
    threshold: int
    age: int


@dataclass
class Selection:
    recs: list[tuple[ServedRecommendation, float]] = field(default_factory=list)
    met: set[str] = field(default_factory=set)
    near_misses: list[NearMiss] = field(default_factory=list)


def _evaluate(state: ClinicalState, knowledge: Knowledge, candidates: list[str]) -> dict[str, list[Gap]]:
    """rec id -> its typed gaps (empty when met), for the retrieved candidates and every other
    rec whose criteria this patient can meet (CriteriaIndex: the others cannot be met)."""
    if not state.symptoms:
        return {}
    facts = state.to_facts()
    wanted = knowledge.index.relevant(patient_concepts(facts), also=candidates)
    results = evaluate_all(facts, knowledge.context, only=wanted)
    return {rid: ([] if r.met else r.gaps) for rid, r in results.items()}


def asked_for(
    text: str,
    ranked: list[tuple[ServedRecommendation, float]],
    knowledge: Knowledge | None,
    turn: ClinicalState,
) -> list[tuple[ServedRecommendation, float]]:
    """The recommendations on the test the question names (for its cancer sites, if it names
    any), best first: retrieved ones by score, then any other of NG12's in guideline order."""
    tests = named_tests(text)
    if not tests:
        return []

    def fits(rec: ServedRecommendation) -> bool:
        if turn.cancer_sites and rec.cancer_site not in turn.cancer_sites:
            return False
        return any(re.search(pattern, rec.text, re.IGNORECASE) for pattern in tests.values())

    out = [(r, s) for r, s in ranked if fits(r)]
    if turn.cancer_sites and knowledge is not None:
        seen = {r.id for r, _ in out}
        best = ranked[0][1] if ranked else 0.0
        out += [(r, best) for r in knowledge.recs.values() if r.id not in seen and fits(r)]
    return out


def select(
    candidates: list[tuple[ServedRecommendation, float]],
    knowledge: Knowledge | None,
    turn: ClinicalState,
    top_k: int,
    text: str = "",
) -> Selection:
    ranked = sorted(candidates, key=lambda rs: -rs[1])
    asked = asked_for(text, ranked, knowledge, turn) if text else []
    scores = {rec.id: score for rec, score in ranked}
    sel = Selection()
    # retrieved candidates are evaluated too when an age is known: they may be near misses on age
    near_miss_ids = [r.id for r, _ in ranked] if turn.age is not None else []
    evaluation = _evaluate(turn, knowledge, near_miss_ids) if knowledge else {}
    met = [rid for rid, missing in evaluation.items() if not missing]
    sel.met = set(met)
    if turn.cancer_sites:
        on_site = [(r, s) for r, s in ranked if r.cancer_site in turn.cancer_sites]
        if on_site:
            ranked = on_site
    best = ranked[0][1] if ranked else 0.0
    kept = [(r, s) for r, s in ranked if s >= best - SCORE_MARGIN and r.id not in sel.met]
    chosen: list[tuple[ServedRecommendation, float]] = []
    if knowledge:
        met_sorted = sorted(met, key=lambda rid: (rid not in scores, -scores.get(rid, 0.0)))
        chosen = [(knowledge.recs[rid], scores.get(rid, best)) for rid in met_sorted if rid in knowledge.recs]
        if turn.cancer_sites:
            chosen = [(r, s) for r, s in chosen if r.cancer_site in turn.cancer_sites] or chosen
    if turn.age is not None:
        kept = [(r, s) for r, s in kept if _age_ok(r, turn.age)]
    if turn.sex:
        kept = [(r, s) for r, s in kept if r.population.get("sex") in (None, "any", turn.sex)]
    if sel.met:  # a patient was described: recs whose criteria are not met are not presented
        kept = [(r, s) for r, s in kept if r.criteria is None]
    # what the question names first; then what the patient meets; then the rest
    first = asked[:top_k]
    asked_ids = {r.id for r, _ in first}
    rest = [(r, s) for r, s in chosen + kept if r.id not in asked_ids]
    sel.recs = (first + rest)[:top_k]
    if turn.age is not None:
        for rec, _score in ranked:
            missing = evaluation.get(rec.id, [])
            gaps = _age_gaps(missing)
            # a near miss fails ONLY on age: "Age 58 does not meet the 60 and over criterion"
            # must not be said of a recommendation whose other criteria are not met either
            if rec.id in sel.met or not gaps or len(gaps) != len(missing):
                continue
            threshold, age = gaps[0]
            if age == turn.age:
                sel.near_misses.append(NearMiss(rec, threshold, age))
    return sel


def _age_ok(rec: ServedRecommendation, age: int) -> bool:
    lo, hi = rec.population.get("min_age"), rec.population.get("max_age_exclusive")
    return (lo is None or age >= lo) and (hi is None or age < hi)


def _age_gaps(gaps: list[Gap]) -> list[tuple[int, int]]:
    """(threshold, age) of each "aged N and over" criterion the patient is too young for."""
    return [(int(g.threshold), g.actual) for g in gaps if isinstance(g, AgeBelow) and g.actual < g.threshold]
