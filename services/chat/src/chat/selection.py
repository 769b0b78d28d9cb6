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
from difflib import SequenceMatcher

from chat.clinical import ClinicalState
from chat.group_words import age_groups, groups_named
from chat.knowledge import Knowledge
from chat.premise import named_tests
from ng12_common.criteria import (
    AgeBelow,
    AgeGte,
    AtomResult,
    Gap,
    iter_nodes,
    parse_criteria,
    referenced_concepts,
)
from ng12_common.criteria_index import patient_concepts
from ng12_common.served_recommendations import ServedRecommendation

SCORE_MARGIN = 0.15  # keep candidates within this of the best candidate
ASKED_WITH_MET = 3  # at most this many named-test/action recs lead when the patient meets others
#: Actions a question can name -> NG12's action of the recommendations it asks for ("can I use a
#: 2ww for a BCC?": 1.7.6). Only with a cancer site named (every site has such recommendations).
_ACTIONS = {
    r"2 ?ww|two[- ]week[- ]wait|2[- ]week[- ]wait|suspected cancer pathway|fast[- ]track": (
        "suspected_cancer_pathway_referral",
    ),
    r"very urgent": ("very_urgent_referral", "very_urgent_investigation"),
    r"immediate(ly)?|same[- ]day|admit": ("immediate_referral",),
    r"non-?urgent|routine referral|routine": ("non_urgent_referral", "non_urgent_investigation"),
}
#: Imaging asked about without naming the scan ("what imaging?", "a gynae scan?"): NG12's
#: recommendations of any scan (CT, MRI, ultrasound, X-ray).
_IMAGING = re.compile(r"\b(imaging|scans?|radiology)\b", re.I)
_IMAGING_TEXT = r"\bct\b|\bmri\b|ultrasound|x-?ray|\bscan\b"
#: Safety netting asked about for a site: that site's advice to return or be reviewed (1.5.4).
_SAFETY_NET = re.compile(r"\bsafety[- ]?net\w*", re.I)
_SAFETY_NET_TEXT = re.compile(r"safety netting|\breturn to\b|\breview\b|\bre-?evaluat", re.I)


@dataclass
class NearMiss:
    rec: ServedRecommendation
    threshold: int
    age: int
    #: met at the threshold only through the branch of an "any of" that has the patient's symptoms
    #: (1.4.1's nipple changes at 50 and over; its breast lump goes with 30 and over)
    by_branch: bool = False


@dataclass
class Selection:
    recs: list[tuple[ServedRecommendation, float]] = field(default_factory=list)
    met: set[str] = field(default_factory=set)
    near_misses: list[NearMiss] = field(default_factory=list)
    #: rec id -> the criterion the patient meets, in words ("aged 50 and over with unexplained
    #: rectal bleeding"), for the met recommendations whose criteria say more than another's
    met_by: dict[str, str] = field(default_factory=dict)


def _evaluate(
    state: ClinicalState, knowledge: Knowledge, candidates: list[str]
) -> tuple[dict[str, list[Gap]], dict[str, str]]:
    """rec id -> its typed gaps (empty when met), for the retrieved candidates and every other
    rec whose criteria this patient can meet (CriteriaIndex: the others cannot be met); and for
    the met ones, the criterion met in words."""
    if not state.symptoms:
        return {}, {}
    facts = state.to_facts()
    wanted = knowledge.index.relevant(patient_concepts(facts), also=candidates)
    results = knowledge.evaluate(facts, frozenset(wanted))
    met_by = {rid: words for rid, r in results.items() if r.met and (words := met_in_words(r.satisfied))}
    return {rid: ([] if r.met else r.gaps) for rid, r in results.items()}, met_by


def met_in_words(satisfied: list[AtomResult]) -> str:
    """The criterion a patient meets, as NG12 words an age and what goes with it: "aged 50 and
    over with unexplained rectal bleeding" (the highest lower age bound and the lowest upper one
    met, then each symptom, finding or test met). Empty when only another recommendation's
    criteria were met (1.3.4: "1.3.1 applies")."""
    over = max((_bound(a) for a in satisfied if a.op == "age_gte"), default=None)
    under = min((_bound(a) for a in satisfied if a.op == "age_lt"), default=None)
    things = list(dict.fromkeys(a.requirement for a in satisfied if a.op in _MET_WORDS))
    if not things:
        return ""
    if over is not None and under is not None:
        age = f"aged {over} to {under - 1}"
    elif over is not None:
        age = f"aged {over} and over"
    else:
        age = f"aged under {under}" if under is not None else ""
    listed = ", ".join(things[:-1]) + (" and " if len(things) > 1 else "") + things[-1]
    return f"{age} with {listed}" if age else listed


