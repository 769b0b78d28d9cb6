"""Assessment's own Prometheus metrics: what happened to the optional Gemini steps.

`ng12_assessment_llm_calls_total{step, outcome}`: step `patient_tool` (the model fetches the
record through the `get_patient_data` tool) or `narrative` (the model writes the reasoning);
outcome `used`, `invalid` (the narrative cited a recommendation the engine did not match: the
rules-only reasoning was shown and the claim listed in `needs_review`) or `error` (timeout, API
error, output that does not fit the schema, a tool call for another patient: rules-only path).

`ng12_assessment_assessments_total{top_action, complete}`: assessments answered, by their top
action (NG12's action categories, `no_criteria_met`, `incomplete`) and whether the record was
fully understood: the top-action mix the dashboard shows and the incomplete-rate alert reads.

`ng12_assessment_degraded_total`: assessments answered rules-only from cached knowledge because
retrieval was unavailable (`degraded: true`).
"""

from __future__ import annotations

from prometheus_client import Counter

LLM_CALLS = Counter(
    "ng12_assessment_llm_calls_total",
    "Gemini calls made by assessment, by step and outcome.",
    ["step", "outcome"],
)
ASSESSMENTS = Counter(
    "ng12_assessment_assessments_total",
    "Assessments answered, by top action and whether the record was fully understood.",
    ["top_action", "complete"],
)
DEGRADED = Counter(
    "ng12_assessment_degraded_total",
    "Assessments answered rules-only from cached guideline knowledge while retrieval was unavailable.",
)
