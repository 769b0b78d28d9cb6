"""Personal data redaction for what the chat service stores and logs.

Names after an introducing phrase ("patient John Smith", "my name is ..."), NHS numbers
(10 digits, optionally spaced or hyphenated 3-3-4), dates (of birth or otherwise, numeric or
with a month name), UK phone numbers and e-mail addresses are replaced by a bracketed label.
Clinical content (ages, durations, test values) is left as it is.
"""

from __future__ import annotations

import re

_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("[email]", re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")),
    ("[NHS number]", re.compile(r"(?<![\d+])\d{3}[ -]?\d{3}[ -]?\d{4}(?![\d])")),
    ("[phone]", re.compile(r"(?:\+44\s?\(?0?\)?\s?|\b0)\d{2,4}[\s-]?\d{3,4}[\s-]?\d{3,4}\b")),
    ("[date]", re.compile(r"\b\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b")),
    ("[date]", re.compile(r"\b\d{4}-\d{2}-\d{2}\b")),
    ("[date]", re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTHS}\.?,?\s+\d{{4}}\b", re.IGNORECASE)),
    ("[date]", re.compile(rf"\b{_MONTHS}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b", re.IGNORECASE)),
]
_NAME_INTRO = re.compile(
    r"\b((?i:my name is|name is|named|called|patient|mr|mrs|ms|miss|dr))\.?\s+"
    r"((?:[A-Z][a-z'-]+)(?:\s+[A-Z][a-z'-]+){0,2})"
)
_DOB = re.compile(r"\b(dob|d\.o\.b\.?|date of birth|born on|born)\s*:?\s*(\S+(?:\s+\S+){0,2})", re.IGNORECASE)


def _name(match: re.Match[str]) -> str:
    return f"{match.group(1)} [name]"


def redact(text: str) -> str:
    """The text with personal identifiers replaced by labels such as [NHS number]."""
    out = text
    for label, pattern in _PATTERNS:
        out = pattern.sub(label, out)
    out = _DOB.sub(lambda m: f"{m.group(1)} [date]" if "[date]" not in m.group(2) else m.group(0), out)
    out = _NAME_INTRO.sub(_name, out)
    return out
