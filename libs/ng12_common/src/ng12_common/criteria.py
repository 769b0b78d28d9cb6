"""Structured criteria for NG12 recommendations: a small rule language and its evaluator.

Every site-specific recommendation (1.1-1.13) carries a criteria tree, curated by hand from its
verbatim text and pinned to that text by hash (see ``ingestion.kb.criteria``). A tree is JSON:
each node is an object whose ``op`` field names its kind.

Combinators
    ``all``      ``{"op": "all", "of": [...]}``            every child is met
    ``any``      ``{"op": "any", "of": [...]}``            at least one child is met
    ``at_least`` ``{"op": "at_least", "n": 2, "of": [...]}`` n or more children are met
    ``not``      ``{"op": "not", "criterion": {...}}``      the child is not met ("without UTI")
    ``score``    ``{"op": "score", "min_points": 3, "items": [{"points": 2, "criterion": {...}}]}``
                 weighted checklist (the weighted 7-point checklist of 1.7.1)

Atoms
    ``age_gte``   ``{"op": "age_gte", "value": 40}``   "aged 40 and over" (includes 40)
    ``age_lt``    ``{"op": "age_lt", "value": 50}``    "aged under 50" (excludes 50)
    ``sex``       ``{"op": "sex", "value": "female"}``
    ``ever_smoked`` ``{"op": "ever_smoked"}``          current or ex-smoker
    ``history``   ``{"op": "history", "concept": "asbestos_exposure"}``
    ``symptom``   ``{"op": "symptom", "concept": "haemoptysis", "modifiers": ["unexplained"],
                  "any_modifiers": ["persistent", "recurrent"],
                  "qualifiers": [{"name": "size_mm", "comparator": ">=", "value": 7}]}``
                  ``modifiers`` are all required, ``any_modifiers`` needs one of them.
    ``finding``   ``{"op": "finding", "concept": "chest_xray_suggests_lung_cancer"}`` an examination
                  or investigation finding
    ``test``      ``{"op": "test", "name": "fit", "comparator": ">=", "value": 10,
                  "unit": "micrograms of haemoglobin per gram of faeces"}``
    ``test_by_age`` an age-banded threshold table (PSA, table 1 of NG12):
                  ``{"op": "test_by_age", "name": "psa", "unit": "micrograms/litre", "bands": [
                  {"age_gte": 40, "age_lt": 50, "comparator": ">", "value": 2.5}, ...,
                  {"age_gte": 80, "judgement": "Use clinical judgement"}]}``
    ``rec_applies`` ``{"op": "rec_applies", "id": "1.6.2"}`` another recommendation's criteria are met

Every node may carry ``label``: GP-readable words used instead of the generated description.

Evaluation
    ``evaluate(criteria, facts, context)`` returns an :class:`EvalResult`: ``met``; ``satisfied``
    (each satisfied atom with the patient fact that satisfied it, e.g. "age 55 ≥ 40",
    "unexplained haemoptysis"); ``missing`` (GP-readable, e.g. "age ≥ 40 (patient is 39)");
    ``closeness`` (fraction of atoms met, for ranking near misses) and ``provisional`` (judgement
    calls a met result relies on, e.g. a duration taken as "persistent"). ``evaluate_all`` evaluates
    a set of recommendations in dependency order so ``rec_applies`` sees the others' results.

Interpretation rules where NG12 leaves room are in :data:`ASSUMPTIONS` (one place, quotable).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

# --------------------------------------------------------------------------------------------
# Interpretation rules (the ONE place; an assessment response quotes these as `assumptions`)
# --------------------------------------------------------------------------------------------

ADULT_MIN_AGE = 18
"""NG12 does not define "adults"; 18 is used (NG12 lets young people 16-24 use either pathway)."""
CHILD_MAX_AGE_EXCLUSIVE = 16
"""NG12 "children": from birth to 15 years."""
CYP_MAX_AGE_EXCLUSIVE = 25
"""NG12 "children and young people": from birth to 24 years."""

ASSUMPTIONS: list[str] = [
    "Symptoms and signs are taken as unexplained unless the record gives an explanation "
    "(NG12: 'not led to a diagnosis being made ... after initial assessment').",
    "'Persistent' has no fixed period in NG12 (beyond the period normally associated with "
    "self-limiting problems, as assessed by the clinician). A symptom counts as persistent when the "
    "record says so; when the record gives only a duration, the criterion is treated as met "
    "provisionally and flagged for the clinician's judgement.",
    "No duration threshold is applied unless NG12 states one (for example oral ulceration 'lasting "
    "for more than 3 weeks'). Symptoms reported now count as within NG12's 'last 12 months'.",
    "Age bands follow NG12: children 0-15, young people 16-24, children and young people 0-24. "
    "NG12 does not define adults; 18 and over is used, so people aged 18-24 may meet both the adult "
    "and the children-and-young-people recommendations (NG12 allows either pathway). "
    "The ovarian recommendations 1.5.1-1.5.9 apply to women aged 18 and over.",
    "'X and over' includes X; 'under X' excludes X.",
    "A symptom that is not recorded, or is recorded as absent, counts as absent.",
    "NG12's own numeric thresholds are applied as NG12 states them (FIT, CA125, the PSA table, the "
    "weighted 7-point checklist, lesion diameter). Results NG12 names without a number (low "
    "haemoglobin, thrombocytosis, raised white cell count, hypercalcaemia, new-onset diabetes, high "
    "blood glucose) count when the record reports them as such, or when a result given as a number "
    "is outside the documented reference range shown with it (test_interpretations).",
    "'Ever smoked' means a current or ex-smoker.",
    "Recommendations written for women or men are matched on the recorded sex; the prostate "
    "recommendations (1.6.1-1.6.3, written for 'people', with no age) are applied to patients recorded as "
    "male aged 18 and over (table 1 asks for clinical judgement below 40).",
]


def assumptions() -> list[str]:
    """The interpretation rules applied by the evaluator, as quotable sentences."""
    return list(ASSUMPTIONS)


# --------------------------------------------------------------------------------------------
# Rule language
# --------------------------------------------------------------------------------------------

Modifier = Literal[
    "unexplained",
    "persistent",
    "recurrent",
    "frequent",
    "visible",
    "non_visible",
    "increasing_in_size",
    "change_in_size",
    "irregular_shape",
    "irregular_colour",
    "inflammation",
    "oozing",
    "change_in_sensation",
    "unilateral",
    "treatment_resistant",
    "first_presentation",
]
"""Modifiers a criterion can require. A patient fact may also carry ``explained``."""
MODIFIERS: frozenset[str] = frozenset(Modifier.__args__)  # type: ignore[attr-defined]
FACT_ONLY_MODIFIERS: frozenset[str] = frozenset({"explained"})

Comparator = Literal[">", ">=", "<", "<="]
_SYMBOL = {">": ">", ">=": "≥", "<": "<", "<=": "≤"}
Sex = Literal["female", "male"]
Smoking = Literal["never", "ex", "current"]


class _Node(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str | None = None


class AllOf(_Node):
    op: Literal["all"]
    of: list[Criterion] = Field(min_length=1)


class AnyOf(_Node):
    op: Literal["any"]
    of: list[Criterion] = Field(min_length=1)


class AtLeast(_Node):
    op: Literal["at_least"]
    n: int = Field(ge=1)
    of: list[Criterion] = Field(min_length=1)


class Not(_Node):
    op: Literal["not"]
    criterion: Criterion


class ScoreItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    points: int = Field(ge=1)
    criterion: Criterion


class Score(_Node):
    op: Literal["score"]
    min_points: int = Field(ge=1)
    items: list[ScoreItem] = Field(min_length=1)


class AgeGte(_Node):
    op: Literal["age_gte"]
    value: int = Field(ge=0)


class AgeLt(_Node):
    op: Literal["age_lt"]
    value: int = Field(ge=0)


class SexIs(_Node):
    op: Literal["sex"]
    value: Sex


class EverSmoked(_Node):
    op: Literal["ever_smoked"]


class History(_Node):
    op: Literal["history"]
    concept: str


class Qualifier(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Literal["size_mm", "duration_days"]
    comparator: Comparator
    value: float


class Symptom(_Node):
    op: Literal["symptom"]
    concept: str
    modifiers: list[Modifier] = Field(default_factory=list)
    any_modifiers: list[Modifier] = Field(default_factory=list)
    qualifiers: list[Qualifier] = Field(default_factory=list)


class Finding(_Node):
    op: Literal["finding"]
    concept: str


class Test(_Node):
    op: Literal["test"]
    name: str
    comparator: Comparator
    value: float
    unit: str


class AgeBand(BaseModel):
    model_config = ConfigDict(extra="forbid")
    age_gte: int | None = None
    age_lt: int | None = None
    comparator: Comparator | None = None
    value: float | None = None
    judgement: str | None = None  # NG12 gives no number for this band ("Use clinical judgement")


class TestByAge(_Node):
    op: Literal["test_by_age"]
    name: str
    unit: str
    bands: list[AgeBand] = Field(min_length=1)


class RecApplies(_Node):
    op: Literal["rec_applies"]
    id: str


Criterion = Annotated[
    AllOf
    | AnyOf
    | AtLeast
    | Not
    | Score
    | AgeGte
    | AgeLt
    | SexIs
    | EverSmoked
    | History
    | Symptom
    | Finding
    | Test
    | TestByAge
    | RecApplies,
    Field(discriminator="op"),
]
Atom = AgeGte | AgeLt | SexIs | EverSmoked | History | Symptom | Finding | Test | TestByAge | RecApplies

for _m in (AllOf, AnyOf, AtLeast, Not, ScoreItem, Score):
    _m.model_rebuild()

_ADAPTER: TypeAdapter[Criterion] = TypeAdapter(Criterion)


def parse_criteria(data: Mapping[str, Any] | Criterion) -> Criterion:
    """Validate a JSON-like dict (or pass through a parsed node) into a criteria tree."""
    if isinstance(data, BaseModel):
        return data
    return _ADAPTER.validate_python(data)


def dump_criteria(node: Criterion) -> dict[str, Any]:
    """JSON-serialisable dict of a criteria tree (no defaults, round-trips via parse_criteria)."""
    out: dict[str, Any] = _ADAPTER.dump_python(node, mode="json", exclude_defaults=True)
    out["op"] = node.op  # `op` has no default but keep it explicit
    return out


def iter_nodes(node: Criterion) -> Iterable[Criterion]:
    """Every node of a tree, depth first (the node itself first)."""
    yield node
    if isinstance(node, (AllOf, AnyOf, AtLeast)):
        for child in node.of:
            yield from iter_nodes(child)
    elif isinstance(node, Not):
        yield from iter_nodes(node.criterion)
    elif isinstance(node, Score):
        for item in node.items:
            yield from iter_nodes(item.criterion)


def referenced_concepts(node: Criterion) -> dict[str, set[str]]:
    """Concepts a tree refers to, by kind: symptom, finding, history, test."""
    out: dict[str, set[str]] = {"symptom": set(), "finding": set(), "history": set(), "test": set()}
    for n in iter_nodes(node):
        if isinstance(n, Symptom):
            out["symptom"].add(n.concept)
        elif isinstance(n, Finding):
            out["finding"].add(n.concept)
        elif isinstance(n, History):
            out["history"].add(n.concept)
        elif isinstance(n, (Test, TestByAge)):
            out["test"].add(n.name)
    return out


def referenced_recs(node: Criterion) -> set[str]:
    """Recommendation ids a tree depends on through ``rec_applies``."""
    return {n.id for n in iter_nodes(node) if isinstance(n, RecApplies)}


# --------------------------------------------------------------------------------------------
# Patient facts
# --------------------------------------------------------------------------------------------


class SymptomFact(BaseModel):
    """One observed symptom or sign: modifiers present and numeric qualifiers."""

    model_config = ConfigDict(extra="forbid")
    modifiers: set[str] = Field(default_factory=set)  # Modifier values, or "explained"
    qualifiers: dict[str, float] = Field(default_factory=dict)  # size_mm, duration_days
    text: str | None = None  # the GP's words, for display


class PatientFacts(BaseModel):
    """What the evaluator knows about a patient (built from a record by the lexicon matcher)."""

    model_config = ConfigDict(extra="forbid")
    age: int | None = None
    sex: Sex | None = None
    smoking: Smoking | None = None
    symptoms: dict[str, SymptomFact] = Field(default_factory=dict)
    negated: set[str] = Field(default_factory=set)
    findings: set[str] = Field(default_factory=set)
    history: set[str] = Field(default_factory=set)
    tests: dict[str, float] = Field(default_factory=dict)
    duration_days: int | None = None  # record-level symptom duration, if given

    @field_validator("symptoms", mode="before")
    @classmethod
    def _allow_modifier_sets(cls, v: Any) -> Any:
        """Accept ``{"cough": {"persistent"}}`` or ``{"cough": []}`` as shorthand."""
        if isinstance(v, Mapping):
            return {
                k: ({"modifiers": set(x)} if isinstance(x, (set, list, tuple, frozenset)) else x)
                for k, x in v.items()
            }
        return v


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


# Gaps: what an unmet criterion lacks, typed, so callers decide on the type and its fields (an age
# below a threshold, the other sex) and never parse the words back. ``str(gap)`` is the wording
# shown to a GP ("age ≥ 40 (patient is 39)").


@dataclass(frozen=True, slots=True)
class AgeBelow:
    """The patient is younger than an "aged N and over" criterion."""

    requirement: str  # "age ≥ 40" (or the criterion's own label)
    threshold: float
    actual: int

    def __str__(self) -> str:
        return f"{self.requirement} (patient is {self.actual})"


@dataclass(frozen=True, slots=True)
class AgeNotBelow:
    """The patient is at or over the age an "aged under N" criterion allows."""

    requirement: str
    threshold: float
    actual: int

    def __str__(self) -> str:
        return f"{self.requirement} (patient is {self.actual})"


@dataclass(frozen=True, slots=True)
class SexMismatch:
    """The criterion is for the other sex (`actual` None: sex not recorded)."""

    requirement: str
    required: str
    actual: str | None

    def __str__(self) -> str:
        why = "sex not recorded" if self.actual is None else f"patient is {self.actual}"
        return f"{self.requirement} ({why})"


@dataclass(frozen=True, slots=True)
class NotRecorded:
    """What the criterion needs is not in the record (age, smoking history, a test result)."""

    requirement: str
    what: str  # "age not recorded", "no result recorded"

    def __str__(self) -> str:
        return f"{self.requirement} ({self.what})"


@dataclass(frozen=True, slots=True)
class MissingFinding:
    """A symptom, finding or history item the patient does not have (`absent`: recorded as absent;
    `problem`: the finding is there but not as required, e.g. "the record explains the cough")."""

    requirement: str
    concept: str
    absent: bool = False
    problem: str | None = None

    def __str__(self) -> str:
        if self.problem:
            return self.problem
        return f"{self.requirement} (recorded as absent)" if self.absent else self.requirement


@dataclass(frozen=True, slots=True)
class Unmet:
    """Any other unmet requirement, already in words (a test result, a combination, a score)."""

    words: str

    def __str__(self) -> str:
        return self.words


Gap = AgeBelow | AgeNotBelow | SexMismatch | NotRecorded | MissingFinding | Unmet


@dataclass(frozen=True, slots=True)
class AtomResult:
    """The outcome of one atom. (Evaluation results are plain dataclasses, not pydantic models:
    an evaluation builds thousands of them and they never cross a process boundary.)"""

    op: str
    met: bool
    requirement: str  # "age ≥ 40"
    evidence: str | None = None  # "age 55 ≥ 40" (when met)
    gap: Gap | None = None  # what is missing (when not met)
    provisional: str | None = None  # a judgement a met atom relies on
    threshold: float | None = None  # an age atom's age (AgeGte/AgeLt value), met or not

    @property
    def missing(self) -> str | None:
        """The gap in words: "age ≥ 40 (patient is 39)"."""
        return None if self.gap is None else str(self.gap)


@dataclass(frozen=True, slots=True)
class EvalResult:
    """The outcome of a criteria tree for one patient."""

    met: bool
    satisfied: list[AtomResult] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    closeness: float = 0.0  # fraction of atoms met, 1.0 when met
    provisional: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[str]:
        """The gaps in words, rendered from them."""
        return [str(g) for g in self.gaps]

    @property
    def criteria_met(self) -> list[str]:
        """Evidence lines for display ("age 55 ≥ 40", "unexplained haemoptysis")."""
        return [a.evidence for a in self.satisfied if a.evidence]


class EvalContext:
    """What evaluation needs beyond the tree: other recommendations' criteria and concept labels.

    ``criteria_by_id`` maps recommendation ids to trees (None when a recommendation has no usable
    criteria). ``labels`` maps concept ids to display words. ``accept_provisional`` controls whether
    judgement-dependent atoms (a duration taken as "persistent") count as met.
    """

    def __init__(
        self,
        criteria_by_id: Mapping[str, Criterion | Mapping[str, Any] | None] | None = None,
        labels: Mapping[str, str] | None = None,
        accept_provisional: bool = True,
        describe_cache: dict[int, tuple[Any, str]] | None = None,
        order: Sequence[str] | None = None,
    ) -> None:
        """`order`: a dependency order of a superset of these criteria (``dependency_order``),
        computed once by a long-lived caller; filtered to these criteria."""
        # node id -> (node, words); the node is kept so its id cannot be reused while cached.
        # A long-lived caller (one knowledge base, many patients) may share one cache dict.
        self.describe_cache: dict[int, tuple[Any, str]] = {} if describe_cache is None else describe_cache
        self.criteria_by_id: dict[str, Criterion | None] = {
            k: (parse_criteria(v) if v is not None else None) for k, v in (criteria_by_id or {}).items()
        }
        self.labels = dict(labels or {})
        self.accept_provisional = accept_provisional
        self._cache: dict[str, EvalResult] = {}
        self._cache_key: str | None = None
        self._stack: list[str] = []
        self._order: list[str] | None = (
            None if order is None else [rid for rid in order if rid in self.criteria_by_id]
        )

    def label(self, concept: str) -> str:
        return self.labels.get(concept) or concept.replace("_", " ")

    def result_for(self, rec_id: str, facts: PatientFacts) -> EvalResult | None:
        """Result of another recommendation for these facts (cached per patient); None if unknown."""
        self.bind(facts)
        return self._result(rec_id, facts)

    def bind(self, facts: PatientFacts) -> None:
        """Keep the cached results only if they were computed for these facts (by value)."""
        key = facts.model_dump_json()
        if key != self._cache_key:
            self._cache, self._cache_key = {}, key

    def order(self) -> list[str]:
        """`dependency_order` of this context's criteria (computed once: they do not change)."""
        if self._order is None:
            self._order = dependency_order(self.criteria_by_id)
        return self._order

    def _result(self, rec_id: str, facts: PatientFacts) -> EvalResult | None:
        """`result_for` after `bind(facts)`."""
        if rec_id in self._cache:
            return self._cache[rec_id]
        tree = self.criteria_by_id.get(rec_id)
        if tree is None:
            return None
        if rec_id in self._stack:
            raise ValueError(f"rec_applies cycle: {' -> '.join([*self._stack, rec_id])}")
        self._stack.append(rec_id)
        try:
            result = evaluate(tree, facts, self)
        finally:
            self._stack.pop()
        self._cache[rec_id] = result
        return result


