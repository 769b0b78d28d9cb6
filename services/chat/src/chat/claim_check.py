"""The structured claims of chat.claim_model checked against NG12's recommendations.

Each attribute is held to what decides it: a sex to the subject recommendations' populations, a
prerequisite test to the referral recommendations on the findings (one that does not name the
test refers without it), an order of tests to a recommendation naming the second test with a
condition on the first, a group's cut-off to whether any recommendation names the group, a count
to a "2 or more" recommendation evaluated for the patient with one finding, an age floor to each
subject recommendation's lowest age, a route to the criteria engine for the patient described,
something left unsaid to a recommendation that says to explain it. (An outcome's timeframe is held
to NG12's definition by chat.respond, which looks the definition up.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from chat.claim_model import StructuredClaim
from chat.premise import ROUTE_ACTIONS, TESTS
from ng12_common.criteria import AtLeast, Symptom, iter_nodes
from ng12_common.served_recommendations import ServedRecommendation


@dataclass
class StructuredVerdict:
    claim: StructuredClaim
    quoted: list[ServedRecommendation] = field(default_factory=list)
    define: list[str] = field(default_factory=list)  # NG12 terms whose definitions settle it


#: Which recommendations a patient meets: (symptoms, age, smoking, ids) -> the ids met.
MetFor = Callable[[tuple[str, ...], int | None, str | None, tuple[str, ...]], frozenset[str]]


#: How NG12's text names the tests `chat.premise.TESTS` does not ("Bence–Jones", with an en dash).
_IN_TEXT = {
    "free light chain": r"free light chain",
    "bence-jones": r"bence\W?jones",
    "electrophoresis": r"electrophoresis",
}
#: A recommendation to tell the person what they are being referred for ("Explain to people who are
#: being referred with suspected cancer that they are being referred to a cancer service", 1.14.3).
_TELL = re.compile(r"\b(?:explain|tell|discuss|inform)\w*\b[^.]{0,80}\bcancer", re.IGNORECASE)


def subject_recs(
    claim: StructuredClaim,
    every: list[ServedRecommendation],
    for_symptoms: list[ServedRecommendation],
    retrieved: list[ServedRecommendation],
) -> list[ServedRecommendation]:
    """The recommendations a claim is about: those of the sites or sections it names, else those
    on the findings named, else those search found."""
    if claim.subject:
        named = [
            r
            for r in every
            if any(
                s in r.cancer_site.lower() or s in r.section_title.lower() or r.cancer_site.lower() in s
                for s in claim.subject
            )
        ]
        if named:
            return sorted(named, key=lambda r: r.sort_key)
    return for_symptoms or retrieved


def _text_pattern(test: str) -> str:
    return _IN_TEXT.get(test) or TESTS.get(test, re.escape(test))


def _names(rec: ServedRecommendation, test: str) -> bool:
    return re.search(_text_pattern(test), rec.text, re.IGNORECASE) is not None


def _first(recs: list[ServedRecommendation], met: frozenset[str]) -> list[ServedRecommendation]:
    """Those the patient meets first, in guideline order otherwise."""
    unique = list({r.id: r for r in recs}.values())
    return sorted(unique, key=lambda r: (r.id not in met, r.sort_key))


@dataclass
class Context:
    """What a structured claim is checked against."""

    every: list[ServedRecommendation]
    retrieved: list[ServedRecommendation]
    for_symptoms: list[ServedRecommendation]
    symptoms: tuple[str, ...] = ()  # the patient's (lexicon concepts)
    age: int | None = None
    smoking: str | None = None
    met_for: MetFor | None = None

    def met(
        self, recs: list[ServedRecommendation], symptoms: tuple[str, ...] | None = None
    ) -> frozenset[str]:
        """The ids of these recommendations the patient described meets."""
        if self.met_for is None or not recs:
            return frozenset()
        return self.met_for(
            self.symptoms if symptoms is None else symptoms, self.age, self.smoking, tuple(r.id for r in recs)
        )


def _sex_contradicted(claim: StructuredClaim, ctx: Context) -> StructuredVerdict | None:
    recs = subject_recs(claim, ctx.every, ctx.for_symptoms, ctx.retrieved)
    other = [r for r in recs if str(r.population.get("sex") or "any") != claim.value]
    if not other:
        return None
    return StructuredVerdict(claim, _first(other, ctx.met(other)))


def _referral_pool(claim: StructuredClaim, ctx: Context) -> list[ServedRecommendation]:
    """The recommendations on the findings, with those that refer to one of them by number (1.6.3:
    "possible symptoms of prostate cancer, as specified in recommendation 1.6.2")."""
    pool = ctx.for_symptoms or subject_recs(claim, ctx.every, ctx.for_symptoms, ctx.retrieved)
    ids = "|".join(re.escape(r.id) for r in pool)
    linked = [
        r for r in ctx.every if ids and r not in pool and re.search(rf"(?<![\d.])(?:{ids})(?![\d])", r.text)
    ]
    return [*pool, *linked]


def _prerequisite_holds(claim: StructuredClaim, ctx: Context) -> bool:
    """Every referral recommendation on the findings names the test, and there is one."""
    pool = _referral_pool(claim, ctx)
    referrals = [r for r in pool if r.action.endswith("_referral")]
    return bool(referrals) and all(_names(r, claim.value) for r in referrals)


def _prerequisite_contradicted(claim: StructuredClaim, ctx: Context) -> StructuredVerdict | None:
    if not ctx.for_symptoms and not claim.subject:
        return None  # a test before "referral" of nothing named: nothing to hold it against
    pool = _referral_pool(claim, ctx)
    referrals = [r for r in pool if r.action.endswith("_referral")]
    direct = [r for r in referrals if not _names(r, claim.value)]
    if not direct:
        return None  # every referral on the findings names the test (PSA before 1.6.3's referral)
    met = ctx.met(direct)
    if ctx.symptoms and ctx.age is not None and met:
        direct = [r for r in direct if r.id in met]  # the patient described is referred without it
    with_test = [r for r in pool if _names(r, claim.value) and r not in direct]
    return StructuredVerdict(claim, [*_first(direct, met), *with_test])


#: A condition on a test's result, within its clause: "If serum CA125 is 35 IU/ml or greater, ..."
#: (not "If serum free light chain testing is not available, use a Bence–Jones test": that names
#: Bence–Jones in what follows the condition, not in it).
_CONDITION_ON = r"\b(?:if|when|after|following|once|whose|unless)\b[^.;:,]{{0,60}}?(?:{test})"


def _order_contradicted(claim: StructuredClaim, ctx: Context) -> StructuredVerdict | None:
    first, then = claim.before, claim.value
    pool = list({r.id: r for r in [*ctx.for_symptoms, *ctx.retrieved, *ctx.every]}.values())
    naming_then = [r for r in pool if _names(r, then)]
    if not naming_then:
        return None
    first_pattern = _text_pattern(first)
    conditioned = re.compile(_CONDITION_ON.format(test=first_pattern), re.IGNORECASE)
    if any(conditioned.search(r.text) for r in naming_then):
        return None  # NG12 does put the second test after the first's result
    both = [r for r in naming_then if _names(r, first)]
    on_findings = [r for r in ctx.for_symptoms if _names(r, then) or _names(r, first)]
    quoted = [*both, *(r for r in on_findings if r not in both)] or naming_then
    return StructuredVerdict(claim, quoted)


def _group_contradicted(claim: StructuredClaim, ctx: Context, tests: list[str]) -> StructuredVerdict | None:
    pool = [r for r in ctx.every if any(_names(r, t) for t in tests)] if tests else []
    pool = pool or ctx.for_symptoms or ctx.retrieved
    stem = re.escape(claim.value.split()[0].rstrip("s")[:5])
    if claim.value in ("ethnicity", "race"):
        stem = r"ethnic|race|black|asian|african"
    if not pool or any(re.search(rf"\b{stem}", r.text, re.IGNORECASE) for r in pool):
        return None
    return StructuredVerdict(claim, _first(pool, ctx.met(pool)))


def _count_contradicted(claim: StructuredClaim, ctx: Context, tests: list[str]) -> StructuredVerdict | None:
    pool = subject_recs(claim, ctx.every, ctx.for_symptoms, ctx.retrieved)
    if tests:
        pool = [r for r in pool if any(_names(r, t) for t in tests)] or pool
    counted = [(r, n) for r in pool if r.criteria is not None for n in iter_nodes(r.criteria)]
    lists = [(r, n) for r, n in counted if isinstance(n, AtLeast) and n.n >= 2]
    if not lists:
        return None
    needs_more: list[ServedRecommendation] = []
    for rec, node in lists:
        listed = [c.concept for c in node.of if isinstance(c, Symptom)]
        own = [s for s in ctx.symptoms if s in listed]
        one = (own[0],) if own else tuple(listed[:1])
        age = ctx.age if ctx.age is not None else rec.population.get("min_age")
        if ctx.met_for is None or not one:
            continue
        if rec.id in ctx.met_for(one, age if isinstance(age, int) else 60, ctx.smoking, (rec.id,)):
            return None  # one finding is enough for the patient described
        if rec not in needs_more:
            needs_more.append(rec)
    return StructuredVerdict(claim, needs_more) if needs_more else None


def _age_scope_contradicted(claim: StructuredClaim, ctx: Context) -> StructuredVerdict | None:
    recs = subject_recs(claim, ctx.every, ctx.for_symptoms, ctx.retrieved)
    floor = int(claim.value)
    below = [
        r
        for r in recs
        if r.criteria is not None
        and not (isinstance(r.population.get("min_age"), int) and r.population["min_age"] >= floor)
    ]
    if not below:
        return None
    on_findings = [r for r in below if r in ctx.for_symptoms]
    rest = [r for r in below if r not in on_findings]
    return StructuredVerdict(claim, [*on_findings, *rest])


def _route_contradicted(claim: StructuredClaim, ctx: Context) -> StructuredVerdict | None:
    if not ctx.for_symptoms or not ctx.symptoms:
        return None
    if not claim.polarity:  # "he doesn't need a 2WW": a recommendation of that route he meets
        acts = ROUTE_ACTIONS.get(claim.value, frozenset())
        routed = [r for r in ctx.for_symptoms if r.action in acts]
        met = ctx.met(routed)
        return StructuredVerdict(claim, _first(routed, met)) if met else None
    with_test = [r for r in ctx.for_symptoms if _names(r, claim.value)]
    if not with_test or ctx.age is None:
        return None
    met = ctx.met(ctx.for_symptoms)
    if not met or any(r.id in met for r in with_test):
        return None  # the patient meets one that names the test, or none at all
    met_recs = [r for r in ctx.for_symptoms if r.id in met]
    return StructuredVerdict(claim, [*_first(met_recs, met), *with_test])


def _information_contradicted(claim: StructuredClaim, ctx: Context) -> StructuredVerdict | None:
    """Something claimed to be left unsaid that a recommendation says to explain or discuss."""
    telling = [r for r in ctx.every if _TELL.search(r.text)]
    if not telling:
        return None
    # the recommendation about what a referral is for first (1.14.3: "being referred to a cancer service")
    referral = [r for r in telling if re.search(r"\breferred\b[^.]{0,40}\bcancer service", r.text, re.I)]
    return StructuredVerdict(claim, [*referral, *(r for r in telling if r not in referral)])


def contradicted(found: list[StructuredClaim], ctx: Context, tests: list[str]) -> StructuredVerdict | None:
    """The first structured claim NG12 does not make, with what it does say; None when each holds
    (or there is nothing to hold it against). `tests`: the tests the message names."""
    checks: dict[str, Callable[[StructuredClaim], StructuredVerdict | None]] = {
        "sex": lambda c: _sex_contradicted(c, ctx),
        "prerequisite": lambda c: _prerequisite_contradicted(c, ctx),
        "order": lambda c: _order_contradicted(c, ctx),
        "group": lambda c: _group_contradicted(c, ctx, tests),
        "count": lambda c: _count_contradicted(c, ctx, tests),
        "age_scope": lambda c: _age_scope_contradicted(c, ctx),
        "route": lambda c: _route_contradicted(c, ctx),
        "information": lambda c: _information_contradicted(c, ctx),
    }  # "timeframe" is held to NG12's definition by respond._structured_check
    for claim in found:
        check = checks.get(claim.attribute)
        verdict = check(claim) if check is not None else None
        if verdict is not None:
            return verdict
    return None


def settled(found: list[StructuredClaim], ctx: Context) -> set[tuple[str, str]]:
    """The (kind, value) of `chat.premise` claims that a structured claim NG12 makes settles: the
    tests of an order NG12 gives ("CA125 first, then an ultrasound if raised": 1.5.7)."""
    out: set[tuple[str, str]] = set()
    for claim in found:
        if claim.attribute == "order" and _order_contradicted(claim, ctx) is None:
            out |= {("test", claim.before), ("test", claim.value)}
        if claim.attribute == "prerequisite" and _prerequisite_holds(claim, ctx):
            # "PSA before I can 2WW": the referral is NG12's, after the test (1.6.3)
            out |= {("action", "suspected cancer pathway"), ("test", claim.value)}
    return out
