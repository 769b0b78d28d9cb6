"""A route, urgency or deadline claimed for findings, checked against what NG12 does for them.

"NG12 says 2WW for recurrent UTIs over 60", "FBC within 2 weeks for ?leukaemia", "all suspected
BCCs go 2WW": the words of the claim may all be in some recommendation on those findings (1.6.4
does say "suspected cancer pathway", and names urinary tract infection), yet NG12 routes the
findings otherwise. So this check does not look for the words. It asks the criteria engine which
recommendations a patient with only the findings named (unexplained and persistent; what the
message negates stays absent) meets, at the ages claimed (else the patient's own, else every age),
and compares the urgency claimed with the action each of them takes, in NG12's
action vocabulary (`ng12_common.actions`).

A claim is contradicted when a recommendation on the findings with a timeframe is met, and no
recommendation on them with an action of the urgency claimed is met or short only of what the
message cannot settle (a modifier, a result, a combination): 1.6.5's non-urgent referral is met
for recurrent UTI at 60 and over, and 1.6.4's suspected cancer pathway needs haematuria, which
the message negates. With a test claimed beside a single urgency ("FBC within 2 weeks"), only the
recommendations naming that test count.

`group_contradicted`: an urgency claimed to be one group's only ("that's for kids") for a patient
outside the group, when NG12's recommendation of that urgency for the group covers the patient.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from pydantic import BaseModel, ConfigDict

from chat.premise import ROUTE_ACTIONS, TESTS, Claim
from ng12_common.actions import action_info
from ng12_common.criteria import (
    EvalResult,
    Gap,
    MissingFinding,
    NotRecorded,
    SexMismatch,
    Unmet,
)
from ng12_common.served_recommendations import ServedRecommendation

#: The actions each urgency names, as NG12's "Terms used in this guideline" define them:
#: Immediate ("within a few hours"), Very urgent ("within 48 hours"), Urgent ("within 2 weeks"),
#: Suspected cancer pathway referral (the 2-week wait), Non-urgent.
IMMEDIATE = frozenset({"immediate_referral"})
VERY_URGENT = ROUTE_ACTIONS["very urgent"]
TWO_WEEKS = ROUTE_ACTIONS["suspected cancer pathway"]
NON_URGENT = ROUTE_ACTIONS["non-urgent"]
#: Actions with a timeframe; a test in primary care and other advice have none to compare.
TIMED = IMMEDIATE | VERY_URGENT | TWO_WEEKS | NON_URGENT

_URGENCIES = {"immediate": IMMEDIATE, "same-day": IMMEDIATE, "same day": IMMEDIATE, "emergency": IMMEDIATE}
#: Deadlines NG12's timeframes name: 48 hours (or 2 days) is very urgent, 2 weeks (14 days) urgent.
_DEADLINES = {
    "48 hour": VERY_URGENT,
    "2 day": VERY_URGENT,
    "2 week": TWO_WEEKS,
    "14 day": TWO_WEEKS,
}
#: Ages probed when neither the claim nor the patient gives one (as chat.premise's universal claims).
PROBE_AGES: tuple[int, ...] = (5, 15, 18, 25, 30, 35, 40, 45, 50, 55, 60, 65, 75, 85)


class RouteVerdict(BaseModel):
    """A contradicted route claim and the recommendations to quote instead (ids, most relevant first)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    claim: Claim
    quoted: list[str]
    said: str = ""  # what NG12 does for the findings: "NG12's action for them: non-urgent referral (1.6.5)."
    define: list[str] = []  # NG12's terms whose definitions settle the claim ("Children and young people")


def claimed_actions(claim: Claim) -> frozenset[str] | None:
    """The NG12 actions a claim's route, urgency or deadline names (None: it names none)."""
    if claim.kind == "action":
        return ROUTE_ACTIONS.get(claim.value)
    if claim.kind == "urgency":
        return _URGENCIES.get(claim.value)
    if claim.kind == "interval" and claim.subject == "deadline":
        return _DEADLINES.get(claim.value)
    return None


def probe_ages(found: list[Claim], patient_age: int | None) -> tuple[int, ...]:
    """The ages to evaluate at: within the age bounds claimed, else the patient's, else all."""
    bounds = [c for c in found if c.kind == "age"]
    if bounds:
        ages = PROBE_AGES
        for c in bounds:
            limit = int(c.value)
            ages = tuple(a for a in ages if (a >= limit if c.subject == "over" else a < limit))
        return ages
    return (patient_age,) if patient_age is not None else PROBE_AGES


def _unsettled(gap: Gap, partly_met: bool) -> bool:
    """A gap the message cannot settle: a modifier or duration of a finding it names ("visible":
    a word the message may have left out, so never held against the claim), a result not
    given, the sex not given, or the rest of a combination it meets part of (a combination none of
    whose parts it names is not the findings' recommendation)."""
    if isinstance(gap, MissingFinding):
        return gap.problem is not None
    if isinstance(gap, SexMismatch):
        return gap.actual is None
    if isinstance(gap, Unmet):
        return partly_met
    return isinstance(gap, NotRecorded)


