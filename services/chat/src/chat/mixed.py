"""Mixed requests: a question NG12 can answer and, in the same message, a request of another kind.

`split_request` splits the message into clauses (`guardrails.clauses`: at sentence ends, "?", ";",
and at "and/also/plus/then/but" joins that begin a new request: "..., and how long is the wait at
X", "And when should she start screening?", "totally unrelated but can you recommend ..."). Each
clause is classified: first by the scope rules (`guardrails.rule_scope`, a document to write,
logistics, dosing or prognosis, another guideline); a clause the rules leave open is classified by
the scope classifier (one embedding per clause, only when the message has more than one clause;
repeated clauses come from the classifier's cache). A clause is declined when the rules name its
kind, or when the classifier places it out of scope (P(in_scope) below `IN_SCOPE_THRESHOLD`) and
it is a request of its own (at least `MIN_WORDS` words; a "non_medical" decision for a clause that
names a symptom or cancer site is overruled). The message is mixed when some clauses are declined
and at least one other is kept: the kept clauses are answered, the declined ones named first.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from chat.guardrails import (
    NG12_WORDS,
    OutOfScopeKind,
    clauses,
    governs,
    leaves_question,
    mixed_request,
    rule_scope,
)
from chat.scope import CONTEXT_THRESHOLD, ScopeDecision

#: A clause shorter than this ("CXR?", "what's the first step?", "what's the 7 point score?") leans on
#: the rest of the message and is part of the question, not a request of its own.
MIN_WORDS = 6
#: A clause is declined by the classifier only when it is sure (as for a conversation's next
#: question: `scope.CONTEXT_THRESHOLD`): the clause is read without the rest of the message.
DECLINE_BELOW = CONTEXT_THRESHOLD
#: A clause about NG12's own business (referral, criteria, tests, symptoms) is in scope whatever the
#: classifier makes of it alone ("Straight to colorectal referral or FIT").
_NG12 = re.compile(rf"\b({NG12_WORDS})\b", re.IGNORECASE)
#: A clause about the patient ("should I be giving them anything in writing?") continues the
#: clinical question: not non-medical.
_PATIENT = re.compile(r"\b(he|she|they|him|her|them|his|their|the patient|pt|patients?)\b", re.IGNORECASE)
#: A screening *result* ("does the normal screening mean I can wait?") is a finding NG12 covers,
#: not a question about a screening programme.
_RESULT = re.compile(r"\b(normal|negative|positive|abnormal|raised|result|came back)\b", re.IGNORECASE)

#: A clause that asks for something: a question, or a request ("can you ...", "give me ...",
#: "pls ..."), after any joining words ("and", "also", "totally unrelated but"). A statement
#: ("Trying to set a practice standard.") is context for the question, never declined.
_REQUEST = re.compile(
    r"^(?:[\w\s,'-]{0,30}?\b(?:and|also|but|plus|then|so)\s+)?(?:please\s+|pls\s+)?"
    r"(?:can|could|would|will|what|what'?s|which|how|when|who|where|why|is|are|does|do|should|"
    r"give|tell|send|find|recommend|suggest|book|write|draft|fill|make|list|show)\b|"
    r"\b(?:can|could|would) (?:you|u)\b|\b(?:please|pls|plz)\b|\bi(?:'d| would) like\b",
    re.IGNORECASE,
)

Classify = Callable[[str], Awaitable[ScopeDecision | None]]


@dataclass(frozen=True)
class MixedRequest:
    text: str  # the in-scope part, answered
    declined: list[tuple[str, str]]  # (clause, kind), declined by name


def _words(text: str) -> int:
    return len(text.split())


def _asks(message: str, part: str) -> bool:
    """The clause is a question (a "?" closes it in the message) or a request."""
    at = message.find(part)
    closed = at >= 0 and message[at + len(part) :].lstrip(" ,.;:-")[:1] == "?"
    return closed or _REQUEST.search(part) is not None


def _declined_kind(
    decision: ScopeDecision, part: str, names_clinical: Callable[[str], bool]
) -> OutOfScopeKind | None:
    """The classifier's out-of-scope kind for a clause, unless the clause is clinical after all."""
    if decision.kind == "non_medical" and (names_clinical(part) or _PATIENT.search(part)):
        return None
    if decision.kind == "other_guideline" and _RESULT.search(part):
        return None
    return None if decision.kind == "in_scope" else decision.kind


async def split_request(
    message: str, classify: Classify | None, names_clinical: Callable[[str], bool]
) -> MixedRequest | None:
    """The in-scope part and the clauses to decline, or None when the message is not mixed."""
    ruled = mixed_request(message)  # the rules alone: no embedding needed
    if ruled is not None:
        return MixedRequest(ruled[0], [(part, str(kind)) for part, kind in ruled[1]])
    parts = clauses(message)
    if len(parts) < 2 or classify is None:
        return None
    declined: list[tuple[str, str]] = []
    kind: OutOfScopeKind | None
    kept: list[str] = []
    for part in parts:
        kind = rule_scope(part)
        if kind is None and _words(part) >= MIN_WORDS and _asks(message, part) and not _NG12.search(part):
            decision = await classify(part)
            if decision is not None and decision.in_scope_probability < DECLINE_BELOW:
                kind = _declined_kind(decision, part, names_clinical)
        if kind is not None:
            declined.append((part, kind))
        else:
            kept.append(part)
    asked = leaves_question(message, kept)  # "CXR?" asks, though too short to answer alone
    kept = [k for k in kept if _words(k) >= 2]
    if not declined or not kept or not asked:
        return None  # nothing left to answer: a statement ("I want to send him on Saturday") is context
    if any(governs(part, kind) for part, kind in declined):
        return None
    return MixedRequest(" ".join(f"{k.rstrip('?')}?" for k in kept), declined)
