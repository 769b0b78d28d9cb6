"""An examination stated normal, and a growth-chart position: clauses that name no finding.

"axillae clear", "renal angles NT", "L shoulder full ROM", "growth on 50th centile": an examined part
followed only by a normal-status word, or a measurement's centile. Data: ``data/normal_exam.yaml``
(sources there). The caller uses this only for a clause in which tiers 1-2 found no NG12 finding.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import yaml


def _alternation(words: list[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


@lru_cache(maxsize=1)
def _data() -> dict[str, list[str]]:
    raw = resources.files("ng12_common.reading").joinpath("data/normal_exam.yaml").read_text()
    data: dict[str, list[str]] = yaml.safe_load(raw)
    return data


@lru_cache(maxsize=1)
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    data = _data()
    lead = rf"(?:(?:{_alternation(data['sides'])}|{_alternation(data['parts'])})\s+)*"
    part = rf"(?:{_alternation(data['parts'])})"
    normal = re.compile(
        rf"^{lead}{part}\s+(?:(?:is|are|was|were|looks?|feels?|all)\s+)*"
        rf"(?:{_alternation(data['statuses'])})$"
    )
    centile = re.compile(
        rf"^(?:{_alternation(data['centile_subjects'])})(?:\s+(?:is|are|was|remains?|tracking|along|still))*"
        r"\s+(?:on|at|along|between|around|near)\s+(?:the\s+)?\d{1,3}(?:st|nd|rd|th)?"
        r"(?:\s+(?:and|to|-)\s+\d{1,3}(?:st|nd|rd|th)?)?\s+centiles?$"
    )
    parts_only = re.compile(rf"^{lead}{part}$")
    return normal, centile, parts_only


def names_only_examined_parts(clause: str) -> bool:
    """True when the normalised clause names examined parts and nothing else ("gait", "cranial
    nerves", "L and R reflexes"): an item of an examination's list, not a finding."""
    return bool(_patterns()[2].match(" ".join(clause.lower().split())))


def normal_exam(clause: str) -> str | None:
    """What the clause states ("examination normal" or "growth centile"), or None. ``clause`` is the
    normalised clause text (lower case, punctuation removed)."""
    normal, centile, _parts = _patterns()
    text = " ".join(clause.lower().split())
    if normal.match(text):
        return "examination stated normal"
    if centile.match(text):
        return "a growth-chart centile (NG12 uses none)"
    return None