def dependency_order(criteria_by_id: Mapping[str, Criterion | None]) -> list[str]:
    """Recommendation ids ordered so every ``rec_applies`` target comes first; raises on a cycle."""
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(rid: str, path: list[str]) -> None:
        if state.get(rid) == 2:
            return
        if state.get(rid) == 1:
            raise ValueError(f"rec_applies cycle: {' -> '.join([*path, rid])}")
        state[rid] = 1
        tree = criteria_by_id.get(rid)
        if tree is not None:
            for dep in sorted(referenced_recs(tree)):
                if dep in criteria_by_id:
                    visit(dep, [*path, rid])
        state[rid] = 2
        order.append(rid)

    for rid in criteria_by_id:
        visit(rid, [])
    return order


def evaluate_all(
    facts: PatientFacts, context: EvalContext, only: Container[str] | None = None
) -> dict[str, EvalResult]:
    """Evaluate every recommendation of the context that has criteria (or those of them in
    `only`; a rec_applies target outside it is still evaluated when needed), in dependency order."""
    results: dict[str, EvalResult] = {}
    context.bind(facts)  # one serialisation of the facts per patient, not one per recommendation
    for rid in context.order():
        if only is not None and rid not in only:
            continue
        res = context._result(rid, facts)
        if res is not None:
            results[rid] = res
    return results


