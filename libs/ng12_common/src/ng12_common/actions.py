"""The one action vocabulary: every action NG12 recommends and every assessment outcome.

Each entry holds the action's urgency rank (lower is more urgent, in the order NG12's own
timeframes give), the risk level an assessment displays, and its wording: `words` for a sentence
to a GP (assessment headlines, the knowledge-base chunks retrieval indexes), `label` for a short
list heading (chat answers), and `term`, the heading of NG12's own definition of the timeframe
("Terms used in this guideline": Immediate, Very urgent, Urgent, Non-urgent, Suspected cancer
pathway referral) where the action has one. Ingestion classifies each recommendation into one of
`ACTION_ORDER`; assessment ranks and words them; chat labels them: all from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal[
    "immediate_referral",
    "very_urgent_referral",
    "very_urgent_investigation",
    "suspected_cancer_pathway_referral",
    "urgent_investigation",
    "non_urgent_referral",
    "non_urgent_investigation",
    "primary_care_test",
    "other",
]
#: What an assessment's `top_action` can be besides an NG12 action.
Outcome = Literal["no_criteria_met", "incomplete", "not_assessed"]
ActionOrOutcome = Literal[Action, Outcome]

NO_CRITERIA_MET: Outcome = "no_criteria_met"
INCOMPLETE: Outcome = "incomplete"
NOT_ASSESSED: Outcome = "not_assessed"


@dataclass(frozen=True, slots=True)
class ActionInfo:
    """One action or outcome: urgency rank, display risk level, and its words."""

    action: str
    rank: int
    risk_level: str
    words: str
    label: str
    term: str | None = None


_ENTRIES: tuple[ActionInfo, ...] = (
    ActionInfo(
        "immediate_referral",
        0,
        "immediate",
        "immediate specialist assessment or referral (within hours)",
        "immediate referral",
        "Immediate",
    ),
    ActionInfo(
        "very_urgent_referral",
        1,
        "very_urgent",
        "very urgent referral (for an appointment within 48 hours)",
        "very urgent referral (within 48 hours)",
        "Very urgent",
    ),
    ActionInfo(
        "very_urgent_investigation",
        2,
        "very_urgent",
        "very urgent investigation (within 48 hours)",
        "very urgent investigation (within 48 hours)",
        "Very urgent",
    ),
    ActionInfo(
        "suspected_cancer_pathway_referral",
        3,
        "urgent",
        "suspected cancer pathway referral",
        "suspected cancer pathway referral",
        "Suspected cancer pathway referral",
    ),
    ActionInfo(
        "urgent_investigation",
        4,
        "urgent",
        "urgent investigation (within 2 weeks)",
        "urgent investigation (within 2 weeks)",
        "Urgent",
    ),
    ActionInfo(
        "non_urgent_referral",
        5,
        "non_urgent",
        "non-urgent (routine) referral",
        "non-urgent referral",
        "Non-urgent",
    ),
    ActionInfo(
        "non_urgent_investigation",
        6,
        "non_urgent",
        "non-urgent direct access investigation",
        "non-urgent investigation",
        "Non-urgent",
    ),
    ActionInfo("primary_care_test", 7, "primary_care_test", "a test in primary care", "test in primary care"),
    ActionInfo("other", 8, "other", "the action NG12 states", "other advice"),
    ActionInfo(
        NO_CRITERIA_MET,
        9,
        "no_criteria_met",
        "no NG12 referral or investigation criterion is met",
        "no criterion met",
    ),
    ActionInfo(
        INCOMPLETE, 9, "incomplete", "incomplete: part of the record was not understood", "incomplete"
    ),
    ActionInfo(NOT_ASSESSED, 9, "not_assessed", "not assessed", "not assessed"),
)

#: Every action and outcome, by name.
ACTIONS: dict[str, ActionInfo] = {e.action: e for e in _ENTRIES}
#: NG12's actions, most urgent first (index = urgency rank).
ACTION_ORDER: tuple[str, ...] = tuple(e.action for e in _ENTRIES if e.rank < 9)


def action_info(action: str) -> ActionInfo:
    """The vocabulary entry of an action (an unknown action ranks last, shown as itself)."""
    words = action.replace("_", " ")
    return ACTIONS.get(action) or ActionInfo(action, len(ACTION_ORDER), "other", words, words)


def action_rank(action: str) -> int:
    """Lower is more urgent; an unknown action or an outcome sorts after every NG12 action."""
    return action_info(action).rank
