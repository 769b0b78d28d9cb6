"""NG12 recommendations as retrieval serves them, in the one form assessment and chat use.

Retrieval answers `GetRecommendations` (and, with `include_metadata`, `Search`) with
`CanonicalRecommendation` messages: verbatim text, page, action, and in `metadata` the curated
criteria, their status and the population (ages, sex). `served_recommendation(message)` turns one
into a `ServedRecommendation` with its criteria parsed, and says why a site-specific
recommendation's criteria cannot be used: only "curated" or "derived" criteria are evaluated; a
"stale" tree (its recommendation's text changed since curation) never is, in either service.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, get_args

from google.protobuf.json_format import MessageToDict

from ng12_common.criteria import Criterion, parse_criteria
from ng12_common.knowledge import LexiconEntry

#: Sections whose recommendations carry patient criteria (site-specific recommendations).
CRITERIA_SECTIONS: frozenset[str] = frozenset(f"1.{n}" for n in range(1, 14))
#: Criteria statuses the services trust; "stale" (text changed since curation) is never evaluated.
USABLE_STATUSES: frozenset[str] = frozenset({"curated", "derived"})
LEXICON_KINDS = frozenset(get_args(LexiconEntry.model_fields["kind"].annotation))


def rec_sort_key(rec_id: str) -> tuple[int, ...]:
    """Guideline order: "1.10.2" sorts after "1.9.3"."""
    return tuple(int(p) if p.isdigit() else 0 for p in rec_id.split("."))


@dataclass(frozen=True)
class ServedRecommendation:
    """One canonical recommendation, verbatim, with its usable criteria (or None)."""

    id: str
    section: str
    cancer_site: str
    page: int
    text: str
    action: str
    strength: str
    section_title: str = ""
    timeframe: str = ""
    population: dict[str, Any] = field(default_factory=dict)  # min_age, max_age_exclusive, sex
    criteria: Criterion | None = None
    criteria_status: str = "none"

    @property
    def sort_key(self) -> tuple[int, ...]:
        return rec_sort_key(self.id)


def served_recommendation(message: Any) -> tuple[ServedRecommendation, str | None]:
    """The recommendation of a `CanonicalRecommendation` message, and for a site-specific one
    whose criteria are not used, why (None otherwise). A message without metadata (a lean
    Search hit) gives a recommendation without criteria or population (and a problem to ignore)."""
    meta: dict[str, Any] = MessageToDict(message.metadata) if message.HasField("metadata") else {}
    status = str(meta.get("criteria_status") or "none")
    raw = meta.get("criteria")
    criteria: Criterion | None = None
    problem: str | None = None
    if message.section in CRITERIA_SECTIONS:
        if status not in USABLE_STATUSES:
            problem = f"criteria status is {status!r}"
        elif not isinstance(raw, dict):
            problem = "no criteria in the index"
        else:
            try:
                criteria = parse_criteria(_ints(raw))
            except ValueError as exc:  # pydantic ValidationError is a ValueError
                problem = f"criteria do not parse: {exc}"
    rec = ServedRecommendation(
        id=message.id,
        section=message.section,
        cancer_site=message.cancer_site,
        page=message.page,
        text=message.text,
        action=message.action,
        strength=message.strength,
        section_title=message.section_title,
        timeframe=message.timeframe,
        population=_ints(dict(meta.get("population") or {})),
        criteria=criteria,
        criteria_status=status,
    )
    return rec, problem


def lexicon_entry(term: Any) -> LexiconEntry:
    """A `GetLexicon` term as a lexicon entry (an unknown kind becomes "other")."""
    return LexiconEntry.model_validate(
        {
            "concept": term.concept,
            "kind": term.kind if term.kind in LEXICON_KINDS else "other",
            "label": term.label or term.concept.replace("_", " "),
            "synonyms": list(term.synonyms),
            "terms": list(getattr(term, "terms", [])),
        }
    )


def _ints(value: Any) -> Any:
    """protobuf Struct numbers are floats; integral ones back to int (n, value, points, ages)."""
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