# --------------------------------------------------------------------------------------------
# Evaluator
# --------------------------------------------------------------------------------------------


def evaluate(
    criteria: Criterion | Mapping[str, Any], facts: PatientFacts, context: EvalContext | None = None
) -> EvalResult:
    """Evaluate a criteria tree against a patient's facts."""
    ctx = context or EvalContext()
    node = parse_criteria(criteria)
    return _eval(node, facts, ctx)


def _atom_result(a: AtomResult) -> EvalResult:
    if a.met:
        return EvalResult(
            met=True, satisfied=[a], closeness=1.0, provisional=[a.provisional] if a.provisional else []
        )
    return EvalResult(met=False, gaps=[a.gap or Unmet(a.requirement)], closeness=0.0)


def _merge_met(parts: list[EvalResult]) -> EvalResult:
    sat: list[AtomResult] = []
    prov: list[str] = []
    for p in parts:
        sat.extend(p.satisfied)
        prov.extend(x for x in p.provisional if x not in prov)
    return EvalResult(met=True, satisfied=sat, closeness=1.0, provisional=prov)


def _eval(node: Criterion, facts: PatientFacts, ctx: EvalContext) -> EvalResult:
    if isinstance(node, AllOf):
        parts = [_eval(c, facts, ctx) for c in node.of]
        if all(p.met for p in parts):
            return _merge_met(parts)
        gaps = [g for p in parts if not p.met for g in p.gaps]
        return EvalResult(
            met=False,
            satisfied=[a for p in parts if p.met for a in p.satisfied],
            gaps=gaps,
            closeness=sum(p.closeness for p in parts) / len(parts),
        )
    if isinstance(node, AnyOf):
        parts = [_eval(c, facts, ctx) for c in node.of]
        met_parts = [p for p in parts if p.met]
        if met_parts:
            return _merge_met(met_parts)
        best = max(parts, key=lambda p: p.closeness)
        if best.closeness > 0:
            return EvalResult(met=False, gaps=best.gaps, closeness=best.closeness)
        words = node.label or "one of: " + "; or ".join(describe(c, ctx) for c in node.of)
        return EvalResult(met=False, gaps=[Unmet(words)], closeness=0.0)
    if isinstance(node, AtLeast):
        parts = [_eval(c, facts, ctx) for c in node.of]
        met_parts = [p for p in parts if p.met]
        if len(met_parts) >= node.n:
            return _merge_met(met_parts)
        need = node.n - len(met_parts)
        unmet = [describe(c, ctx) for c, p in zip(node.of, parts, strict=True) if not p.met]
        top = sorted((p.closeness for p in parts), reverse=True)[: node.n]
        words = f"{need} more of: {', '.join(unmet)}"
        if met_parts:
            words += (
                f" (has {', '.join(a.evidence or a.requirement for p in met_parts for a in p.satisfied)})"
            )
        return EvalResult(
            met=False,
            satisfied=[a for p in met_parts for a in p.satisfied],
            gaps=[Unmet(words)],
            closeness=sum(top) / node.n,
        )
    if isinstance(node, Not):
        inner = _eval(node.criterion, facts, ctx)
        req = node.label or f"no {describe(node.criterion, ctx)}"
        if inner.met:
            found = ", ".join(a.evidence or a.requirement for a in inner.satisfied)
            return EvalResult(met=False, gaps=[Unmet(f"{req} (patient has {found})")], closeness=0.0)
        return _atom_result(AtomResult(op="not", met=True, requirement=req, evidence=req))
    if isinstance(node, Score):
        got = 0
        sat: list[AtomResult] = []
        prov: list[str] = []
        for item in node.items:
            r = _eval(item.criterion, facts, ctx)
            if r.met:
                got += item.points
                sat.extend(r.satisfied)
                prov.extend(r.provisional)
        req = node.label or f"score ≥ {node.min_points}"
        if got >= node.min_points:
            ev = AtomResult(op="score", met=True, requirement=req, evidence=f"{req}: {got} points")
            return EvalResult(met=True, satisfied=[*sat, ev], closeness=1.0, provisional=prov)
        return EvalResult(
            met=False,
            satisfied=sat,
            gaps=[Unmet(f"{req} (patient scores {got})")],
            closeness=min(1.0, got / node.min_points),
        )
    return _atom_result(_eval_atom(node, facts, ctx))