def _possible(result: EvalResult | None) -> bool:
    """The recommendation is met, or could be for what the message leaves open."""
    if result is None:
        return False
    partly = any(a.op in _FINDING_OPS for a in result.satisfied)
    return result.met or all(_unsettled(g, partly) for g in result.gaps)


#: Atoms that are findings (an age or sex met is not part of a combination of findings met).
_FINDING_OPS = frozenset({"symptom", "finding", "history", "test", "test_by_age"})


def route_contradicted(
    found: list[Claim],
    on_findings: list[ServedRecommendation],
    results_at: Callable[[int], Mapping[str, EvalResult]],
    ages: tuple[int, ...],
) -> RouteVerdict | None:
    """The first route, urgency or deadline claim NG12 does not make for the findings named, with
    what it does make (the recommendations met, then those of the urgency claimed that are not);
    None when every such claim holds, or nothing on the findings with a timeframe is met.
    `results_at(age)`: the criteria results of `on_findings` for the probe patient at that age."""
    urgent = [(c, acts) for c in found if (acts := claimed_actions(c)) is not None]
    if not urgent or not on_findings or not ages:
        return None
    # one urgency with a test ("FBC within 2 weeks") is the test's: only recommendations naming it
    # count; several ("very urgent FBC, not the immediate referral") are not all the test's
    tests = (
        [TESTS.get(c.value, re.escape(c.value)) for c in found if c.kind == "test"]
        if len(urgent) == 1
        else []
    )
    pool = [r for r in on_findings if all(re.search(t, r.text, re.IGNORECASE) for t in tests)]
    if not pool:
        return None  # the test claimed is not on these findings: chat.premise's test check says so
    results = [results_at(age) for age in ages]
    met = [r for r in pool if r.action in TIMED and any(res.get(r.id, _NONE).met for res in results)]
    if not met:
        return None
    for claim, acts in urgent:
        routed = [r for r in pool if r.action in acts]
        if any(_possible(res.get(r.id)) for r in routed for res in results):
            continue
        quoted = [*met, *(r for r in routed if r not in met)]
        return RouteVerdict(claim=claim, quoted=[r.id for r in quoted], said=actions_said(met))
    return None


_NONE = EvalResult(met=False)


def actions_said(recs: list[ServedRecommendation]) -> str:
    """What NG12 does for the findings, in its action vocabulary: "For these findings NG12 gives a
    non-urgent referral (1.6.5)."."""
    by_label: dict[str, list[str]] = {}
    for rec in recs:
        by_label.setdefault(action_info(rec.action).label, []).append(rec.id)
    parts = [f"{label} ({', '.join(ids)})" for label, ids in by_label.items()]
    return f"For these findings NG12 gives: {'; '.join(parts)}." if parts else ""


#: NG12's age groups (Terms used in this guideline: children from birth to 15 years; adults 18 and
#: over), the ages of each, and the recommendations' population groups that are theirs.
_GROUP_AGES: dict[str, Callable[[int], bool]] = {"children": lambda a: a < 16, "adults": lambda a: a >= 18}
_GROUP_RECS = {"children": ("children", "children_and_young_people"), "adults": ("adults",)}
#: NG12's defined term for each population group of its recommendations (chat.definitions.TERMS).
_GROUP_TERMS = {"children": "Children", "children_and_young_people": "Children and young people"}


def group_contradicted(
    found: list[Claim],
    restricted: tuple[str, str] | None,
    on_findings: list[ServedRecommendation],
    results_at: Callable[[int], Mapping[str, EvalResult]],
    patient_age: int | None,
) -> RouteVerdict | None:
    """An urgency claimed to be only one group's ("not the immediate referral, that's for kids")
    for a patient outside that group, when NG12's recommendation of that urgency for the group is
    met by the patient all the same: 1.10.2's immediate referral is for children and young people,
    so for a 20-year-old too. `restricted`: (the words, the group) the message restricts to."""
    if restricted is None or patient_age is None or _GROUP_AGES[restricted[1]](patient_age):
        return None
    word, group = restricted
    results = results_at(patient_age)
    for claim, acts in ((c, a) for c in found if (a := claimed_actions(c)) is not None):
        theirs = [
            r
            for r in on_findings
            if r.action in acts
            and str(r.population.get("age_group")) in _GROUP_RECS[group]
            and results.get(r.id, _NONE).met
        ]
        if theirs:
            met = [r for r in on_findings if r not in theirs and results.get(r.id, _NONE).met]
            said = Claim("action", f"{claim.text} is only for {word}", claim.value)
            terms = [
                _GROUP_TERMS[g] for g in dict.fromkeys(str(r.population.get("age_group")) for r in theirs)
            ]
            return RouteVerdict(
                claim=said,
                quoted=[r.id for r in [*theirs, *met]],
                said=actions_said(theirs),
                define=[t for t in terms if t],
            )
    return None
