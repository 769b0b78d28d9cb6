"""The NG12 knowledge-base artifact: the JSON written by `ingestion build-kb`.

These models are the contract between ingestion (which writes the artifact), retrieval
(which indexes it) and assessment (which evaluates the criteria in it). The artifact is
also the checkpoint an admin can inspect between parsing and embedding.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ng12_common.actions import Action

Strength = Literal["refer", "offer", "consider", "other"]
Timeframe = Literal["immediate", "48 hours", "2 weeks", "none"]
CriteriaStatus = Literal["derived", "curated", "stale", "none"]
DocType = Literal["rule_canonical", "rule_search", "symptom_index", "guideline_text"]


def normalise_text(text: str) -> str:
    """Canonical form used for hashing and comparing verbatim text.

    NFKC, curly quotes/dashes folded, whitespace collapsed, lower-cased. Two texts with the
    same normalised form say the same words in the same order.
    """
    t = unicodedata.normalize("NFKC", text)
    t = t.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    t = t.replace("\u2013", "-").replace("\u2014", "-").replace("\u2022", " ")
    t = re.sub(r"\s+", " ", t).strip().lower()
    return t


def text_hash(text: str) -> str:
    """sha256 (hex, first 16 chars) of the normalised text: pins curated data to wording."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()[:16]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GuidelineMeta(_Model):
    title: str
    code: str = "NG12"
    published: str  # ISO date
    last_updated: str  # ISO date
    page_count: int
    source_sha256: str


class Population(_Model):
    """Who a recommendation applies to, as stated in its text."""

    min_age: int | None = None  # inclusive ("aged 40 and over" -> 40)
    max_age_exclusive: int | None = None  # "under 16" -> 16
    sex: Literal["female", "male", "any"] = "any"
    age_group: Literal["adults", "children_and_young_people", "children", "young_people", "any"] = "any"
    notes: list[str] = Field(default_factory=list)


class TextBox(_Model):
    """Where a piece of the guideline's text is printed: PDF points, top-left origin."""

    page: int  # printed page
    page_index: int  # 0-based page of the PDF file
    x0: float
    top: float
    x1: float
    bottom: float


class Recommendation(_Model):
    id: str  # "1.1.1"
    section: str  # "1.1"
    section_title: str  # "Lung and pleural cancers"
    subsection_title: str | None = None  # "Lung cancer"
    cancer_site: str  # lower-case site, e.g. "lung"
    page: int  # printed page it starts on
    page_end: int
    text: str  # verbatim (line breaks and bullet glyphs cleaned)
    text_hash: str  # text_hash(text)
    year_tags: list[str] = Field(default_factory=list)  # e.g. ["2015"]
    highlights: list[TextBox] = Field(default_factory=list)  # one box per printed line of it
    action: Action
    strength: Strength
    timeframe: Timeframe
    population: Population = Field(default_factory=Population)
    criteria: dict[str, Any] | None = None  # rule language, see ng12_common.criteria
    criteria_status: CriteriaStatus = "none"


class SymptomRow(_Model):
    id: str  # "ng12:row:<hash>"
    heading_path: list[str]  # ["Abdominal symptoms", "Abdominal distension"]
    symptom: str  # symptom and specific features
    features: str = ""
    possible_cancer: str
    recommendation_text: str
    references: list[str]  # recommendation ids, resolved to Part A
    page: int
    page_end: int | None = None


class Chunk(_Model):
    id: str  # stable: "ng12:rec:1.1.1", "ng12:search:1.1.1", "ng12:row:<hash>", "ng12:text:<hash>"
    doc_type: DocType
    text: str
    page: int
    section: str = ""
    recommendation_ids: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class LexiconEntry(_Model):
    concept: str  # "haemoptysis"
    kind: Literal["symptom", "finding", "test", "history", "abbreviation", "other"] = "symptom"
    label: str  # the guideline's wording
    synonyms: list[str] = Field(default_factory=list)  # spellings, lay terms, abbreviations
    terms: list[str] = Field(default_factory=list)  # the guideline's other wordings (also in synonyms)
    recommendation_ids: list[str] = Field(default_factory=list)


class KBReport(_Model):
    counts: dict[str, int] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    criteria_coverage: dict[str, Any] = Field(default_factory=dict)


class KnowledgeBase(_Model):
    schema_version: int = 1
    guideline: GuidelineMeta
    recommendations: list[Recommendation]
    symptom_rows: list[SymptomRow]
    chunks: list[Chunk]
    lexicon: list[LexiconEntry]
    report: KBReport