def _cmp(a: float, comparator: str, b: float) -> bool:
    return {">": a > b, ">=": a >= b, "<": a < b, "<=": a <= b}[comparator]


def _num(x: float) -> str:
    return f"{x:g}"


def _fact_for(concept: str, facts: PatientFacts) -> SymptomFact | None:
    if concept in facts.negated:
        return None
    if concept in facts.symptoms:
        return facts.symptoms[concept]
    if concept in facts.findings:
        return SymptomFact()
    return None


def _symptom_words(node: Symptom, ctx: EvalContext) -> str:
    pre = [m.replace("_", " ") for m in node.modifiers]
    words = " ".join([*pre, ctx.label(node.concept)])
    if node.any_modifiers:
        words = " or ".join(m.replace("_", " ") for m in node.any_modifiers) + " " + words
    for q in node.qualifiers:
        what = "size" if q.name == "size_mm" else "duration"
        unit = " mm" if q.name == "size_mm" else " days"
        words += f" ({what} {_SYMBOL[q.comparator]} {_num(q.value)}{unit})"
    return words


def describe(node: Criterion, ctx: EvalContext | None = None) -> str:
    """GP-readable words for what a node requires (memoised per context)."""
    if ctx is None:
        return _describe(node, EvalContext())
    hit = ctx.describe_cache.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    words = _describe(node, ctx)
    ctx.describe_cache[id(node)] = (node, words)
    return words


