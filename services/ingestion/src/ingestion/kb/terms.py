"""The guideline's own definitions of its age-group terms ("Children: From birth to 15 years").

Population bounds for "children", "young people" and "children and young people" are read
from the "Terms used in this guideline" region rather than assumed.
"""

from __future__ import annotations

import re

from ingestion.kb.classify import AgeGroups
from ingestion.kb.layout import Line
from ingestion.kb.structure import Heading, Region

_BIRTH_TO = re.compile(r"from birth to (\d{1,3}) years", re.IGNORECASE)
_AGED_RANGE = re.compile(r"aged (\d{1,3}) to (\d{1,3}) years", re.IGNORECASE)


def term_definitions(doc_regions: list[Region]) -> dict[str, str]:
    """Term -> definition text from the "Terms used in this guideline" region."""
    out: dict[str, str] = {}
    for region in doc_regions:
        if not region.title.lower().startswith("terms used"):
            continue
        current: str | None = None
        for el in region.elements:
            if isinstance(el, Heading):
                current = el.text
                out[current] = ""
            elif isinstance(el, Line) and current is not None:
                out[current] = f"{out[current]} {el.text}".strip()
    return out


def _bounds(definition: str) -> tuple[int | None, int | None]:
    match = _BIRTH_TO.search(definition)
    if match:
        return None, int(match.group(1)) + 1
    match = _AGED_RANGE.search(definition)
    if match:
        return int(match.group(1)), int(match.group(2)) + 1
    return None, None


def age_groups(doc_regions: list[Region]) -> AgeGroups:
    terms = {k.lower(): v for k, v in term_definitions(doc_regions).items()}
    return AgeGroups(
        children=_bounds(terms.get("children", "")),
        young_people=_bounds(terms.get("young people", "")),
        children_and_young_people=_bounds(terms.get("children and young people", "")),
    )
