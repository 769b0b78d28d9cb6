"""The words that name one of NG12's age groups without an age: one list for chat.

NG12 has separate recommendations for adults and for children and young people ("Terms used in
this guideline": children from birth to 15, young people 16 to 24). A question that names a group
without an age ("an adult with lymphadenopathy", "a child with bruising") selects that group's
recommendations (chat.selection), and a claim made for a group ("NG12 says kids with ... need
...") is checked against the group each recommendation is for (chat.premise).

"Son" or "daughter" are not here: they name a relation, not an age (a patient's adult son).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

Group = str  # "adults" | "children"
_ADULT = r"adults?|grown-?ups?"
_CHILD = r"child(?:ren)?|kids?|paediatric|pediatric|infants?|bab(?:y|ies)|toddlers?|boys?|girls?"
_YOUNG_PEOPLE = r"young people"  # part of NG12's "children and young people"
_ADULT_WORDS = re.compile(rf"\b(?:{_ADULT})\b", re.IGNORECASE)
_CHILD_WORDS = re.compile(rf"\b(?:{_CHILD})\b", re.IGNORECASE)
_ANY_GROUP = re.compile(rf"\b(?:{_ADULT}|{_CHILD}|{_YOUNG_PEOPLE})\b", re.IGNORECASE)


def groups_named(text: str) -> tuple[str, ...] | None:
    """NG12's age groups a question names without an age ("adult with ...": adults; "a child
    with ...": children and young people), or None when it names both or neither."""
    adult, child = bool(_ADULT_WORDS.search(text)), bool(_CHILD_WORDS.search(text))
    if adult == child:
        return None
    return ("adults",) if adult else ("children", "children_and_young_people")


#: A group named as the only one an action is for: "the immediate referral that's for kids", "2WW is
#: only for adults", "children only" (not "children and young people", NG12's own group).
_ONLY_FOR = re.compile(
    rf"\b(?:only|just|that'?s|thats|which is|is|are|reserved|meant)\s+(?:for|in)\s+(?:the\s+)?"
    rf"(?P<a>{_ADULT}|{_CHILD})\b(?!\s+and\s+young)|\b(?P<b>{_ADULT}|{_CHILD})\s+only\b",
    re.IGNORECASE,
)


def restricted_group(text: str) -> tuple[str, Group] | None:
    """(the words, the group) when the text says something is only for one group ("that's for
    kids"), else None."""
    m = _ONLY_FOR.search(text)
    if m is None:
        return None
    word = m.group("a") or m.group("b")
    return word, "adults" if _ADULT_WORDS.fullmatch(word) else "children"


def group_mentions(text: str) -> Iterator[tuple[re.Match[str], Group]]:
    """Each word naming a group, with the group: "adults" or "children" (young people are in
    NG12's children and young people)."""
    for m in _ANY_GROUP.finditer(text):
        yield m, "adults" if _ADULT_WORDS.fullmatch(m.group(0)) else "children"


#: NG12's age groups (Terms used in this guideline): children from birth to 15 years, young people
#: 16 to 24; recommendations for adults and for children and young people are separate.
_GROUPS_FOR_AGE = (
    (16, ("children", "children_and_young_people")),
    (18, ("children_and_young_people",)),
    (25, ("children_and_young_people", "adults")),
)


def age_groups(age: int) -> tuple[str, ...]:
    """NG12's age groups a person of this age belongs to ("any" always)."""
    for below, groups in _GROUPS_FOR_AGE:
        if age < below:
            return groups
    return ("adults",)