def _describe(node: Criterion, c: EvalContext) -> str:
    if node.label:
        return node.label
    if isinstance(node, AllOf):
        return " and ".join(describe(x, c) for x in node.of)
    if isinstance(node, AnyOf):
        return "(" + " or ".join(describe(x, c) for x in node.of) + ")"
    if isinstance(node, AtLeast):
        return f"{node.n} or more of: " + ", ".join(describe(x, c) for x in node.of)
    if isinstance(node, Not):
        return f"no {describe(node.criterion, c)}"
    if isinstance(node, Score):
        return f"score ≥ {node.min_points}"
    if isinstance(node, AgeGte):
        return f"age ≥ {node.value}"
    if isinstance(node, AgeLt):
        return f"age < {node.value}"
    if isinstance(node, SexIs):
        return f"sex {node.value}"
    if isinstance(node, EverSmoked):
        return "ever smoked"
    if isinstance(node, History):
        return c.label(node.concept)
    if isinstance(node, Symptom):
        return _symptom_words(node, c)
    if isinstance(node, Finding):
        return c.label(node.concept)
    if isinstance(node, Test):
        return f"{c.label(node.name)} {_SYMBOL[node.comparator]} {_num(node.value)} {node.unit}"
    if isinstance(node, TestByAge):
        return f"{c.label(node.name)} above the threshold for age"
    if isinstance(node, RecApplies):
        return f"criteria of recommendation {node.id} met"
    raise TypeError(f"unknown node {node!r}")