def _bound(atom: AtomResult) -> int:
    """The age of an age atom (its typed threshold, never read back from its words)."""
    return int(atom.threshold or 0)


#: Criterion atoms named when saying what a patient meets (not sex, not "another recommendation").
_MET_WORDS = ("symptom", "finding", "test", "test_by_age", "ever_smoked", "history")


def asked_for(
    text: str,
    ranked: list[tuple[ServedRecommendation, float]],
    knowledge: Knowledge | None,
    turn: ClinicalState,
) -> list[tuple[ServedRecommendation, float]]:
    """The recommendations on the test the question names (for its cancer sites, if it names
    any), or, with a site named, on the action it names ("2ww", "very urgent") or its safety
    netting: best first, retrieved ones by score, then any other of NG12's in guideline order."""
    tests = named_tests(text)
    if not tests and _IMAGING.search(text):
        tests = {"imaging": _IMAGING_TEXT}
    actions: set[str] = set()
    if turn.cancer_sites:
        for pattern, acts in _ACTIONS.items():
            if re.search(rf"\b({pattern})\b", text, re.IGNORECASE):
                actions.update(acts)
    safety_net = bool(turn.cancer_sites) and _SAFETY_NET.search(text) is not None
    if not tests and not actions and not safety_net:
        return []

    def fits(rec: ServedRecommendation) -> bool:
        on_test = any(re.search(pattern, rec.text, re.IGNORECASE) for pattern in tests.values())
        # another site's recommendation on the test asked about fits when it names the site: 1.3.1
        # (colorectal, FIT) says that unexplained anal ulceration needs no FIT before referral
        if turn.cancer_sites and rec.cancer_site not in turn.cancer_sites:
            return on_test and _names_site(rec, turn)
        if rec.action in actions or (safety_net and _SAFETY_NET_TEXT.search(rec.text)):
            return True
        return on_test

    out = [(r, s) for r, s in ranked if fits(r)]
    if knowledge is not None and (turn.cancer_sites or (tests and turn.symptoms)):
        # with a site named, all of NG12's on the test or action for it; with a patient described,
        # all of NG12's on the test for one of their symptoms (a scan asked about for visible
        # haematuria: 1.5.12's ultrasound, which search for the urology question did not find)
        seen = {r.id for r, _ in out}
        best = ranked[0][1] if ranked else 0.0
        wanted = set(turn.symptoms)

        def also(rec: ServedRecommendation) -> bool:
            if turn.cancer_sites:
                return fits(rec)
            return fits(rec) and _about_symptoms(rec, wanted) and (turn.age is None or age_ok(rec, turn.age))

        out += [
            (r, best)
            for r in sorted(knowledge.recs.values(), key=lambda r: r.sort_key)
            if r.id not in seen and also(r)
        ]
    return out


