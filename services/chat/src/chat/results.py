"""The patient's test results a message gives ("PSA 4.1", "her CA125 is 42", "FIT came back 15"),
and what NG12's thresholds say about them.

A result is a fact about the patient (never a claim about NG12): it goes into the session's
clinical state (so "and if he were 72 with the same PSA?" still has it), into the criteria
evaluator's facts, and into one lead sentence per result comparing it with NG12's threshold for
that test (the recommendation's structured criteria: a `test` node such as CA125 >= 35 IU/ml in
1.5.7, or the age-banded PSA table of 1.6.3):

    A PSA of 4.1 micrograms/litre is below the threshold at age 72: NG12's threshold for age 70
    to 79 is more than 6.5 micrograms/litre (1.6.3).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ng12_common.criteria import AgeBand, Test, TestByAge, band_for_age, iter_nodes
from ng12_common.served_recommendations import ServedRecommendation, rec_sort_key

#: How a message names a test -> the test's name in NG12's structured criteria.
_NAMES = {"psa": "psa", "ca125": "ca125", "fit": "fit"}
_TEST = r"(?P<test>psa|ca[ -]?125|(?-i:FIT)|fit test|q ?fit|faecal immunochemical test)"
_VALUE = r"(?P<value>\d+(?:\.\d+)?)"
#: "PSA 4.1", "PSA of 4.1", "CA125 is 42", "FIT result was 15", "PSA came back at 7.2"
_RESULT = re.compile(
    rf"\b{_TEST}\b\s*(?:level|result|test|reading|value)?\s*"
    rf"(?:of|is|was|=|:|(?:came )?back(?: at| as)?|at|now)?\s*{_VALUE}"
    r"(?!\s*(?:years?|yrs?|y/?o|weeks?|days?|months?|%))",
    re.IGNORECASE,
)
#: "my pt's is 42", "hers came back 15": a result whose test the message names elsewhere.
_POSSESSIVE = re.compile(
    rf"\b(?:his|hers|her|theirs|their|(?:my |the )?(?:pt|patient)'?s)\b\s*(?:one |result |level )?"
    rf"(?:is|was|came back(?: at| as)?|=)\s*{_VALUE}\b",
    re.IGNORECASE,
)
#: A claim about NG12's threshold, not a result: "CA125 over 50", "PSA above 4".
_CLAIM_BEFORE = re.compile(
    r"(above|over|greater than|more than|below|under|less than|>|<|cut ?-?off|threshold)\s*$", re.I
)
_COMPARATORS = {">": "more than", ">=": "or more", "<": "less than", "<=": "or less"}


def _name(word: str) -> str | None:
    w = re.sub(r"[\s-]", "", word.lower())
    if w.startswith("ca125"):
        return "ca125"
    if w.startswith(("fit", "qfit", "faecal")):
        return "fit"
    return _NAMES.get(w)


def patient_results(message: str) -> dict[str, float]:
    """The test results a message gives for the patient: {"psa": 4.1}."""
    out: dict[str, float] = {}
    for m in _RESULT.finditer(message):
        between = message[m.end("test") : m.start("value")]
        if _CLAIM_BEFORE.search(between):
            continue
        name = _name(m.group("test"))
        if name is not None:
            out[name] = float(m.group("value"))
    named = {n for n in (_name(m.group("test")) for m in re.finditer(_TEST, message, re.I)) if n}
    if len(named) == 1:
        for m in _POSSESSIVE.finditer(message):
            out.setdefault(next(iter(named)), float(m.group("value")))
    return out


def thresholds(
    recs: Iterable[ServedRecommendation],
) -> dict[str, tuple[ServedRecommendation, Test | TestByAge]]:
    """Each test's referral threshold in NG12's criteria (the first recommendation, in guideline
    order, with a `more than`/`or more` node or an age-banded table for it)."""
    out: dict[str, tuple[ServedRecommendation, Test | TestByAge]] = {}
    for rec in sorted(recs, key=lambda r: rec_sort_key(r.id)):
        if rec.criteria is None:
            continue
        for node in iter_nodes(rec.criteria):
            if isinstance(node, TestByAge) or (isinstance(node, Test) and node.comparator in (">", ">=")):
                out.setdefault(node.name, (rec, node))
    return out


def _num(value: float) -> str:
    return f"{value:g}"


def _band_ages(band: AgeBand) -> str:
    if band.age_gte is not None and band.age_lt is not None:
        return f"age {band.age_gte} to {band.age_lt - 1}"
    if band.age_gte is not None:
        return f"age above {band.age_gte - 1}"
    return f"age below {band.age_lt}"


def _position(value: float, comparator: str, limit: float) -> str:
    if value > limit:
        return "above"
    if value == limit:
        return "at the threshold and so meets" if comparator == ">=" else "equal to, not above,"
    return "below"


def compare(
    name: str, value: float, age: int | None, rec: ServedRecommendation, node: Test | TestByAge
) -> str:
    """One sentence: the patient's result against NG12's threshold for it."""
    label = name.upper() if name != "ca125" else "CA125"
    if isinstance(node, Test):
        limit = f"{_num(node.value)} {node.unit} {_COMPARATORS[node.comparator]}".strip()
        where = _position(value, node.comparator, node.value)
        return (
            f"A {label} of {_num(value)} {node.unit} is {where} the threshold: NG12's threshold is "
            f"{limit} ({rec.id})."
        )
    if age is None:
        return (
            f"NG12's {label} threshold depends on age (table in {rec.id}); the age is needed to "
            f"compare {_num(value)}."
        )
    band = band_for_age(node, age)
    if band is None:
        return f"NG12's {label} table ({rec.id}) gives no threshold for age {age}."
    if band.judgement or band.comparator is None or band.value is None:
        judgement = (band.judgement or "Use clinical judgement").rstrip(".").lower()
        return (
            f"For {_band_ages(band)} NG12 gives no {label} threshold: {judgement} ({rec.id}); "
            f"a {label} of {_num(value)} at age {age} is not compared with a number."
        )
    limit = f"{_COMPARATORS[band.comparator]} {_num(band.value)} {node.unit}"
    if band.comparator in (">=", "<="):
        limit = f"{_num(band.value)} {node.unit} {_COMPARATORS[band.comparator]}"
    where = _position(value, band.comparator, band.value)
    return (
        f"A {label} of {_num(value)} {node.unit} is {where} the threshold at age {age}: NG12's threshold "
        f"for {_band_ages(band)} is {limit} ({rec.id})."
    )


def results_lead(
    results: dict[str, float], age: int | None, recs: Iterable[ServedRecommendation]
) -> tuple[str, list[ServedRecommendation]]:
    """The comparison sentences for the patient's results, and the recommendations they cite."""
    if not results:
        return "", []
    table = thresholds(recs)
    lines: list[str] = []
    cited: list[ServedRecommendation] = []
    for name, value in results.items():
        found = table.get(name)
        if found is None:
            continue
        rec, node = found
        lines.append(compare(name, value, age, rec, node))
        cited.append(rec)
    return " ".join(lines), cited
