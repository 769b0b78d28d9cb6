"""The NG12 symptom lexicon: concepts, the guideline's wording, synonyms, and where they appear.

The vocabulary is curated data (``data/lexicon.yaml``): for each concept the guideline's label and
terms plus spellings, lay terms and abbreviations. The recommendation ids a concept appears in are
computed here from the parsed guideline (recommendation texts, Part B symptom-table rows and the
curated criteria), never typed by hand.

``synonyms_for_text`` enriches search text: it returns the synonyms of every concept a text names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from ng12_common.criteria import parse_criteria, referenced_concepts
from ng12_common.knowledge import LexiconEntry, Recommendation, SymptomRow
from ng12_common.lexicon_match import match_concepts, normalise_phrase
from ng12_common.served_recommendations import rec_sort_key

LEXICON_FILE = "lexicon.yaml"
LAY_TERMS_FILE = "lay_terms.yaml"


class LexiconSource(BaseModel):
    """One curated lexicon entry as written in lexicon.yaml."""

    model_config = ConfigDict(extra="forbid")
    concept: str = Field(pattern=r"^[a-z0-9_]+$")
    kind: Literal["symptom", "finding", "test", "history", "abbreviation", "other"]
    label: str
    terms: list[str] = Field(default_factory=list)  # other guideline wordings
    synonyms: list[str] = Field(default_factory=list)  # spellings, lay terms, abbreviations


class LayTerms(BaseModel):
    """One group of curated lay terms or abbreviations for a concept, with its source."""

    model_config = ConfigDict(extra="forbid")
    concept: str
    source: str = Field(min_length=3)
    terms: list[str]


@lru_cache(maxsize=1)
def load_lay_terms() -> tuple[LayTerms, ...]:
    """The curated lay terms (validated: every group has a source and names a lexicon concept)."""
    raw = yaml.safe_load(_data_text(LAY_TERMS_FILE)) or []
    return tuple(LayTerms.model_validate(x) for x in raw)


def _data_text(name: str) -> str:
    return resources.files("ingestion.kb").joinpath("data", name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def load_lexicon_sources() -> tuple[LexiconSource, ...]:
    """The curated lexicon (validated); raises on a malformed or duplicated entry."""
    raw = yaml.safe_load(_data_text(LEXICON_FILE)) or []
    items = tuple(LexiconSource.model_validate(x) for x in raw)
    seen: set[str] = set()
    for it in items:
        if it.concept in seen:
            raise ValueError(f"lexicon: duplicate concept {it.concept!r}")
        seen.add(it.concept)
    lay: dict[str, list[str]] = {}
    for group in load_lay_terms():
        if group.concept not in seen:
            raise ValueError(f"{LAY_TERMS_FILE}: unknown concept {group.concept!r} (source {group.source})")
        lay.setdefault(group.concept, []).extend(group.terms)
    return tuple(
        it.model_copy(
            update={"synonyms": [*it.synonyms, *[t for t in lay.get(it.concept, []) if t not in it.synonyms]]}
        )
        for it in items
    )


def known_concepts() -> dict[str, str]:
    """concept -> kind for every lexicon concept."""
    return {s.concept: s.kind for s in load_lexicon_sources()}


def _contains(haystack_norm: str, term: str) -> bool:
    t = normalise_phrase(term).replace(",", " ").strip()
    return bool(t) and re.search(r"\b" + re.escape(t) + r"\b", haystack_norm) is not None


def build_lexicon(
    recommendations: Sequence[Recommendation],
    symptom_rows: Sequence[SymptomRow] = (),
    sources: Iterable[LexiconSource] | None = None,
) -> list[LexiconEntry]:
    """Lexicon entries with the recommendation ids each concept appears in.

    A concept appears in a recommendation when the recommendation's text contains the concept's
    guideline wording (label or terms), when the recommendation's criteria use the concept, or when
    a Part B row naming the concept references the recommendation.
    """
    srcs = list(sources if sources is not None else load_lexicon_sources())
    rec_norm = {r.id: normalise_phrase(r.text) for r in recommendations}
    row_norm = [(normalise_phrase(f"{row.symptom} {row.features}"), row.references) for row in symptom_rows]
    used: dict[str, set[str]] = {}
    for r in recommendations:
        if r.criteria is not None:
            for concepts in referenced_concepts(parse_criteria(r.criteria)).values():
                for c in concepts:
                    used.setdefault(c, set()).add(r.id)
    entries: list[LexiconEntry] = []
    for s in srcs:
        wording = [s.label, *s.terms]
        ids = set(used.get(s.concept, set()))
        ids |= {rid for rid, text in rec_norm.items() if any(_contains(text, w) for w in wording)}
        for text, refs in row_norm:
            if any(_contains(text, w) for w in wording):
                ids |= set(refs)
        synonyms: list[str] = []
        for x in [*s.terms, *s.synonyms]:
            if x != s.label and x not in synonyms:
                synonyms.append(x)
        entries.append(
            LexiconEntry(
                concept=s.concept,
                kind=s.kind,
                label=s.label,
                synonyms=synonyms,
                terms=[t for t in s.terms if t != s.label],
                recommendation_ids=sorted(ids, key=rec_sort_key),
            )
        )
    return entries


def synonyms_for_text(text: str, lexicon: Sequence[LexiconEntry]) -> list[str]:
    """Label and synonyms of every concept the text names (for search enrichment), de-duplicated."""
    by_concept: Mapping[str, LexiconEntry] = {e.concept: e for e in lexicon}
    out: list[str] = []
    seen_norm = {normalise_phrase(text)}
    for m in match_concepts(text, lexicon):
        e = by_concept[m.concept]
        for term in [e.label, *e.synonyms]:
            n = normalise_phrase(term)
            if n not in seen_norm:
                seen_norm.add(n)
                out.append(term)
    return out


def lexicon_labels(lexicon: Sequence[LexiconEntry] | None = None) -> dict[str, str]:
    """concept -> display label, for the criteria evaluator's wording."""
    if lexicon is not None:
        return {e.concept: e.label for e in lexicon}
    return {s.concept: s.label for s in load_lexicon_sources()}


def lexicon_entries_plain() -> list[LexiconEntry]:
    """The curated lexicon as LexiconEntry without recommendation ids (for tests and tools)."""
    return build_lexicon([], [], load_lexicon_sources())


def as_dicts(entries: Sequence[LexiconEntry]) -> list[dict[str, Any]]:
    return [e.model_dump() for e in entries]