def _eval_atom(node: Atom, facts: PatientFacts, ctx: EvalContext) -> AtomResult:
    req = describe(node, ctx)
    if isinstance(node, (AgeGte, AgeLt)):
        if facts.age is None:
            return AtomResult(
                op=node.op, met=False, requirement=req, gap=NotRecorded(req, "age not recorded")
            )
        ok = facts.age >= node.value if isinstance(node, AgeGte) else facts.age < node.value
        sym = "≥" if isinstance(node, AgeGte) else "<"
        if ok:
            evidence = f"age {facts.age} {sym} {node.value}"
            return AtomResult(op=node.op, met=True, requirement=req, evidence=evidence, threshold=node.value)
        gap: Gap = (
            AgeBelow(req, node.value, facts.age)
            if isinstance(node, AgeGte)
            else AgeNotBelow(req, node.value, facts.age)
        )
        return AtomResult(op=node.op, met=False, requirement=req, gap=gap, threshold=node.value)
    if isinstance(node, SexIs):
        if facts.sex == node.value:
            return AtomResult(op=node.op, met=True, requirement=req, evidence=f"sex {facts.sex}")
        return AtomResult(op=node.op, met=False, requirement=req, gap=SexMismatch(req, node.value, facts.sex))
    if isinstance(node, EverSmoked):
        if facts.smoking in ("ex", "current"):
            word = "current smoker" if facts.smoking == "current" else "ex-smoker"
            return AtomResult(op=node.op, met=True, requirement=req, evidence=f"ever smoked ({word})")
        why = "smoking history not recorded" if facts.smoking is None else "never smoked"
        return AtomResult(op=node.op, met=False, requirement=req, gap=NotRecorded(req, why))
    if isinstance(node, History):
        if node.concept in facts.history and node.concept not in facts.negated:
            return AtomResult(op=node.op, met=True, requirement=req, evidence=req)
        return AtomResult(op=node.op, met=False, requirement=req, gap=MissingFinding(req, node.concept))
    if isinstance(node, Finding):
        if _fact_for(node.concept, facts) is not None:
            return AtomResult(op=node.op, met=True, requirement=req, evidence=req)
        return AtomResult(op=node.op, met=False, requirement=req, gap=MissingFinding(req, node.concept))
    if isinstance(node, Symptom):
        return _eval_symptom(node, facts, ctx, req)
    if isinstance(node, Test):
        name = ctx.label(node.name)
        if node.name not in facts.tests:
            return AtomResult(
                op=node.op, met=False, requirement=req, gap=NotRecorded(req, "no result recorded")
            )
        v = facts.tests[node.name]
        if _cmp(v, node.comparator, node.value):
            ev = f"{name} {_num(v)} {_SYMBOL[node.comparator]} {_num(node.value)} {node.unit}"
            return AtomResult(op=node.op, met=True, requirement=req, evidence=ev)
        return AtomResult(op=node.op, met=False, requirement=req, gap=Unmet(f"{req} (result {_num(v)})"))
    if isinstance(node, TestByAge):
        return _eval_test_by_age(node, facts, ctx, req)
    if isinstance(node, RecApplies):
        res = ctx.result_for(node.id, facts)
        if res is None:
            return AtomResult(
                op=node.op, met=False, requirement=req, gap=Unmet(f"{req} (its criteria are not available)")
            )
        if res.met:
            return AtomResult(
                op=node.op,
                met=True,
                requirement=req,
                evidence=f"recommendation {node.id} applies",
                provisional="; ".join(res.provisional) or None,
            )
        detail = "; ".join(res.missing)
        return AtomResult(op=node.op, met=False, requirement=req, gap=Unmet(f"{req} (needs {detail})"))
    raise TypeError(f"unknown atom {node!r}")


