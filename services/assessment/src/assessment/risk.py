"""The one action vocabulary of an assessment: urgency rank, display risk level and wording.

Every `top_action` an assessment can give is in `ACTIONS`: NG12's own actions (ranked in the
knowledge base's order, `ng12_common.knowledge.ACTION_ORDER`, most urgent first) and the two
outcomes that are not NG12 actions (`no_criteria_met`, `incomplete`). The risk level is a display
category only; the decision is `top_action` (docs/assessment.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from ng12_common.knowledge import ACTION_ORDER

NO_CRITERIA_MET = "no_criteria_met"
INCOMPLETE = "incomplete"


@dataclass(frozen=True)
class ActionInfo:
    """One action: its urgency rank (lower is more urgent), risk level and words for a GP."""

    action: str
    rank: int
    risk_level: str
    words: str


_RISK_AND_WORDS: dict[str, tuple[str, str]] = {
    "immediate_referral": ("immediate", "immediate specialist assessment or referral (within hours)"),
    "very_urgent_referral": ("very_urgent", "very urgent referral (for an appointment within 48 hours)"),
    "very_urgent_investigation": ("very_urgent", "very urgent investigation (within 48 hours)"),
    "suspected_cancer_pathway_referral": ("urgent", "referral using a suspected cancer pathway"),
    "urgent_investigation": ("urgent", "urgent investigation (within 2 weeks)"),
    "non_urgent_referral": ("non_urgent", "non-urgent referral"),
    "non_urgent_investigation": ("non_urgent", "non-urgent direct access investigation"),
    "primary_care_test": ("primary_care_test", "a test in primary care"),
    "other": ("other", "the action NG12 states"),
    NO_CRITERIA_MET: ("no_criteria_met", "no NG12 referral or investigation criterion is met"),
    INCOMPLETE: ("incomplete", "incomplete: part of the record was not understood"),
}

ACTIONS: dict[str, ActionInfo] = {
    action: ActionInfo(
        action=action,
        rank=ACTION_ORDER.index(action) if action in ACTION_ORDER else len(ACTION_ORDER),
        risk_level=risk,
        words=words,
    )
    for action, (risk, words) in _RISK_AND_WORDS.items()
}
assert set(ACTION_ORDER) <= set(ACTIONS), "every NG12 action needs a risk level and words"


def action_info(action: str) -> ActionInfo:
    """The vocabulary entry of an action (an unknown action ranks last, shown as itself)."""
    return ACTIONS.get(action) or ActionInfo(action, len(ACTION_ORDER), "other", action.replace("_", " "))


def action_rank(action: str) -> int:
    """Lower is more urgent; an unknown action sorts last."""
    return action_info(action).rank
