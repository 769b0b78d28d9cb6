"""Tier 3's exemplars (assessment/data/tier3_exemplars.json): general knowledge with a source, for
concepts the lexicon has, and never an evaluation clause (the calibration and blind sets measure
tier 3, so none of their wording may be in what it compares with)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assessment.semantic import description_texts, exemplars
from ingestion.kb.lexicon import lexicon_entries_plain

REPO = Path(__file__).resolve().parents[3]


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _eval_clauses() -> Iterator[str]:
    """Every clause of the tier-3 calibration data and every entry of the blind assessment sets."""
    for path in sorted((REPO / "eval" / "tier3").glob("*.json")):
        for item in json.loads(path.read_text("utf-8")):
            yield item["text"]
    for path in sorted((REPO / "eval" / "blind").glob("assessment_*.json")):
        case: dict[str, Any]
        for case in json.loads(path.read_text("utf-8")):
            for field in ("symptoms", "history", "exam_findings"):
                for entry in case.get(field) or []:
                    yield from re.split(r"[.;,]", str(entry))


def test_every_exemplar_group_names_a_lexicon_finding_and_its_source() -> None:
    raw = json.loads((REPO / "services/assessment/src/assessment/data/tier3_exemplars.json").read_text())
    kinds = {e.concept: e.kind for e in lexicon_entries_plain()}
    for concept, group in raw["concepts"].items():
        assert kinds.get(concept) in ("symptom", "finding"), concept
        assert group["source"].strip() and len(group["exemplars"]) >= 10, concept
    assert raw["not_ng12"]["source"].strip() and len(raw["not_ng12"]["exemplars"]) >= 100


def test_no_exemplar_is_an_evaluation_clause() -> None:
    ours = {_norm(x) for xs in exemplars().by_concept.values() for x in xs} | {
        _norm(x) for x in exemplars().not_ng12
    }
    clauses = {_norm(c) for c in _eval_clauses()} - {""}
    leaked = sorted(ours & clauses)
    assert not leaked, f"exemplars that are evaluation clauses: {leaked[:20]}"


def test_exemplars_join_the_concept_descriptions_tier_3_compares_with() -> None:
    texts, owners, _kinds = description_texts(lexicon_entries_plain())
    pairs = set(zip(texts, owners, strict=True))
    assert ("wakes up drenched", "night_sweats") in pairs
    assert any(o == "__not_ng12__" and t == "pupils PERRLA" for t, o in pairs)
