"""Part B: the symptom tables, checked row by row against the real NG12 PDF."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ingestion.kb.parse import ParsedGuideline
from ingestion.kb.part_b import references
from ng12_common.knowledge import SymptomRow


@pytest.fixture(scope="module")
def rows(ng12_parsed: ParsedGuideline) -> list[SymptomRow]:
    return ng12_parsed.symptom_rows


def _find(rows: list[SymptomRow], path_end: str, symptom_start: str) -> SymptomRow:
    found = [r for r in rows if r.heading_path[-1] == path_end and r.symptom.startswith(symptom_start)]
    assert len(found) == 1, (path_end, symptom_start, [r.symptom for r in found])
    return found[0]


def test_row_and_table_counts(ng12_parsed: ParsedGuideline) -> None:
    # 95 ruled tables on pages 38-82; 215 body rows (each repeated header row excluded).
    assert ng12_parsed.counts["symptom_tables"] == 95
    assert ng12_parsed.counts["symptom_rows"] == len(ng12_parsed.symptom_rows) == 215
    assert ng12_parsed.counts["unresolved_references"] == 0


def test_every_reference_resolves(ng12_parsed: ParsedGuideline, rows: list[SymptomRow]) -> None:
    ids = {r.id for r in ng12_parsed.recommendations}
    for row in rows:
        assert row.references, row.symptom
        assert set(row.references) <= ids
        bracketed, _ = references(row.recommendation_text)
        assert row.references == bracketed


def test_every_site_recommendation_appears_in_a_table(
    ng12_parsed: ParsedGuideline, rows: list[SymptomRow]
) -> None:
    referenced = {r for row in rows for r in row.references}
    missing = [r.id for r in ng12_parsed.recommendations if r.id not in referenced]
    # Not in the symptom tables: FIT safety netting, advice, follow-up and process recommendations.
    assert missing == [
        "1.3.3",
        "1.3.4",
        "1.5.4",
        "1.7.7",
        *[f"1.14.{n}" for n in range(1, 12)],
        "1.15.1",
        "1.15.2",
        *[f"1.16.{n}" for n in range(1, 9)],
    ]


def test_every_row_is_verbatim(
    rows: list[SymptomRow], ng12_reference: Any, normalise: Callable[[str], str]
) -> None:
    """Each cell of each row occurs, as a word sequence, in its page's text (pdfium)."""
    verified = 0
    for row in rows:
        page_text = ng12_reference.span(row.page, row.page_end or row.page)
        for cell in (row.symptom, row.possible_cancer, row.recommendation_text):
            assert normalise(cell) in page_text, (row.page, cell)
        verified += 1
    assert verified == 215


def test_no_header_rows_or_interleaved_columns(rows: list[SymptomRow]) -> None:
    for row in rows:
        assert not row.symptom.lower().startswith(("symptom and", "symptoms and", "investigation findings"))
        assert "Recommendation" not in row.symptom
        assert row.possible_cancer and row.possible_cancer not in row.recommendation_text.split("\n")[0][:12]
        assert row.heading_path and all(row.heading_path)


def test_abdominal_or_pelvic_pain_rows_across_pages_39_and_40(rows: list[SymptomRow]) -> None:
    pain = [r for r in rows if r.heading_path == ["Abdominal symptoms", "Abdominal or pelvic pain"]]
    assert [(r.page, r.symptom, r.possible_cancer, r.references) for r in pain] == [
        (39, "Abdominal pain with weight loss (unexplained), 40 and over", "Colorectal", ["1.3.1"]),
        (39, "Abdominal pain (unexplained) with rectal bleeding in adults under 50", "Colorectal", ["1.3.1"]),
        (39, "Abdominal pain (unexplained), 50 and over", "Colorectal", ["1.3.1"]),
        (
            40,
            "Upper abdominal pain with weight loss, 55 and over",
            "Oesophageal or stomach",
            ["1.2.1", "1.2.7"],
        ),
        (
            40,
            "Upper abdominal pain with low haemoglobin levels or raised platelet count or nausea or "
            "vomiting, 55 and over",
            "Oesophageal or stomach",
            ["1.2.3", "1.2.9"],
        ),
        (
            40,
            "Abdominal or pelvic pain (persistent or frequent – particularly more than 12 times per month) "
            "in women, especially if 50 and over",
            "Ovarian",
            ["1.5.2", "1.5.6"],
        ),
        (40, "Abdominal pain with weight loss, 60 and over", "Pancreatic", ["1.2.5"]),
        (
            40,
            "Irritable bowel syndrome symptoms within the last 12 months in women 50 and over",
            "Ovarian",
            ["1.5.5", "1.5.6"],
        ),
    ]
    assert pain[-1].recommendation_text.startswith(
        "Carry out appropriate tests for ovarian cancer, because irritable bowel syndrome rarely presents "
        "for the first time in women of this age [1.5.5]\nMeasure serum CA125 in primary care [1.5.6]\n"
    )


def test_heading_paths_carry_over_page_breaks(rows: list[SymptomRow]) -> None:
    title = "Abdominal, pelvic or rectal mass or enlarged abdominal organ"
    mass = [r for r in rows if r.heading_path[-1] == title]
    assert [r.page for r in mass] == [38, 38, 38, 39, 39, 39, 39, 39]
    weight = [r for r in rows if r.heading_path == ["Non-specific features of cancer", "Weight loss"]]
    assert len(weight) == 13 and {r.page for r in weight} == {65, 66, 67, 68}
    dyspepsia = [r for r in rows if r.heading_path == ["Abdominal symptoms", "Dyspepsia"]]
    assert [r.page for r in dyspepsia] == [41, 42, 42]


def test_spot_rows(rows: list[SymptomRow]) -> None:
    row = _find(rows, "Abdominal distension", "Abdominal distension")
    assert row.heading_path == ["Abdominal symptoms", "Abdominal distension"]
    assert row.features.startswith("(persistent or frequent")
    assert row.references == ["1.5.2", "1.5.6"]
    assert "\nThese recommendations apply to women aged 18 and over" in row.recommendation_text

    row = _find(rows, "Haemoptysis", "Haemoptysis")
    assert (row.possible_cancer, row.references, row.page) == ("Lung", ["1.1.1"], 43)

    row = _find(rows, "Haematuria", "Haematuria (visible and unexplained)")
    assert (row.possible_cancer, row.references) == ("Bladder or renal", ["1.6.4", "1.6.6"])

    row = _find(rows, "Pain", "Back pain (persistent), 60 and over")
    assert "blood tests for:\n- calcium\n- plasma viscosity or erythrocyte sedimentation rate" in (
        row.recommendation_text
    )

    row = _find(rows, "Lumps and masses", "Anal mass")
    assert row.references == ["1.3.6"]  # printed as "1.3.6]" (missing bracket): resolved and warned

    children = [r for r in rows if r.heading_path[0] == "Symptoms in children and young people"]
    assert len(children) == 35
    row = _find(rows, "Abdominal symptoms", "Hepatosplenomegaly (unexplained) in children")
    assert (row.possible_cancer, row.references) == ("Leukaemia", ["1.10.2"])

    row = _find(rows, "Blood test findings", "Prostate-specific antigen")
    assert row.references == ["1.6.3"] and row.page == 69


def test_malformed_reference_is_warned(ng12_parsed: ParsedGuideline) -> None:
    assert any("'1.3.6]'" in w and "missing bracket" in w for w in ng12_parsed.warnings)


def test_row_ids_unique_and_hashed(rows: list[SymptomRow]) -> None:
    ids = [r.id for r in rows]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("ng12:row:") for i in ids)
