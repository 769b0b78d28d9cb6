"""ConText for GP records: is a named finding absent, someone else's, resolved, or hypothetical?

The ConText algorithm (Harkema et al., J Biomed Inform 2009) on rules, without a model: a trigger
phrase modifies the findings after it (forward) or before it (backward) within its own clause.
The triggers are data (``data/context_rules.yaml``, borrowed from medspaCy's English rules and
extended with UK primary-care wording); this module only compiles and applies them.

medspaCy itself is not used: medspaCy 1.3.1 pins spaCy < 3.8 on Python 3.11, whose thinc 8.2 is
binary-incompatible with the numpy 2 the rest of the stack needs (measured: importing spaCy fails
with "numpy.dtype size changed"). The rules and the algorithm are the same.

Statuses, strongest first: ``hypothetical`` ("return if haemoptysis"), ``family`` ("mum had breast
ca"), ``negated`` ("no cough", "haemoptysis denied"), ``resolved`` ("cough resolved last year").
A finding with any of them is not a current finding of this patient.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

ContextStatus = Literal["hypothetical", "family", "negated", "resolved"]
STATUS_ORDER: tuple[ContextStatus, ...] = ("hypothetical", "family", "negated", "resolved")

# Phrases that contain a trigger word but do not negate ("not resolving" is persistence, not absence).
_PSEUDO = re.compile(
    r"\b(not only|no change in|no better|no improvement|no relief|not resolv\w*|not settl\w*|"
    r"not improv\w*|not gone|not getting better|not going away|not clear\w*|not responding|"
    r"no response|not stopped|without (any )?(improvement|relief|resolution|explanation|cause|trying))\b"
)


class ContextRule(BaseModel):
    """One group of triggers in context_rules.yaml."""

    model_config = ConfigDict(extra="forbid")
    category: ContextStatus
    direction: Literal["forward", "backward", "both"]
    triggers: list[str] = Field(default_factory=list)
    patterns: list[str] = Field(default_factory=list)  # regular expressions on normalised text


def _normalise(text: str) -> str:
    t = text.lower().replace("\u2019", "'").replace("'", "")
    t = re.sub(r"[^a-z0-9]+", " ", t)
    return " ".join(t.split())


class ContextRules:
    """Compiled triggers: one pattern per (category, direction)."""

    def __init__(self, rules: list[ContextRule]) -> None:
        grouped: dict[tuple[str, str], list[str]] = {}
        for rule in rules:
            directions = ("forward", "backward") if rule.direction == "both" else (rule.direction,)
            alts = [r"\b" + re.escape(_normalise(t)) + r"\b" for t in rule.triggers if _normalise(t)]
            alts += rule.patterns
            for d in directions:
                grouped.setdefault((rule.category, d), []).extend(alts)
        self._patterns = {
            key: re.compile("|".join(f"(?:{a})" for a in sorted(set(alts), key=len, reverse=True)))
            for key, alts in grouped.items()
            if alts
        }

    def status(self, before: str, after: str) -> ContextStatus | None:
        """The strongest status the clause's words before and after a finding give it (or None).

        `before` and `after` are the clause's text on either side of the finding's own words."""
        b = _PSEUDO.sub(" ", _normalise(before))
        a = _PSEUDO.sub(" ", _normalise(after))
        for category in STATUS_ORDER:
            fwd = self._patterns.get((category, "forward"))
            bwd = self._patterns.get((category, "backward"))
            if (fwd is not None and fwd.search(b)) or (bwd is not None and bwd.search(a)):
                return category
        return None


@lru_cache(maxsize=1)
def default_rules() -> ContextRules:
    """The rules in data/context_rules.yaml (validated once per process)."""
    raw = resources.files("ng12_common.reading").joinpath("data", "context_rules.yaml").read_text("utf-8")
    return ContextRules([ContextRule.model_validate(x) for x in yaml.safe_load(raw)])
