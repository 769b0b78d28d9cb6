"""Chat's own Prometheus metrics: what happened to the optional Gemini steps.

- `ng12_chat_llm_calls_total{step, outcome}`: step `answer` | `rewrite`; outcome `used` (the
  model's output was published), `invalid` (it failed validation: the rules-only answer or the
  clinical-state rewrite was used instead) or `error` (no usable reply: timeout, API error).
- `ng12_chat_llm_removed_total{kind}`: parts of published model answers removed by validation:
  `quote` (not an exact substring of the cited recommendation, or citing one not retrieved) and
  `sentence` (states a criterion without citing a retrieved recommendation, or with a number its
  recommendation does not have).
A rising `invalid` or `removed` rate is the signal to look at the prompt or the model version.
- `ng12_chat_answers_total{grounding}`: answers given, by grounding outcome (`sufficient`,
  `weak`, `none` = a refusal, `contradicted` = a false premise corrected, `out_of_scope`,
  `smalltalk`, `meta`, `emergency`): the refusal
  mix the dashboard and the refusal-rate alert read.
"""

from __future__ import annotations

from prometheus_client import Counter

LLM_CALLS = Counter(
    "ng12_chat_llm_calls_total", "Gemini calls made by chat, by step and outcome.", ["step", "outcome"]
)
LLM_REMOVED = Counter(
    "ng12_chat_llm_removed_total", "Parts of model answers removed by validation, by kind.", ["kind"]
)
ANSWERS = Counter("ng12_chat_answers_total", "Chat answers given, by grounding outcome.", ["grounding"])
