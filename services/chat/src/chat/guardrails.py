"""Rule-based guardrails (no LLM): what kind of message this is, before and after retrieval.

`classify_input` sorts a message into smalltalk, meta ("who are you"), emergency (someone
describing a current emergency or self-harm), medical_out_of_scope (treatment, dosing,
prognosis, other guidelines) or proceed. A message that also asks about referral criteria,
symptoms or investigations overrides the out-of-scope rule, so "treatment-resistant
dyspepsia: when to refer?" still proceeds. `post_retrieval_out_of_scope` applies the same
topic check to the (possibly rewritten) query once retrieval has run.
"""

from __future__ import annotations

import re
from typing import Literal

InputKind = Literal["smalltalk", "meta", "emergency", "medical_out_of_scope", "proceed"]

_SMALLTALK = re.compile(
    r"^\s*(hi|hello|hey|hiya|good (morning|afternoon|evening)|thanks?|thank you|thx|cheers|ok(ay)?|"
    r"great|cool|bye|goodbye|how are you|nice one|perfect)\b[\s!.,?a-z]*$",
    re.IGNORECASE,
)
_SMALLTALK_MAX_WORDS = 6
_META = re.compile(
    r"\b(who are you|what are you|what can you do|what do you do|are you (a|an) (bot|ai|human|robot)|"
    r"how do you work|what is this (tool|service|app)|help me use|your (sources?|limitations))\b",
    re.IGNORECASE,
)
_EMERGENCY = re.compile(
    r"\b(kill (my|him|her)self|killing myself|suicid\w*|self[- ]harm\w*|end (my|it all)|want to die|"
    r"overdos\w*|(can'?t|cannot|not) breath\w*|chest pain (now|right now)|collapsed|unconscious|"
    r"not breathing|bleeding heavily|severe bleeding|having a (heart attack|stroke|seizure)|"
    r"choking|anaphyla\w*)\b",
    re.IGNORECASE,
)
# A current emergency is described in the present/first person, not asked about as a criterion.
_EMERGENCY_CONTEXT = re.compile(
    r"\b(i|i'm|im|i am|my|me|we|he is|she is|he's|she's|right now|now)\b", re.IGNORECASE
)
_OUT_OF_SCOPE = re.compile(
    r"\b(treat(ment|ing|ed)?|therap(y|ies)|chemo\w*|radiotherap\w*|immunotherap\w*|surgery|surgical|"
    r"operation|resection|dos(e|es|age|ing)|mg\b|prescri\w+|medication|drug|"
    r"prognos\w*|life expectancy|survival|surviv\w+ rate|how long (will|do|does) .* live|mortality|"
    r"stag(e|ing) (of|for)|palliat\w*|follow[- ]?up after|surveillance after|recurrence after|"
    r"nccn|esmo|asco|sign guideline|ng\d{2,3}\b(?<!ng12)|other guideline|american guideline|"
    r"us guideline|european guideline)\b",
    re.IGNORECASE,
)
_OTHER_GUIDELINE = re.compile(r"\b(nccn|esmo|asco|sign guidelines?|ng(?!12\b)\d{1,3})\b", re.IGNORECASE)
# Words that show the question is (also) about recognition and referral, which NG12 covers.
_IN_SCOPE_OVERRIDE = re.compile(
    r"\b(refer\w*|criteri\w*|symptoms?|signs?|present\w*|investigat\w*|test(s|ing)?|suspect\w*|"
    r"recogni\w*|red flags?|x-?ray|ultrasound|endoscop\w*|fit\b|psa|ca125|when (should|do|to)|"
    r"pathway)\b",
    re.IGNORECASE,
)
_SELF_HARM = re.compile(
    r"\b(kill (my|him|her)self|killing myself|suicid\w*|self[- ]harm\w*|end it all|want to die)\b", re.I
)


def is_self_harm(message: str) -> bool:
    return bool(_SELF_HARM.search(message))


def _words(message: str) -> int:
    return len(re.findall(r"[A-Za-z0-9']+", message))


def asks_other_guideline(message: str) -> bool:
    return bool(_OTHER_GUIDELINE.search(message))


def classify_input(message: str) -> InputKind:
    """The guardrail route for a raw user message."""
    text = message.strip()
    if _EMERGENCY.search(text) and (is_self_harm(text) or _EMERGENCY_CONTEXT.search(text)):
        if not _IN_SCOPE_OVERRIDE.search(text) or is_self_harm(text):
            return "emergency"
    if _words(text) <= _SMALLTALK_MAX_WORDS and _SMALLTALK.match(text):
        return "smalltalk"
    if _META.search(text):
        return "meta"
    if out_of_scope(text):
        return "medical_out_of_scope"
    return "proceed"


def out_of_scope(text: str) -> bool:
    """Treatment/dosing/prognosis/other-guideline wording without a referral or symptom question."""
    if asks_other_guideline(text):
        return True
    return bool(_OUT_OF_SCOPE.search(text)) and not _IN_SCOPE_OVERRIDE.search(text)


def post_retrieval_out_of_scope(message: str, query_text: str) -> bool:
    """The same topic check on the message and the query actually searched."""
    return out_of_scope(message) or (
        bool(_OUT_OF_SCOPE.search(query_text))
        and not _IN_SCOPE_OVERRIDE.search(query_text)
        and not _IN_SCOPE_OVERRIDE.search(message)
    )
