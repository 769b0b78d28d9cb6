"""Evidence grading from retrieval scores (calibrated to [0, 1] by retrieval).

Thresholds were recalibrated on the development questions (docs/chat.md): in-scope questions
have a best hit of 0.45-0.75, off-topic text scores below ~0.35.
"""

from __future__ import annotations

from typing import Literal

EvidenceGrade = Literal["none", "weak", "sufficient"]

FLOOR = 0.30  # every hit below this: nothing relevant
GOOD = 0.45  # a hit above this is a good match
WEAK_BEST = 0.38  # no good hit: weak if the best reaches this, else none
STRONG_BEST = 0.50  # few good hits: weak unless the best reaches this


def grade(scores: list[float]) -> EvidenceGrade:
    if not scores or max(scores) < FLOOR:
        return "none"
    best = max(scores)
    good = sum(1 for s in scores if s > GOOD)
    if good == 0:
        return "weak" if best >= WEAK_BEST else "none"
    if good <= 2 and best < STRONG_BEST:
        return "weak"
    return "sufficient"
