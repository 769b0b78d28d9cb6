"""Action urgency and the display `risk_level` derived from `top_action` (see docs/assessment.md).

The risk level is a display category only; the decision is `top_action`, NG12's own action.
"""

from __future__ import annotations

from ng12_common.knowledge import ACTION_ORDER

RISK_LEVELS: dict[str, str] = {
    "immediate_referral": "immediate",
    "very_urgent_referral": "very_urgent",
    "very_urgent_investigation": "very_urgent",
    "suspected_cancer_pathway_referral": "urgent",
    "urgent_investigation": "urgent",
    "non_urgent_referral": "non_urgent",
    "non_urgent_investigation": "non_urgent",
    "primary_care_test": "primary_care_test",
    "other": "other",
    "no_criteria_met": "no_criteria_met",
    "incomplete": "incomplete",
}

ACTION_WORDS: dict[str, str] = {
    "immediate_referral": "immediate specialist assessment or referral (within hours)",
    "very_urgent_referral": "very urgent referral (for an appointment within 48 hours)",
    "very_urgent_investigation": "very urgent investigation (within 48 hours)",
    "suspected_cancer_pathway_referral": "referral using a suspected cancer pathway",
    "urgent_investigation": "urgent investigation (within 2 weeks)",
    "non_urgent_referral": "non-urgent referral",
    "non_urgent_investigation": "non-urgent direct access investigation",
    "primary_care_test": "a test in primary care",
    "other": "the action NG12 states",
}


def action_rank(action: str) -> int:
    """Lower is more urgent; an unknown action sorts last."""
    return ACTION_ORDER.index(action) if action in ACTION_ORDER else len(ACTION_ORDER)