def select(
    candidates: list[tuple[ServedRecommendation, float]],
    knowledge: Knowledge | None,
    turn: ClinicalState,
    top_k: int,
    text: str = "",
    first: list[tuple[ServedRecommendation, float]] | None = None,
) -> Selection:
    """`first`: recommendations the question asks about before any other (a process question's
    1.14-1.16 recommendations), then those on a test it names, then what the patient meets."""
    ranked = sorted(candidates, key=lambda rs: -rs[1])
    if knowledge is not None:
        turn = with_implied_sex(turn, knowledge)
    asked = asked_for(text, ranked, knowledge, turn) if text else []
    if turn.symptoms and asked:
        # a described patient: the named test's recommendations about none of their symptoms
        # (an OGD asked about for reflux and weight loss: not 1.2.2's haematemesis) do not lead
        wanted = set(turn.symptoms)
        asked = [
            (r, s) for r, s in asked if not _other_symptoms(r, wanted) or _names_symptom(r, wanted)
        ] or asked
    scores = {rec.id: score for rec, score in ranked}
    sel = Selection()
    # retrieved candidates are evaluated too when an age is known: they may be near misses on age
    near_miss_ids = [r.id for r, _ in ranked] if turn.age is not None else []
    evaluation, met_by = _evaluate(turn, knowledge, near_miss_ids) if knowledge else ({}, {})
    met = [rid for rid, missing in evaluation.items() if not missing]
    sel.met = set(met)
    sel.met_by = met_by
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
        # recommendations for another age group than the patient's are dropped, unless they are
        # all the question found ("17yo with an abdominal mass - do the neuroblastoma recs
        # apply?": 1.12.1 is for children, and the answer says so)
        kept = [(r, s) for r, s in kept if age_ok(r, turn.age)] or kept
    named_group = groups_named(text) if turn.age is None else None
    if named_group:  # "adult with ...", "a child with ...": that group's recommendations
        kept = [
            (r, s) for r, s in kept if r.population.get("age_group") in (None, "any", *named_group)
        ] or kept
    if turn.sex:
        kept = [(r, s) for r, s in kept if r.population.get("sex") in (None, "any", turn.sex)]
    if sel.met:  # a patient was described: recs whose criteria are not met are not presented
        kept = [(r, s) for r, s in kept if r.criteria is None]
    # what the question names first; then what the patient meets; then the rest
    if any(r.id not in {a.id for a, _ in asked} for r, _ in chosen):
        # the patient meets others: they come second, not instead (met ones of the named first)
        asked = sorted(asked, key=lambda rs: rs[0].id not in sel.met)[:ASKED_WITH_MET]
    leading = list({r.id: (r, s) for r, s in [*(first or []), *asked]}.values())[:top_k]
    asked_ids = {r.id for r, _ in leading}
    rest = [(r, s) for r, s in chosen + kept if r.id not in asked_ids]
    sel.recs = (leading + rest)[:top_k]
    if turn.age is not None and knowledge is not None:
        sel.recs = _other_pathway(sel.recs, turn.age, knowledge, top_k)
    if turn.age is not None:
        for rec, _score in ranked:
            missing = evaluation.get(rec.id, [])
            gaps = _age_gaps(missing)
            # a near miss fails ONLY on age: "Age 58 does not meet the 60 and over criterion"
            # must not be said of a recommendation whose other criteria are not met either
            if rec.id in sel.met or rec.id not in evaluation:
                continue
            if not gaps:
                # the evaluator reports one failing branch of an "any of" (1.4.1: the breast lump
                # at 30 and over, not the nipple changes at 50 and over): a near miss too if the
                # patient, as described, would meet it at one of its age thresholds above theirs
                older = sorted({t for t in _age_thresholds(rec) if t > turn.age})
                at = _met_at_age(turn, knowledge, rec.id, older) if older else None
                if at is not None:
                    sel.near_misses.append(NearMiss(rec, at, turn.age, by_branch=True))
                continue
            threshold, age = gaps[0]
            if len(gaps) != len(missing):
                # other gaps too: in another branch of an "any of" (1.4.1: a lump at 30 and over,
                # or nipple changes at 50 and over)? A near miss only if the patient, as described,
                # would meet it at the age threshold
                at = _met_at_age(turn, knowledge, rec.id, sorted({t for t, _ in gaps}))
                if at is None:
                    continue
                threshold = at
            if age == turn.age:
                sel.near_misses.append(NearMiss(rec, threshold, age, by_branch=len(gaps) != len(missing)))
    # a near miss is shown as not met for this patient, not also among what the answer presents
    missed = {m.rec.id for m in sel.near_misses}
    presented = [(r, s) for r, s in sel.recs if r.id not in missed]
    if missed and presented:
        sel.recs = presented
    return sel


def _age_thresholds(rec: ServedRecommendation) -> list[int]:
    """The "aged N and over" thresholds anywhere in the recommendation's criteria."""
    if rec.criteria is None:
        return []
    return [int(node.value) for node in iter_nodes(rec.criteria) if isinstance(node, AgeGte)]


def _names_site(rec: ServedRecommendation, turn: ClinicalState) -> bool:
    """The recommendation's text names one of the cancer sites the question names ("anal")."""
    return any(re.search(rf"\b{re.escape(site)}\b", rec.text, re.IGNORECASE) for site in turn.cancer_sites)


def _other_symptoms(rec: ServedRecommendation, wanted: set[str]) -> bool:
    """The recommendation's criteria name symptoms, none of them the patient's."""
    if rec.criteria is None:
        return False
    symptoms = referenced_concepts(parse_criteria(rec.criteria)).get("symptom", set())
    return bool(symptoms) and not (symptoms & wanted)


def with_implied_sex(turn: ClinicalState, knowledge: Knowledge) -> ClinicalState:
    """A patient of unstated sex with a symptom NG12 names only for one sex (vaginal discharge:
    women; every recommendation whose criteria name it is for women) is of that sex."""
    if turn.sex is not None or not turn.symptoms:
        return turn
    implied: set[str] = set()
    for symptom in turn.symptoms:
        sexes = {
            str(rec.population.get("sex") or "any")
            for rec in knowledge.recs.values()
            if _about_symptoms(rec, {symptom})
        }
        if len(sexes) == 1 and sexes != {"any"}:
            implied |= sexes
    if len(implied) != 1:
        return turn
    return turn.model_copy(update={"sex": implied.pop()})


