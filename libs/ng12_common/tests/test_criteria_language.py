"""Unit tests of the criteria rule language and its evaluator (no PDF needed)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ng12_common.criteria import (
    ASSUMPTIONS,
    EvalContext,
    PatientFacts,
    SymptomFact,
    assumptions,
    dependency_order,
    dump_criteria,
    evaluate,
    evaluate_all,
    parse_criteria,
    referenced_concepts,
    referenced_recs,
)


def sym(concept: str, *mods: str, **extra: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"op": "symptom", "concept": concept}
    if mods:
        node["modifiers"] = list(mods)
    node.update(extra)
    return node


LUNG_SIX = [sym(c, "unexplained") for c in ("cough", "fatigue", "shortness_of_breath", "chest_pain")]
RULE_112 = {
    "op": "all",
    "of": [
        {"op": "age_gte", "value": 40},
        {
            "op": "any",
            "of": [
                {"op": "at_least", "n": 2, "of": LUNG_SIX},
                {"op": "all", "of": [{"op": "ever_smoked"}, {"op": "at_least", "n": 1, "of": LUNG_SIX}]},
            ],
        },
    ],
}


# ------------------------------------------------------------------ parsing and serialisation


def test_round_trip_json() -> None:
    tree = parse_criteria(RULE_112)
    assert dump_criteria(tree) == RULE_112
    assert dump_criteria(parse_criteria(dump_criteria(tree))) == RULE_112


@pytest.mark.parametrize(
    "bad",
    [
        {"op": "nope"},
        {"op": "age_gte"},
        {"op": "age_gte", "value": 40, "extra": 1},
        {"op": "all", "of": []},
        {"op": "at_least", "n": 0, "of": [{"op": "ever_smoked"}]},
        {"op": "sex", "value": "other"},
        sym("cough", "sometimes"),
        {"op": "test", "name": "fit", "comparator": "=>", "value": 10, "unit": "x"},
    ],
)
def test_invalid_trees_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        parse_criteria(bad)


def test_referenced_concepts_and_recs() -> None:
    tree = parse_criteria(
        {
            "op": "all",
            "of": [
                sym("cough"),
                {"op": "finding", "concept": "rectal_mass"},
                {"op": "history", "concept": "asbestos_exposure"},
                {"op": "test", "name": "fit", "comparator": ">=", "value": 10, "unit": "µg/g"},
                {"op": "not", "criterion": {"op": "rec_applies", "id": "1.6.2"}},
            ],
        }
    )
    refs = referenced_concepts(tree)
    assert refs == {
        "symptom": {"cough"},
        "finding": {"rectal_mass"},
        "history": {"asbestos_exposure"},
        "test": {"fit"},
    }
    assert referenced_recs(tree) == {"1.6.2"}


# ------------------------------------------------------------------ atoms


@pytest.mark.parametrize(("age", "met"), [(39, False), (40, True), (41, True), (None, False)])
def test_age_gte_includes_boundary(age: int | None, met: bool) -> None:
    r = evaluate({"op": "age_gte", "value": 40}, PatientFacts(age=age))
    assert r.met is met
    if met:
        assert r.criteria_met == [f"age {age} ≥ 40"]
    elif age is None:
        assert r.missing == ["age ≥ 40 (age not recorded)"]
    else:
        assert r.missing == [f"age ≥ 40 (patient is {age})"]


@pytest.mark.parametrize(("age", "met"), [(49, True), (50, False)])
def test_age_lt_excludes_boundary(age: int, met: bool) -> None:
    r = evaluate({"op": "age_lt", "value": 50}, PatientFacts(age=age))
    assert r.met is met
    if not met:
        assert r.missing == ["age < 50 (patient is 50)"]


def test_sex() -> None:
    node = {"op": "sex", "value": "female"}
    assert evaluate(node, PatientFacts(sex="female")).met
    r = evaluate(node, PatientFacts(sex="male"))
    assert not r.met and r.missing == ["sex female (patient is male)"]
    assert evaluate(node, PatientFacts()).missing == ["sex female (sex not recorded)"]


@pytest.mark.parametrize(
    ("smoking", "met"), [("current", True), ("ex", True), ("never", False), (None, False)]
)
def test_ever_smoked(smoking: Any, met: bool) -> None:
    r = evaluate({"op": "ever_smoked"}, PatientFacts(smoking=smoking))
    assert r.met is met
    if smoking == "ex":
        assert r.criteria_met == ["ever smoked (ex-smoker)"]
    if smoking == "never":
        assert r.missing == ["ever smoked (never smoked)"]


def test_history_and_finding() -> None:
    ctx = EvalContext(labels={"asbestos_exposure": "exposed to asbestos"})
    hist = {"op": "history", "concept": "asbestos_exposure"}
    assert evaluate(hist, PatientFacts(history={"asbestos_exposure"}), ctx).criteria_met == [
        "exposed to asbestos"
    ]
    assert evaluate(hist, PatientFacts(), ctx).missing == ["exposed to asbestos"]
    find = {"op": "finding", "concept": "rectal_mass"}
    assert evaluate(find, PatientFacts(findings={"rectal_mass"})).met
    assert evaluate(find, PatientFacts(symptoms={"rectal_mass": []})).met  # a sign listed as a symptom
    assert not evaluate(find, PatientFacts(findings={"rectal_mass"}, negated={"rectal_mass"})).met


def test_symptom_unexplained_by_default_and_explained() -> None:
    node = sym("haemoptysis", "unexplained")
    r = evaluate(node, PatientFacts(symptoms={"haemoptysis": []}))
    assert r.met and r.criteria_met == ["unexplained haemoptysis"]
    r = evaluate(node, PatientFacts(symptoms={"haemoptysis": ["explained"]}))
    assert not r.met and "explains" in r.missing[0]


def test_symptom_negated_is_absent() -> None:
    r = evaluate(sym("weight_loss"), PatientFacts(symptoms={"weight_loss": []}, negated={"weight_loss"}))
    assert not r.met and r.missing == ["weight loss (recorded as absent)"]


def test_symptom_required_and_any_modifiers() -> None:
    node = sym("chest_infection", any_modifiers=["persistent", "recurrent"])
    assert evaluate(node, PatientFacts(symptoms={"chest_infection": ["recurrent"]})).met
    r = evaluate(node, PatientFacts(symptoms={"chest_infection": []}))
    assert not r.met and "not recorded as persistent or recurrent" in r.missing[0]
    vis = sym("haematuria", "visible")
    assert evaluate(vis, PatientFacts(symptoms={"haematuria": ["visible"]})).met
    assert not evaluate(vis, PatientFacts(symptoms={"haematuria": ["non_visible"]})).met
    assert not evaluate(vis, PatientFacts(symptoms={"haematuria": []})).met


def test_persistent_from_duration_is_provisional() -> None:
    node = sym("fatigue", "persistent")
    explicit = evaluate(node, PatientFacts(symptoms={"fatigue": ["persistent"]}))
    assert explicit.met and explicit.provisional == []
    by_duration = evaluate(node, PatientFacts(symptoms={"fatigue": []}, duration_days=30))
    assert by_duration.met and by_duration.provisional and "30 days" in by_duration.provisional[0]
    strict = evaluate(
        node, PatientFacts(symptoms={"fatigue": []}, duration_days=30), EvalContext(accept_provisional=False)
    )
    assert not strict.met and "not recorded as persistent" in strict.missing[0]
    no_duration = evaluate(node, PatientFacts(symptoms={"fatigue": []}))
    assert not no_duration.met


def test_symptom_qualifiers() -> None:
    big = sym("pigmented_skin_lesion", qualifiers=[{"name": "size_mm", "comparator": ">=", "value": 7}])

    def fact(mm: float) -> PatientFacts:
        return PatientFacts(symptoms={"pigmented_skin_lesion": SymptomFact(qualifiers={"size_mm": mm})})

    assert evaluate(big, fact(7)).met
    assert not evaluate(big, fact(6.5)).met
    assert (
        "size mm not recorded"
        in evaluate(big, PatientFacts(symptoms={"pigmented_skin_lesion": []})).missing[0]
    )
    ulcer = sym("oral_ulceration", qualifiers=[{"name": "duration_days", "comparator": ">", "value": 21}])
    assert not evaluate(ulcer, PatientFacts(symptoms={"oral_ulceration": []}, duration_days=21)).met
    assert evaluate(ulcer, PatientFacts(symptoms={"oral_ulceration": []}, duration_days=22)).met


@pytest.mark.parametrize(("value", "met"), [(9.9, False), (10, True), (150, True)])
def test_test_atom(value: float, met: bool) -> None:
    node = {"op": "test", "name": "fit", "comparator": ">=", "value": 10, "unit": "µg Hb/g"}
    r = evaluate(node, PatientFacts(tests={"fit": value}), EvalContext(labels={"fit": "FIT"}))
    assert r.met is met
    if met:
        assert r.criteria_met == [f"FIT {value:g} ≥ 10 µg Hb/g"]
    else:
        assert r.missing == ["FIT ≥ 10 µg Hb/g (result 9.9)"]
    assert evaluate(node, PatientFacts()).missing == ["fit ≥ 10 µg Hb/g (no result recorded)"]


PSA = {
    "op": "test_by_age",
    "name": "psa",
    "unit": "micrograms/litre",
    "bands": [
        {"age_lt": 40, "judgement": "Use clinical judgement"},
        {"age_gte": 40, "age_lt": 50, "comparator": ">", "value": 2.5},
        {"age_gte": 50, "age_lt": 60, "comparator": ">", "value": 3.5},
        {"age_gte": 80, "judgement": "Use clinical judgement"},
    ],
}


@pytest.mark.parametrize(
    ("age", "psa", "met"),
    [(45, 2.5, False), (45, 2.6, True), (49, 3.0, True), (50, 3.0, False), (59, 3.6, True)],
)
def test_test_by_age(age: int, psa: float, met: bool) -> None:
    assert evaluate(PSA, PatientFacts(age=age, tests={"psa": psa})).met is met


def test_test_by_age_judgement_band_is_not_met_and_says_so() -> None:
    r = evaluate(PSA, PatientFacts(age=35, tests={"psa": 9}))
    assert not r.met and "Use clinical judgement" in r.missing[0]
    r = evaluate(PSA, PatientFacts(age=65, tests={"psa": 9}))  # no band for 60-79 in this cut-down table
    assert not r.met and "no threshold for age 65" in r.missing[0]


# ------------------------------------------------------------------ combinators


def test_all_any_at_least_and_missing_wording() -> None:
    ctx = EvalContext(labels={"shortness_of_breath": "shortness of breath"})
    young = PatientFacts(age=39, smoking="current", symptoms={"cough": []})
    r = evaluate(RULE_112, young, ctx)
    assert not r.met
    assert r.missing == ["age ≥ 40 (patient is 39)"]
    assert 0 < r.closeness < 1

    one_never = PatientFacts(age=45, smoking="never", symptoms={"cough": []})
    r = evaluate(RULE_112, one_never, ctx)
    assert not r.met
    assert r.missing[0].startswith("1 more of: unexplained fatigue, unexplained shortness of breath")
    assert "(has unexplained cough)" in r.missing[0]

    one_smoker = PatientFacts(age=45, smoking="ex", symptoms={"cough": []})
    r = evaluate(RULE_112, one_smoker, ctx)
    assert r.met and r.closeness == 1.0
    assert r.criteria_met == ["age 45 ≥ 40", "ever smoked (ex-smoker)", "unexplained cough"]

    two_never = PatientFacts(age=40, smoking="never", symptoms={"cough": [], "fatigue": []})
    assert evaluate(RULE_112, two_never, ctx).met


def test_any_with_nothing_lists_options() -> None:
    node = {"op": "any", "of": [sym("dysphagia"), sym("haematemesis")]}
    r = evaluate(node, PatientFacts())
    assert r.missing == ["one of: dysphagia; or haematemesis"]
    assert r.closeness == 0


def test_closeness_ranks_near_misses() -> None:
    node = {"op": "all", "of": [{"op": "age_gte", "value": 55}, sym("weight_loss"), sym("reflux")]}
    near = evaluate(node, PatientFacts(age=54, symptoms={"weight_loss": [], "reflux": []}))
    far = evaluate(node, PatientFacts(age=20))
    assert near.closeness == pytest.approx(2 / 3)
    assert far.closeness == 0
    assert near.missing == ["age ≥ 55 (patient is 54)"]


def test_not() -> None:
    node = {
        "op": "all",
        "of": [sym("haematuria", "visible"), {"op": "not", "criterion": sym("urinary_tract_infection")}],
    }
    ctx = EvalContext(labels={"urinary_tract_infection": "urinary tract infection"})
    assert evaluate(node, PatientFacts(symptoms={"haematuria": ["visible"]}), ctx).met
    r = evaluate(node, PatientFacts(symptoms={"haematuria": ["visible"], "urinary_tract_infection": []}), ctx)
    assert not r.met and r.missing == ["no urinary tract infection (patient has urinary tract infection)"]


def test_score() -> None:
    lesion = "pigmented_skin_lesion"
    node = {
        "op": "score",
        "min_points": 3,
        "label": "weighted 7-point checklist score ≥ 3",
        "items": [
            {"points": 2, "criterion": sym(lesion, "change_in_size")},
            {"points": 2, "criterion": sym(lesion, "irregular_shape")},
            {"points": 1, "criterion": sym(lesion, "oozing")},
        ],
    }
    assert not evaluate(node, PatientFacts(symptoms={lesion: ["change_in_size"]})).met
    r = evaluate(node, PatientFacts(symptoms={lesion: ["change_in_size"]}))
    assert r.missing == ["weighted 7-point checklist score ≥ 3 (patient scores 2)"]
    assert r.closeness == pytest.approx(2 / 3)
    assert evaluate(node, PatientFacts(symptoms={lesion: ["change_in_size", "oozing"]})).met


# ------------------------------------------------------------------ rec_applies and ordering


def test_rec_applies_uses_other_results_in_dependency_order() -> None:
    criteria = {
        "1.6.3": {"op": "all", "of": [{"op": "rec_applies", "id": "1.6.2"}, PSA]},
        "1.6.2": sym("nocturia"),
        "9.9.9": None,
    }
    assert dependency_order(parse_all(criteria)).index("1.6.2") < dependency_order(parse_all(criteria)).index(
        "1.6.3"
    )
    ctx = EvalContext(criteria)
    res = evaluate_all(PatientFacts(age=45, symptoms={"nocturia": []}, tests={"psa": 3}), ctx)
    assert res["1.6.2"].met and res["1.6.3"].met
    assert "recommendation 1.6.2 applies" in res["1.6.3"].criteria_met
    res = evaluate_all(PatientFacts(age=45, tests={"psa": 3}), ctx)
    assert not res["1.6.3"].met
    assert res["1.6.3"].missing[0].startswith("criteria of recommendation 1.6.2 met (needs nocturia")
    unknown = evaluate({"op": "rec_applies", "id": "9.9.9"}, PatientFacts(), ctx)
    assert "not available" in unknown.missing[0]


def parse_all(criteria: dict[str, Any]) -> dict[str, Any]:
    return {k: (parse_criteria(v) if v else None) for k, v in criteria.items()}


def test_rec_applies_cycle_detected() -> None:
    criteria = {"a": {"op": "rec_applies", "id": "b"}, "b": {"op": "rec_applies", "id": "a"}}
    with pytest.raises(ValueError, match="cycle"):
        dependency_order(parse_all(criteria))
    with pytest.raises(ValueError, match="cycle"):
        evaluate_all(PatientFacts(), EvalContext(criteria))


def test_context_cache_is_per_patient() -> None:
    ctx = EvalContext({"x": sym("cough")})
    node = {"op": "rec_applies", "id": "x"}
    assert evaluate(node, PatientFacts(symptoms={"cough": []}), ctx).met
    assert not evaluate(node, PatientFacts(), ctx).met


def test_assumptions_are_quotable() -> None:
    a = assumptions()
    assert a == ASSUMPTIONS and a is not ASSUMPTIONS
    text = " ".join(a).lower()
    for needle in ("unexplained", "persistent", "18", "includes x", "ever smoked"):
        assert needle in text


def test_gaps_are_typed_and_their_words_are_rendered_from_them() -> None:
    """Callers decide on the gap's type and fields (chat's age-only near misses, assessment's
    other-sex filter); the words a GP reads are rendered from the same object."""
    from ng12_common.criteria import AgeBelow, AgeNotBelow, MissingFinding, NotRecorded, SexMismatch

    tree = {
        "op": "all",
        "of": [
            {"op": "age_gte", "value": 40},
            {"op": "sex", "value": "female"},
            {"op": "symptom", "concept": "cough"},
        ],
    }
    r = evaluate(tree, PatientFacts(age=39, sex="male"))
    assert r.gaps == [
        AgeBelow("age ≥ 40", 40, 39),
        SexMismatch("sex female", "female", "male"),
        MissingFinding("cough", "cough"),
    ]
    assert r.missing == ["age ≥ 40 (patient is 39)", "sex female (patient is male)", "cough"]
    assert evaluate({"op": "age_lt", "value": 16}, PatientFacts(age=16)).gaps == [
        AgeNotBelow("age < 16", 16, 16)
    ]
    assert evaluate({"op": "age_gte", "value": 40}, PatientFacts()).gaps == [
        NotRecorded("age ≥ 40", "age not recorded")
    ]
    absent = evaluate({"op": "symptom", "concept": "cough"}, PatientFacts(negated={"cough"}))
    assert absent.gaps == [MissingFinding("cough", "cough", absent=True)]
    assert absent.missing == ["cough (recorded as absent)"]