def _eval_symptom(node: Symptom, facts: PatientFacts, ctx: EvalContext, req: str) -> AtomResult:
    fact = _fact_for(node.concept, facts)
    name = ctx.label(node.concept)
    if fact is None:
        gap = MissingFinding(req, node.concept, absent=node.concept in facts.negated)
        return AtomResult(op=node.op, met=False, requirement=req, gap=gap)
    have = set(fact.modifiers)
    duration = fact.qualifiers.get("duration_days", facts.duration_days)
    notes: list[str] = []
    problems: list[str] = []

    def has(mod: str) -> tuple[bool, str | None]:
        if mod == "unexplained":
            return ("explained" not in have, None)
        if mod in have:
            return (True, None)
        # a duration is taken as "persistent" only for a finding no recorded diagnosis accounts
        # for: an explained finding runs the course of its cause (reading/explanations)
        if mod == "persistent" and duration is not None and "explained" not in have:
            note = (
                f"{name} taken as persistent (recorded for {duration} days; NG12 leaves the period "
                f"to clinical judgement)"
            )
            return (ctx.accept_provisional, note)
        return (False, None)

    for mod in node.modifiers:
        ok, note = has(mod)
        if ok:
            if note:
                notes.append(note)
        elif mod == "unexplained":
            problems.append(f"{req} (the record explains the {name})")
        else:
            problems.append(f"{req} (not recorded as {mod.replace('_', ' ')})")
    if node.any_modifiers:
        checks = [(m, *has(m)) for m in node.any_modifiers]
        firm = [m for m, ok, note in checks if ok and note is None]
        soft = [note for m, ok, note in checks if ok and note is not None]
        if not firm:
            if soft:
                notes.append(soft[0])
            else:
                words = " or ".join(m.replace("_", " ") for m in node.any_modifiers)
                problems.append(f"{req} (not recorded as {words})")
    for q in node.qualifiers:
        val = fact.qualifiers.get(q.name)
        if q.name == "duration_days" and val is None:
            val = facts.duration_days
        if val is None:
            problems.append(f"{req} ({q.name.replace('_', ' ')} not recorded)")
        elif not _cmp(val, q.comparator, q.value):
            problems.append(f"{req} (recorded {q.name.replace('_', ' ')}: {_num(val)})")
    if problems:
        gap = MissingFinding(req, node.concept, problem="; ".join(problems))
        return AtomResult(op=node.op, met=False, requirement=req, gap=gap)
    shown = [m.replace("_", " ") for m in node.modifiers]
    shown += [m.replace("_", " ") for m in node.any_modifiers if m in have][:1]
    evidence = " ".join([*shown, name])
    if fact.text:
        evidence += f' ("{fact.text}")'
    return AtomResult(
        op=node.op, met=True, requirement=req, evidence=evidence, provisional="; ".join(notes) or None
    )


