"""Which recommendations' criteria are worth evaluating for a patient: a sound prefilter.

Most NG12 criteria can only be met when the patient has one of a few concepts (a symptom, a
finding, a test result, a history item). `CriteriaIndex` works out, once per index version, each
recommendation's concepts (including those of its `rec_applies` targets) and whether it can be
met without any of them. `relevant(present)` then returns the criteria that can still be met by a
patient with the concepts `present`, plus the `rec_applies` targets they depend on: evaluating
those gives exactly the same met recommendations as evaluating all of them, at a fraction of the
cost (assessment and chat both evaluate per request).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ng12_common.criteria import (
    AllOf,
    AnyOf,
    AtLeast,
    Criterion,
    Finding,
    History,
    PatientFacts,
    RecApplies,
    Score,
    Symptom,
    Test,
    TestByAge,
    referenced_concepts,
    referenced_recs,
)


def patient_concepts(facts: PatientFacts) -> set[str]:
    """The concepts a patient has (symptoms, findings, history, tests), without negated ones."""
    present = set(facts.symptoms) | facts.findings | facts.history | set(facts.tests)
    return present - facts.negated


@dataclass(frozen=True)
class CriteriaIndex:
    """The criteria trees of one index version and what each needs to be met."""

    criteria_by_id: Mapping[str, Criterion]
    concepts_by_rec: Mapping[str, frozenset[str]]  # concepts a rec's own tree references
    reach_concepts: Mapping[str, frozenset[str]]  # ... and those of its rec_applies targets
    needs_concept: Mapping[str, bool]  # True: cannot be met without one of reach_concepts
    deps: Mapping[str, frozenset[str]]  # rec -> its rec_applies targets (that have criteria)
    # inverted: concept -> recs whose reach has it; and the recs that need no concept at all
    recs_by_concept: Mapping[str, frozenset[str]] = field(default_factory=dict)
    concept_free: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        by_concept: dict[str, set[str]] = {}
        for rid, concepts in self.reach_concepts.items():
            for c in concepts:
                by_concept.setdefault(c, set()).add(rid)
        object.__setattr__(self, "recs_by_concept", {c: frozenset(r) for c, r in by_concept.items()})
        free = frozenset(rid for rid in self.criteria_by_id if not self.needs_concept.get(rid, False))
        object.__setattr__(self, "concept_free", free)

    @classmethod
    def build(cls, criteria_by_id: Mapping[str, Criterion]) -> CriteriaIndex:
        criteria = dict(criteria_by_id)
        concepts = {
            rid: frozenset(set().union(*referenced_concepts(tree).values())) for rid, tree in criteria.items()
        }
        return cls(
            criteria_by_id=criteria,
            concepts_by_rec=concepts,
            reach_concepts={rid: _reach(rid, criteria, concepts, ()) for rid in criteria},
            needs_concept={rid: _needs_concept(tree, criteria, ()) for rid, tree in criteria.items()},
            deps={rid: frozenset(referenced_recs(tree)) & set(criteria) for rid, tree in criteria.items()},
        )

    def all_concepts(self) -> frozenset[str]:
        return frozenset(self.recs_by_concept)

    def relevant(self, present: set[str], also: Iterable[str] = ()) -> dict[str, Criterion]:
        """The criteria a patient with concepts `present` can meet (all others are unmet and share
        none of the patient's concepts), plus those of `also` (ids the caller wants evaluated
        anyway), plus every rec_applies target they depend on."""
        selected = set(self.concept_free)
        for c in present:
            selected |= self.recs_by_concept.get(c, frozenset())
        keep = {rid: tree for rid, tree in self.criteria_by_id.items() if rid in selected}
        for rid in also:
            if rid in self.criteria_by_id:
                keep[rid] = self.criteria_by_id[rid]
        todo = list(keep)
        while todo:  # rec_applies targets (and theirs) stay available to their dependants
            for dep in self.deps.get(todo.pop(), frozenset()):
                if dep not in keep:
                    keep[dep] = self.criteria_by_id[dep]
                    todo.append(dep)
        return keep


def _reach(
    rid: str, criteria: Mapping[str, Criterion], concepts: Mapping[str, frozenset[str]], path: tuple[str, ...]
) -> frozenset[str]:
    if rid in path or rid not in criteria:
        return frozenset()
    out = set(concepts.get(rid, frozenset()))
    for dep in referenced_recs(criteria[rid]):
        out |= _reach(dep, criteria, concepts, (*path, rid))
    return frozenset(out)


def _needs_concept(node: Criterion, criteria: Mapping[str, Criterion], path: tuple[str, ...]) -> bool:
    """True when no way of meeting `node` avoids every concept atom (sound, conservative)."""
    if isinstance(node, AllOf):
        return any(_needs_concept(x, criteria, path) for x in node.of)
    if isinstance(node, (AnyOf, AtLeast)):
        return all(_needs_concept(x, criteria, path) for x in node.of)
    if isinstance(node, Score):
        return all(_needs_concept(i.criterion, criteria, path) for i in node.items)
    if isinstance(node, (Symptom, Finding, History, Test, TestByAge)):
        return True
    if isinstance(node, RecApplies):
        target = criteria.get(node.id)
        if target is None or node.id in path:
            return False
        return _needs_concept(target, criteria, (*path, node.id))
    return False  # age, sex, smoking, not
