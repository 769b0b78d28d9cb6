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
    # "gone" before an adjective means "become" ("the mole has gone red", "toe gone black"): a change
    r"|\bgone (?:a bit |very |quite |all )?"
    r"(?:red|redder|black|blacker|dark|darker|brown|blue|purple|white|pale|"
    r"yellow|grey|bigger|larger|hard|harder|lumpy|crusty|scaly|numb|weak|floppy|swollen)\b"
)


# A negation particle negates the verb it stands before. When that verb is one of belief, knowledge
# or perception that takes a clause of its own ("does not think [the lump has gone]", "not sure [the
# mole is smaller]"), the particle negates that verb, not the finding: the finding is then the
# subject of the complement clause and is followed by its own verb (an auxiliary or a linking verb).
# Only complement-taking verbs govern a clause this way; "does not have a cough, is otherwise well"
# negates the cough. Huddleston & Pullum, The Cambridge Grammar of the English Language (2002),
# ch. 9 (scope of clausal negation) and ch. 11 (content clauses as complements of verbs of belief).
_PARTICLE = re.compile(r"\b(?:not|dont|doesnt|didnt|isnt|wasnt|arent|werent|cannot|cant|never)\b")
_GOVERNING_VERB = re.compile(
    r"^(?:(?:really|quite|entirely|totally|fully)\s)?(?:think|thinks|thought|feel|feels|felt|sure|certain|"
    r"convinced|believe|believes|believed|know|knows|knew|remember|remembers|remembered|recall|recalls|"
    r"recalled|notice|notices|noticed|say|says|said|agree|agrees|agreed)\b"
)
_OWN_VERB = re.compile(
    r"^(?:has|have|had|is|was|are|were|does|did|do|will|would|could|may|might|seems?|seemed|feels?|felt|"
    r"looks?|looked|remains?|remained|got|gets|getting|became|becomes?)\b"
)


def _negates_another_verb(before: str, after: str) -> int | None:
    """Where the negation that governs another verb starts in `before` (normalised), or None.

    True of "does not think the" + finding + "has gone": a particle, then a verb of belief, knowledge
    or perception (the governing verb), then the finding, which is followed by its own verb."""
    if not _OWN_VERB.match(after):
        return None
    last = None
    for m in _PARTICLE.finditer(before):
        last = m
    if last is None or not _GOVERNING_VERB.match(before[last.end() :].strip()):
        return None
    return last.start()


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


#: Words that say a finding is still there; a resolution trigger after them speaks of something else.
_STILL = re.compile(
    r"\b(still|persists|persisting|persistent|remains|remaining|ongoing|not gone|not resolved)\b"
)


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
        # a negated governing verb ("does not think the lump has gone"): neither that negation nor
        # the finding's own predicate ("has gone", under the negated verb) makes it absent or resolved
        cut = _negates_another_verb(b, a)
        for category in STATUS_ORDER:
            fwd = self._patterns.get((category, "forward"))
            bwd = self._patterns.get((category, "backward"))
            bb, aa = (b[:cut], "") if cut is not None and category in ("negated", "resolved") else (b, a)
            if category == "resolved" and bwd is not None:
                # "lump still there 7 wks after a throat infection cleared up": what cleared up is
                # the infection named after "still"; the finding itself persists
                m = bwd.search(aa)
                held = _STILL.search(aa)
                if m is not None and held is not None and held.start() < m.start():
                    aa = ""
            if (fwd is not None and fwd.search(bb)) or (bwd is not None and bwd.search(aa)):
                return category
        return None


@lru_cache(maxsize=1)
def default_rules() -> ContextRules:
    """The rules in data/context_rules.yaml (validated once per process)."""
    raw = resources.files("ng12_common.reading").joinpath("data", "context_rules.yaml").read_text("utf-8")
    return ContextRules([ContextRule.model_validate(x) for x in yaml.safe_load(raw)])
