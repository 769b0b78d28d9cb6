// The shared vocabulary (docs/assessment.md, docs/chat.md) in words a GP reads. Timeframes quote
// NG12's "Terms used in this guideline" (pages 83-84). Every badge carries an icon AND words.
import { h } from "./dom.js";

export const ACTIONS = {
  immediate_referral: { icon: "‼", label: "Immediate referral", level: "immediate",
    timeframe: "immediate: an acute admission or referral within a few hours, or even more quickly if necessary" },
  very_urgent_referral: { icon: "!!", label: "Very urgent referral", level: "very-urgent",
    timeframe: "very urgent: to happen within 48 hours" },
  very_urgent_investigation: { icon: "!!", label: "Very urgent investigation", level: "very-urgent",
    timeframe: "very urgent: to happen within 48 hours" },
  suspected_cancer_pathway_referral: { icon: "!", label: "Suspected cancer pathway referral", level: "urgent",
    timeframe: "suspected cancer pathway: diagnosis or ruling out within 28 days" },
  urgent_investigation: { icon: "!", label: "Urgent investigation", level: "urgent",
    timeframe: "urgent: to happen or be done before 2 weeks" },
  non_urgent_referral: { icon: "›", label: "Non-urgent referral", level: "routine",
    timeframe: "non-urgent: the timescale generally used for a referral that is not very urgent or urgent" },
  non_urgent_investigation: { icon: "›", label: "Non-urgent investigation", level: "routine",
    timeframe: "non-urgent: the timescale generally used for an investigation that is not very urgent or urgent" },
  primary_care_test: { icon: "✚", label: "Test in primary care", level: "test",
    timeframe: "a test done in primary care (direct access); act on the result" },
  other: { icon: "•", label: "Other NG12 action", level: "other", timeframe: "the action the recommendation states" },
  no_criteria_met: { icon: "✓", label: "No NG12 criteria met", level: "none",
    timeframe: "no referral or investigation criterion is met: safety-net and review" },
  incomplete: { icon: "⚠", label: "Incomplete", level: "incomplete",
    timeframe: "part of the record was not understood, so it was not fully checked against NG12" },
  not_assessed: { icon: "?", label: "Not assessed", level: "other", timeframe: "" },
};

export function actionInfo(action) {
  return ACTIONS[action] || { icon: "•", label: String(action || "").replace(/_/g, " "), level: "other", timeframe: "" };
}

export function actionBadge(action, extraClass = "") {
  const info = actionInfo(action);
  return h(`span.badge.action.level-${info.level}${extraClass ? "." + extraClass : ""}`, { dataset: { action } },
    h("span.icon", { "aria-hidden": "true" }, info.icon), " ", info.label);
}

export const GROUNDING = {
  sufficient: { icon: "✓", label: "Grounded in NG12", cls: "ok" },
  weak: { icon: "~", label: "Partly grounded: hedged", cls: "weak" },
  none: { icon: "∅", label: "NG12 does not say", cls: "none" },
  contradicted: { icon: "✗", label: "NG12 says otherwise", cls: "contradicted" },
  out_of_scope: { icon: "⊘", label: "Out of NG12's scope", cls: "scope" },
  smalltalk: { icon: "…", label: "Conversation", cls: "neutral" },
  meta: { icon: "ℹ", label: "About this assistant", cls: "neutral" },
  emergency: { icon: "⚠", label: "Emergency: act now", cls: "emergency" },
};

export function groundingBadge(grounding) {
  const info = GROUNDING[grounding] || { icon: "•", label: String(grounding || "unknown"), cls: "neutral" };
  return h(`span.badge.grounding.g-${info.cls}`, { dataset: { grounding: grounding || "" } },
    h("span.icon", { "aria-hidden": "true" }, info.icon), " ", info.label);
}

export const STRATEGIES = {
  direct: "searched the question as asked",
  topic: "a follow-up: searched with the conversation's topic added",
  rewrite: "a follow-up: rewritten from the conversation before searching",
  none: "no guideline search was needed",
};
