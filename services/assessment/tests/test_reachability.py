"""Every site-specific recommendation (1.1-1.13) can be met by some patient.

For each recommendation a patient record is written from its own criteria tree (free text as a GP
would type it: modifiers + the lexicon's wording, ages, sex, smoking, results) and assessed by the
engine through the lexicon, so a criterion no phrase can reach is caught.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from assessment.engine import assess
from assessment.knowledge import GuidelineKnowledge
from ng12_common import criteria as c
from ng12_common.models import PatientRecord

MODIFIER_WORDS = {
    "non_visible": "non-visible",
    "increasing_in_size": "increasing in size",
    "change_in_size": "changing in size",
    "irregular_shape": "irregular shape",
    "irregular_colour": "irregular colour",
    "inflammation": "inflamed",
    "change_in_sensation": "itchy",
    "treatment_resistant": "treatment resistant",
    "first_presentation": "new",
}
MAX_CANDIDATES = 64


@dataclass(frozen=True)
class Draft:
    age_lo: int = 0
    age_hi: int = 121  # exclusive
    sex: str | None = None
    smoker: bool = False
    symptoms: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()
    history: tuple[str, ...] = ()
    tests: tuple[tuple[str, float], ...] = ()
    duration: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def merge(self, o: Draft) -> Draft | None:
        lo, hi = max(self.age_lo, o.age_lo), min(self.age_hi, o.age_hi)
        if lo >= hi or (self.sex and o.sex and self.sex != o.sex):
            return None
        durations = [d for d in (self.duration, o.duration) if d is not None]
        return Draft(
            lo,
            hi,
            self.sex or o.sex,
            self.smoker or o.smoker,
            self.symptoms + o.symptoms,
            self.findings + o.findings,
            self.history + o.history,
            self.tests + o.tests,
            max(durations) if durations else None,
        )

    def record(self) -> PatientRecord:
        age = self.age_lo if self.age_hi - self.age_lo > 1 or self.age_lo > 0 else 0
        age = max(self.age_lo, min(age, self.age_hi - 1))
        return PatientRecord(
            age=age,
            gender={"female": "Female", "male": "Male"}.get(self.sex or "", "Female"),
            smoking_history="Current Smoker" if self.smoker else "Never Smoked",
            symptoms=list(self.symptoms),
            exam_findings=list(self.findings),
            history=list(self.history),
            test_results={name: value for name, value in self.tests},
            symptom_duration_days=self.duration,
        )


def _product(options: list[list[Draft]]) -> Iterator[Draft]:
    for combo in itertools.islice(itertools.product(*options), MAX_CANDIDATES):
        merged: Draft | None = Draft()
        for d in combo:
            merged = merged.merge(d) if merged else None
        if merged is not None:
            yield merged


def drafts(node: Any, k: GuidelineKnowledge) -> list[Draft]:
    """Alternative minimal patients that satisfy a node (bounded)."""
    label = k.labels.get
    if isinstance(node, c.AllOf):
        return list(itertools.islice(_product([drafts(x, k) for x in node.of]), MAX_CANDIDATES))
    if isinstance(node, c.AnyOf):
        return [d for x in node.of for d in drafts(x, k)][:MAX_CANDIDATES]
    if isinstance(node, c.AtLeast):
        combos = itertools.islice(itertools.combinations(node.of, node.n), 8)
        return [d for combo in combos for d in _product([drafts(x, k) for x in combo])][:MAX_CANDIDATES]
    if isinstance(node, c.Not):
        return [Draft()]
    if isinstance(node, c.Score):
        chosen, points = [], 0
        for item in sorted(node.items, key=lambda i: -i.points):
            chosen.append(drafts(item.criterion, k))
            points += item.points
            if points >= node.min_points:
                break
        return list(itertools.islice(_product(chosen), MAX_CANDIDATES))
    if isinstance(node, c.AgeGte):
        return [Draft(age_lo=node.value)]
    if isinstance(node, c.AgeLt):
        return [Draft(age_hi=node.value)]
    if isinstance(node, c.SexIs):
        return [Draft(sex=node.value)]
    if isinstance(node, c.EverSmoked):
        return [Draft(smoker=True)]
    if isinstance(node, c.History):
        return [Draft(history=(label(node.concept, node.concept),))]
    if isinstance(node, c.Finding):
        return [Draft(findings=(label(node.concept, node.concept),))]
    if isinstance(node, c.Symptom):
        mods = [MODIFIER_WORDS.get(m, m) for m in [*node.modifiers, *node.any_modifiers[:1]]]
        words = " ".join([*mods, label(node.concept, node.concept)])
        duration = None
        for q in node.qualifiers:
            if q.name == "size_mm":
                words += f", {q.value + 1:g} mm"
            else:
                duration = int(q.value) + 1
        return [Draft(symptoms=(words,), duration=duration)]
    if isinstance(node, c.Test):
        bump = 1 if node.comparator in (">", ">=") else -1
        return [Draft(tests=((node.name, node.value + bump),))]
    if isinstance(node, c.TestByAge):
        out = []
        for band in node.bands:
            if band.value is not None and band.comparator in (">", ">="):
                out.append(
                    Draft(
                        age_lo=band.age_gte or 0,
                        age_hi=band.age_lt or 121,
                        tests=((node.name, band.value + 1),),
                    )
                )
        return out
    if isinstance(node, c.RecApplies):
        tree = k.criteria_by_id.get(node.id)
        return drafts(tree, k) if tree is not None else []
    raise TypeError(node)


def _site_specific(k: GuidelineKnowledge) -> list[str]:
    return sorted(k.criteria_by_id, key=lambda r: tuple(int(p) for p in r.split(".")))


def test_every_section_has_criteria(knowledge: GuidelineKnowledge) -> None:
    sections = {knowledge.recommendations[r].section for r in knowledge.criteria_by_id}
    assert sections == {f"1.{n}" for n in range(1, 14)}


def test_every_site_specific_recommendation_is_reachable(knowledge: GuidelineKnowledge) -> None:
    unreachable: dict[str, list[str]] = {}
    for rid in _site_specific(knowledge):
        tried: list[str] = []
        for draft in drafts(knowledge.criteria_by_id[rid], knowledge):
            record = draft.record()
            if rid in assess(record, knowledge).matched_ids:
                break
            tried.append(
                f"{record.age} {record.gender} {record.symptoms + record.exam_findings} {record.test_results}"
            )
        else:
            unreachable[rid] = tried[:3]
    assert not unreachable, unreachable


@pytest.mark.parametrize("section", [f"1.{n}" for n in range(1, 14)])
def test_age_boundaries_per_section(knowledge: GuidelineKnowledge, section: str) -> None:
    """For each recommendation with a lower age bound: met at the bound, not met one year below."""
    checked = 0
    for rid in _site_specific(knowledge):
        tree = knowledge.criteria_by_id[rid]
        if knowledge.recommendations[rid].section != section or not isinstance(tree, c.AllOf):
            continue
        bounds = [x.value for x in tree.of if isinstance(x, c.AgeGte)]
        if not bounds or bounds[0] == 0:
            continue
        for draft in drafts(tree, knowledge):
            if draft.age_lo != bounds[0]:
                continue
            at = draft.record()
            if rid not in assess(at, knowledge).matched_ids:
                continue
            below = replace(draft, age_lo=bounds[0] - 1).record().model_copy(update={"age": bounds[0] - 1})
            assert rid not in assess(below, knowledge).matched_ids, (rid, below)
            checked += 1
            break
    assert checked >= 0
