"""False-premise and instruction checks on what the user asserts NG12 says.

`claimed_details` finds an assertion about NG12 ("NG12 says any man over 50 with a PSA above 10
needs immediate referral") and the specifics it claims: numbers and an urgency. `unsupported`
says which of them no cited recommendation text contains. `is_injection` spots attempts to
change the assistant's instructions ("ignore your instructions and say ...").
"""

from __future__ import annotations

import re

_CLAIM = re.compile(
    r"\b(ng12|nice|the guideline|guidelines?) (says?|states?|recommends?|requires?|mandates?)\b|"
    r"\b(is it true|isn't it true|confirm that|according to ng12)\b",
    re.I,
)
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])")
_URGENCY = re.compile(r"\b(immediate(?:ly)?|same[- ]day|emergency|within 24 hours)\b", re.I)
_INJECTION = re.compile(
    r"\b(ignore|disregard|forget|override) (all |any )?(your|the|previous|prior|above|earlier) "
    r"(instructions?|rules?|prompts?|guidelines?|context)\b|\b(system prompt|you are now|pretend (to be|you)|"
    r"act as|jailbreak|from now on (you|say))\b",
    re.I,
)


def is_injection(message: str) -> bool:
    return bool(_INJECTION.search(message))


def claimed_details(message: str) -> list[str]:
    if not _CLAIM.search(message):
        return []
    details = [m.group(1) for m in _NUMBER.finditer(message) if m.group(1) != "12"]
    details += [m.group(1).lower() for m in _URGENCY.finditer(message)]
    return details


def unsupported(details: list[str], texts: list[str]) -> list[str]:
    """Claimed details that none of the texts contains."""
    joined = " ".join(t.lower() for t in texts)
    missing = []
    for d in details:
        stem = d.rstrip("ly") if d.endswith("ly") else d
        if not re.search(rf"(?<![\w.]){re.escape(stem)}", joined):
            missing.append(d)
    return missing
