"""Scoring of assessment answers against the development cases (../shared/eval-dev/assessment_dev.json).

Used by `bench/eval_assessment.py` and by the dev-case test. Per case: must-cite recall (each
`must_cite_any` group counts as one item), must-not-cite violations (an id presented as applicable:
matched, or cited), top action in `acceptable_top_actions`, and for `no_criteria_met` cases
whether the answer says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PATIENT_FIELDS = (
    "age",
    "gender",
    "smoking_history",
    "symptoms",
    "symptom_duration_days",
    "history",
    "exam_findings",
    "test_results",
)


def case_record(case: dict[str, Any]) -> dict[str, Any]:
    """The POST /assess body for a case (only the patient schema's fields)."""
    return {k: case[k] for k in PATIENT_FIELDS if k in case}


@dataclass
class CaseScore:
    case_id: str
    required: int
    found: int
    missing: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    top_action: str = ""
    top_ok: bool = False
    expects_none: bool = False
    none_ok: bool = True

    @property
    def correct(self) -> bool:
        return not self.missing and not self.violations and self.top_ok and self.none_ok


def score_case(case: dict[str, Any], body: dict[str, Any]) -> CaseScore:
    """Score one assessment response body against one case."""
    expected = case["expected"]
    assessment = body["assessment"]
    matched = {m["recommendation_id"] for m in assessment["matched_recommendations"]}
    cited = {c["recommendation_id"] for c in body.get("citations", []) if c.get("recommendation_id")}
    groups: list[list[str]] = [[rid] for rid in expected.get("must_cite", [])]
    groups += [list(g) for g in expected.get("must_cite_any") or []]
    missing = [" or ".join(g) for g in groups if not set(g) & matched]
    violations = sorted(set(expected.get("must_not_cite", [])) & (matched | cited))
    top = assessment["top_action"]
    expects_none = expected.get("top_action") == "no_criteria_met"
    return CaseScore(
        case_id=case["patient_id"],
        required=len(groups),
        found=len(groups) - len(missing),
        missing=missing,
        violations=violations,
        top_action=top,
        top_ok=top in expected["acceptable_top_actions"],
        expects_none=expects_none,
        none_ok=(top == "no_criteria_met") if expects_none else True,
    )


def summary(scores: list[CaseScore]) -> dict[str, Any]:
    required = sum(s.required for s in scores)
    none_cases = [s for s in scores if s.expects_none]
    return {
        "cases": len(scores),
        "fully_correct": sum(s.correct for s in scores),
        "must_cite_recall": (sum(s.found for s in scores) / required) if required else 1.0,
        "must_cite_items": required,
        "must_not_cite_violations": sum(len(s.violations) for s in scores),
        "top_action_accuracy": sum(s.top_ok for s in scores) / len(scores) if scores else 0.0,
        "no_criteria_met_accuracy": (
            sum(s.none_ok for s in none_cases) / len(none_cases) if none_cases else 1.0
        ),
        "no_criteria_met_cases": len(none_cases),
    }
