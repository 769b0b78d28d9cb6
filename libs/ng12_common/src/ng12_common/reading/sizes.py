"""A lump's size compared with everyday objects: "was like a pea, now more like a grape".

Patients and GPs often give a lump's size as an object (``data/size_objects.yaml``, with sources).
Two objects in order, the later clearly larger, say the lump grew; a later smaller one says it
changed in size. ``comparison`` reads that from a normalised text; ``size_statement`` tells a clause
that only states a size this way (it qualifies the finding before it and is not an unread finding).
No measurement is ever taken from an object.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid")
    grow_ratio: float
    objects: dict[str, float]


@lru_cache(maxsize=1)
def _data() -> _Data:
    raw = resources.files("ng12_common.reading").joinpath("data", "size_objects.yaml").read_text("utf-8")
    return _Data.model_validate(yaml.safe_load(raw))


@lru_cache(maxsize=1)
def _pattern() -> re.Pattern[str]:
    names = sorted(_data().objects, key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")s?\b")


# words that order two sizes in time: "was like a pea, now a grape", "from a pea to a grape"
_ORDERED = re.compile(r"\b(was|were|used to be|from|started|start|at first|initially|before|previously)\b")
_NOW = re.compile(r"\b(now|but now|and now|has become|became|has grown to|grown to)\b")
_LATER = re.compile(r"\b(now|to|then|but now|and now|has become|become|became|into)\b")
# words a size statement may hold besides its objects
_SIZE_WORDS = frozenset(
    "a an the about around roughly like size of sized more now was is it its than then but and to from "
    "started at first initially before previously grew grown has have become became into bit little "
    "say says said thinks feels felt same as just over under nearly almost".split()
)


def comparison(text: str) -> Literal["grew", "changed"] | None:
    """ "grew" when two objects are ordered in time and the later is clearly larger; "changed" when
    it is smaller; None otherwise (one object is a size, not a change)."""
    found = [(m.start(), m.group(1)) for m in _pattern().finditer(text)]
    if len(found) < 2:
        return None
    (a_at, first), (b_at, second) = found[0], found[-1]
    between = text[a_at:b_at]
    # "now" orders them by itself ("pea-sized lump ..., now the size of a grape"); "to", "then" and
    # "into" need a start ("from a pea to a grape", "was a pea, then a grape")
    if not (_NOW.search(between) or (_ORDERED.search(text[:b_at]) and _LATER.search(between))):
        return None
    sizes = _data().objects
    ratio = sizes[second] / sizes[first]
    if ratio >= _data().grow_ratio:
        return "grew"
    return "changed" if ratio <= 1 / _data().grow_ratio else None


def size_statement(text: str) -> bool:
    """The clause only gives a size by an object ("now the size of a walnut", "was like a pea now
    more like a grape 5 weeks"): its other words are size, comparison, time and number words."""
    if not _pattern().search(text):
        return False
    rest = _pattern().sub(" ", text)
    words = re.findall(r"[a-z]+", rest)
    time_words = {
        "day",
        "days",
        "week",
        "weeks",
        "wk",
        "wks",
        "month",
        "months",
        "year",
        "years",
        "ago",
        "in",
        "at",
        "on",
        "last",
        "this",
        "since",
        "spring",
        "summer",
        "autumn",
        "winter",
        "christmas",
        "easter",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    }
    return all(w in _SIZE_WORDS or w in time_words for w in words)