def _about_symptoms(rec: ServedRecommendation, wanted: set[str]) -> bool:
    """The recommendation's criteria name one of these symptoms."""
    if rec.criteria is None:
        return False
    return bool(referenced_concepts(parse_criteria(rec.criteria)).get("symptom", set()) & wanted)


def _names_symptom(rec: ServedRecommendation, wanted: set[str]) -> bool:
    """The recommendation's text names one of these symptoms in words, outside its criteria
    (1.3.1 on FIT: "unexplained anal ulceration do not need to be offered FIT")."""
    text = rec.text.lower()
    return any(concept.replace("_", " ") in text for concept in wanted)


def _met_at_age(
    turn: ClinicalState, knowledge: Knowledge | None, rec_id: str, thresholds: list[int]
) -> int | None:
    """The lowest of the age thresholds at which this patient would meet the recommendation."""
    if knowledge is None:
        return None
    for threshold in thresholds:
        facts = turn.model_copy(update={"age": threshold}).to_facts()
        result = knowledge.evaluate(facts, frozenset((rec_id,))).get(rec_id)
        if result is not None and result.met:
            return threshold
    return None


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", re.sub(r"\[\d{4}.*?\]", "", text.lower()))


def counterpart(rec: ServedRecommendation, knowledge: Knowledge) -> ServedRecommendation | None:
    """The same recommendation for NG12's other age group (adults <-> children and young people):
    same cancer site, the most similar wording (1.11.4 <-> 1.11.6, 1.10.6 <-> 1.10.7). Worked out
    once per recommendation of a knowledge version (`Knowledge.counterparts`): it compares the
    wording with every other recommendation's."""
    if rec.id in knowledge.counterparts and knowledge.recs.get(rec.id) is rec:
        return knowledge.counterparts[rec.id]
    other = _counterpart(rec, knowledge)
    if knowledge.recs.get(rec.id) is rec:  # a recommendation of this version (not a hit's copy)
        knowledge.counterparts[rec.id] = other
    return other


def _counterpart(rec: ServedRecommendation, knowledge: Knowledge) -> ServedRecommendation | None:
    group = rec.population.get("age_group")
    if group not in ("adults", "children_and_young_people", "children"):
        return None
    mine = _words(rec.text)
    best: tuple[float, ServedRecommendation | None] = (0.6, None)
    for other in knowledge.recs.values():
        other_group = other.population.get("age_group")
        if other.cancer_site != rec.cancer_site or other_group in (group, None, "any"):
            continue
        ratio = SequenceMatcher(None, mine, _words(other.text)).ratio()
        if ratio > best[0]:
            best = (ratio, other)
    return best[1]


def _other_pathway(
    recs: list[tuple[ServedRecommendation, float]], age: int, knowledge: Knowledge, top_k: int
) -> list[tuple[ServedRecommendation, float]]:
    """NG12 has separate recommendations for adults and for children and young people. For a
    patient whose age group a presented recommendation is not for (a 12-year-old and an adults'
    recommendation), its counterpart for their group replaces it; for a young person (16 to 24),
    who may be referred on either pathway, both are presented, side by side."""
    groups = age_groups(age)
    out: list[tuple[ServedRecommendation, float]] = []
    seen: set[str] = set()
    for rec, score in recs:
        group = rec.population.get("age_group")
        other = counterpart(rec, knowledge)
        fits = group in (None, "any", *groups)
        pair = [(rec, score)] if fits else []
        if other is not None and other.population.get("age_group") in groups:
            pair.append((other, score))
        for r, s in pair or [(rec, score)]:
            if r.id not in seen:
                seen.add(r.id)
                out.append((r, s))
    return out[: max(top_k, len(recs))]


def age_ok(rec: ServedRecommendation, age: int) -> bool:
    """The recommendation's population admits a person of this age (no bound: any age)."""
    lo, hi = rec.population.get("min_age"), rec.population.get("max_age_exclusive")
    return (lo is None or age >= lo) and (hi is None or age < hi)


def _age_gaps(gaps: list[Gap]) -> list[tuple[int, int]]:
    """(threshold, age) of each "aged N and over" criterion the patient is too young for."""
    return [(int(g.threshold), g.actual) for g in gaps if isinstance(g, AgeBelow) and g.actual < g.threshold]
