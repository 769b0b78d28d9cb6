"""Curated criteria: coverage of 1.1-1.13 on the real PDF, data validation, stale detection, pinning."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ng12_common.criteria import parse_criteria, referenced_concepts
from ng12_common.knowledge import Recommendation, text_hash

sys.path.insert(0, str(Path(__file__).parent))
from criteria_fixtures import *  # noqa: F403 (session fixtures)

from ingestion.kb import criteria as kbc
from ingestion.kb.lexicon import known_concepts, load_lexicon_sources

SITE_SECTIONS = [f"1.{n}" for n in range(1, 14)]


def test_every_site_specific_recommendation_is_curated(
    ng12_recs: list[Recommendation], coverage_report: dict[str, Any]
) -> None:
    site = [r for r in ng12_recs if r.section in SITE_SECTIONS]
    assert len(site) == 88  # 1.1-1.13 as parsed from the guideline
    not_covered = {r.id: r.criteria_status for r in site if r.criteria_status not in ("curated", "derived")}
    assert not_covered == {}, f"re-read and re-pin: {not_covered}"
    assert all(r.criteria is not None for r in site)
    assert coverage_report["site_specific_total"] == 88
    assert coverage_report["site_specific_covered"] == 88
    assert coverage_report["stale"] == []
    assert coverage_report["problems"] == []


def test_patient_support_safety_netting_and_process_have_no_criteria(ng12_recs: list[Recommendation]) -> None:
    rest = [r for r in ng12_recs if r.section in ("1.14", "1.15", "1.16")]
    assert rest, "1.14-1.16 should be parsed"
    assert {r.criteria_status for r in rest} == {"none"}
    assert all(r.criteria is None for r in rest)


def test_attached_criteria_parse_back(ng12_recs: list[Recommendation]) -> None:
    for r in ng12_recs:
        if r.criteria is not None:
            parse_criteria(r.criteria)


def test_altered_text_makes_entry_stale_and_unused(fresh_recs: list[Recommendation]) -> None:
    recs = fresh_recs
    target = next(r for r in recs if r.id == "1.1.2")
    target.text = target.text.replace("aged 40 and over", "aged 45 and over")
    target.text_hash = text_hash(target.text)
    report = kbc.attach_criteria(recs)
    assert target.criteria_status == "stale"
    assert target.criteria is None
    assert report["stale"] == ["1.1.2"]
    assert report["site_specific_covered"] == 87
    assert "1.1.2" in report["site_specific_missing"]
    others = [r for r in recs if r.id != "1.1.2" and r.section in SITE_SECTIONS]
    assert all(r.criteria_status == "curated" for r in others)


def test_whitespace_only_change_is_not_stale(fresh_recs: list[Recommendation]) -> None:
    recs = fresh_recs
    target = next(r for r in recs if r.id == "1.1.1")
    target.text = target.text.replace(" ", "  ")
    target.text_hash = text_hash(target.text)
    kbc.attach_criteria(recs)
    assert target.criteria_status == "curated"


def test_entry_without_rec_and_missing_entry_reported(fresh_recs: list[Recommendation]) -> None:
    recs = fresh_recs
    entries = dict(kbc.load_curated())
    del entries["1.8.5"]
    report = kbc.attach_criteria(recs, entries)
    assert "1.8.5" in report["none"] and "1.8.5" in report["site_specific_missing"]


# ------------------------------------------------------------------ data validation


def test_curated_file_is_valid() -> None:
    entries = kbc.load_curated()
    assert kbc.validate_curated(entries) == []
    for rid, e in entries.items():
        assert len(e.text_hash) == 16, f"{rid} is not pinned"
        assert e.note.strip(), f"{rid} has no note"


def test_every_criteria_concept_is_in_the_lexicon() -> None:
    concepts = known_concepts()
    for rid, e in kbc.load_curated().items():
        for kind, names in referenced_concepts(parse_criteria(e.criteria)).items():
            for n in names:
                assert n in concepts, f"{rid}: {kind} {n} not in lexicon.yaml"


def test_validation_catches_bad_entries(fresh_recs: list[Recommendation]) -> None:
    bad = {
        "1.1.1": kbc.CuratedEntry(criteria={"op": "symptom", "concept": "made_up_concept"}),
        "1.1.2": kbc.CuratedEntry(criteria={"op": "rec_applies", "id": "1.99.1"}),
        "1.1.3": kbc.CuratedEntry(criteria={"op": "age_gte"}),
        "1.1.4": kbc.CuratedEntry(
            criteria={"op": "test", "name": "cough", "comparator": ">", "value": 1, "unit": "x"}
        ),
    }
    problems = kbc.validate_curated(bad)
    assert any("1.1.1" in p and "made_up_concept" in p for p in problems)
    assert any("1.1.2" in p and "1.99.1" in p for p in problems)
    assert any(p.startswith("1.1.3: criteria do not parse") for p in problems)
    assert any("1.1.4" in p and "used as a test" in p for p in problems)
    report = kbc.attach_criteria(fresh_recs, {**kbc.load_curated(), **bad})
    assert {"1.1.1", "1.1.2", "1.1.3", "1.1.4"} <= set(report["none"])
    assert report["problems"]


def test_lexicon_file_is_valid() -> None:
    sources = load_lexicon_sources()
    assert len({s.concept for s in sources}) == len(sources)
    for s in sources:
        assert s.label.strip()
        assert all(x.strip() for x in s.synonyms)


def test_curated_yaml_ids_are_quoted_strings() -> None:
    raw = yaml.safe_load(kbc._data_path().read_text(encoding="utf-8"))
    assert all(isinstance(k, str) for k in raw)


# ------------------------------------------------------------------ pin tool


def test_pin_rewrites_only_named_hashes(tmp_path: Path) -> None:
    copy = tmp_path / "curated.yaml"
    copy.write_text(kbc._data_path().read_text(encoding="utf-8"), encoding="utf-8")
    before = kbc.load_curated(copy)
    done = kbc.rewrite_hashes(copy, {"1.1.2": "0123456789abcdef"})
    assert done == ["1.1.2"]
    after = kbc.load_curated(copy)
    assert after["1.1.2"].text_hash == "0123456789abcdef"
    assert {k: v.text_hash for k, v in after.items() if k != "1.1.2"} == {
        k: v.text_hash for k, v in before.items() if k != "1.1.2"
    }
    assert "# Curated structured criteria" in copy.read_text(encoding="utf-8")  # comments kept


def test_pin_changes_lists_altered_text(fresh_recs: list[Recommendation]) -> None:
    recs = fresh_recs
    target = next(r for r in recs if r.id == "1.4.1")
    target.text += " Extra words."
    target.text_hash = text_hash(target.text)
    changes = kbc.pin_changes(recs, kbc.load_curated())
    assert [c["id"] for c in changes] == ["1.4.1"]


def test_pin_write_requires_review(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, fresh_recs: list[Recommendation]
) -> None:
    copy = tmp_path / "curated.yaml"
    original = kbc._data_path().read_text(encoding="utf-8")
    pinned = kbc.load_curated()["1.1.1"].text_hash
    copy.write_text(original.replace(f'"{pinned}"', '"ffffffffffffffff"', 1), encoding="utf-8")
    monkeypatch.setattr("ingestion.kb.part_a.parse_recommendations", lambda _pdf: fresh_recs)
    assert kbc.main(["pin", "--pdf", "x.pdf", "--file", str(copy)]) == 1  # dry run lists it
    assert "1.1.1" in capsys.readouterr().out
    assert kbc.main(["pin", "--pdf", "x.pdf", "--file", str(copy), "--write"]) == 2  # refuses
    assert '"ffffffffffffffff"' in copy.read_text(encoding="utf-8")
    assert kbc.main(["pin", "--pdf", "x.pdf", "--file", str(copy), "--write", "--ids", "1.1.1"]) == 0
    assert "rewriting 1.1.1" in capsys.readouterr().out
    assert copy.read_text(encoding="utf-8") == original