def band_for_age(node: TestByAge, age: int) -> AgeBand | None:
    """The band of an age-banded threshold table that covers `age` (None: no band does)."""
    return next(
        (
            b
            for b in node.bands
            if (b.age_gte is None or age >= b.age_gte) and (b.age_lt is None or age < b.age_lt)
        ),
        None,
    )


def _eval_test_by_age(node: TestByAge, facts: PatientFacts, ctx: EvalContext, req: str) -> AtomResult:
    name = ctx.label(node.name)
    if facts.age is None:
        return AtomResult(op=node.op, met=False, requirement=req, gap=NotRecorded(req, "age not recorded"))
    band = band_for_age(node, facts.age)
    if band is None:
        return AtomResult(
            op=node.op, met=False, requirement=req, gap=Unmet(f"{req} (no threshold for age {facts.age})")
        )
    if band.judgement or band.comparator is None or band.value is None:
        words = band.judgement or "no threshold"
        return AtomResult(
            op=node.op,
            met=False,
            requirement=req,
            gap=Unmet(f"{name}: NG12 gives no threshold for age {facts.age} ({words})"),
        )
    threshold = f"{_SYMBOL[band.comparator]} {_num(band.value)} {node.unit}"
    if node.name not in facts.tests:
        return AtomResult(
            op=node.op,
            met=False,
            requirement=req,
            gap=NotRecorded(f"{name} {threshold} for age {facts.age}", "no result recorded"),
        )
    v = facts.tests[node.name]
    if _cmp(v, band.comparator, band.value):
        return AtomResult(
            op=node.op,
            met=True,
            requirement=req,
            evidence=f"{name} {_num(v)} {threshold} (threshold for age {facts.age})",
        )
    return AtomResult(
        op=node.op,
        met=False,
        requirement=req,
        gap=Unmet(f"{name} {threshold} for age {facts.age} (result {_num(v)})"),
    )
