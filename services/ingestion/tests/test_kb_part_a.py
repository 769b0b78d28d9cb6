"""Part A: the 109 numbered recommendations, checked against the real NG12 PDF."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from ingestion.kb.parse import ParsedGuideline
from ng12_common.knowledge import Recommendation, text_hash

SECTION_SIZES = {
    1: 6,
    2: 11,
    3: 6,
    4: 3,
    5: 15,
    6: 10,
    7: 7,
    8: 5,
    9: 2,
    10: 9,
    11: 7,
    12: 3,
    13: 4,
    14: 11,
    15: 2,
    16: 8,
}
EXPECTED_IDS = [f"1.{s}.{n}" for s, count in SECTION_SIZES.items() for n in range(1, count + 1)]

# Printed start (and end) pages read off the PDF by eye.
PAGES = {
    "1.1.1": (9, 9),
    "1.1.3": (10, 10),
    "1.1.6": (11, 11),
    "1.2.1": (11, 11),
    "1.2.3": (11, 12),
    "1.2.6": (13, 13),
    "1.2.9": (13, 14),
    "1.3.1": (14, 15),
    "1.3.3": (15, 16),
    "1.4.1": (16, 16),
    "1.4.3": (16, 17),
    "1.5.1": (17, 17),
    "1.5.5": (17, 18),
    "1.5.12": (18, 19),
    "1.6.1": (19, 19),
    "1.6.3": (20, 20),
    "1.7.1": (22, 23),  # with the weighted 7-point checklist at the top of page 23
    "1.7.5": (23, 24),
    "1.8.3": (24, 25),
    "1.9.1": (25, 25),
    "1.10.3": (26, 27),
    "1.10.4": (27, 27),
    "1.10.9": (28, 29),
    "1.11.6": (30, 30),
    "1.12.3": (30, 31),
    "1.13.3": (31, 32),
    "1.14.5": (33, 34),
    "1.14.10": (34, 35),
    "1.16.2": (35, 35),
    "1.16.8": (36, 36),
}


@pytest.fixture(scope="module")
def recs(ng12_parsed: ParsedGuideline) -> dict[str, Recommendation]:
    return {r.id: r for r in ng12_parsed.recommendations}


def test_exactly_the_109_ids_in_order(ng12_parsed: ParsedGuideline) -> None:
    ids = [r.id for r in ng12_parsed.recommendations]
    assert len(EXPECTED_IDS) == 109
    assert ids == EXPECTED_IDS
    assert not [w for w in ng12_parsed.warnings if "recommendation" in w and "Part B" not in w]


@pytest.mark.parametrize(("rec_id", "pages"), sorted(PAGES.items()))
def test_printed_pages(recs: dict[str, Recommendation], rec_id: str, pages: tuple[int, int]) -> None:
    assert (recs[rec_id].page, recs[rec_id].page_end) == pages


def test_every_start_page_matches_the_pdf(
    recs: dict[str, Recommendation], ng12_reference: Any, normalise: Callable[[str], str]
) -> None:
    """The id followed by the first words of the text is on the recorded start page (pdfium)."""
    wrong = []
    for rec in recs.values():
        opening = normalise(f"{rec.id} " + " ".join(rec.text.split()[:8]))
        if opening not in ng12_reference.pages[rec.page]:
            wrong.append(rec.id)
    assert wrong == []


def test_every_text_is_verbatim(
    recs: dict[str, Recommendation], ng12_reference: Any, normalise: Callable[[str], str]
) -> None:
    """Each text, as a word sequence, occurs in the PDF pages it spans (headers/footers removed)."""
    mismatched = [
        rec.id
        for rec in recs.values()
        if normalise(rec.text) not in ng12_reference.span(rec.page, rec.page_end)
    ]
    assert mismatched == []


def test_texts_are_whole_and_clean(recs: dict[str, Recommendation]) -> None:
    for rec in recs.values():
        assert rec.text_hash == text_hash(rec.text)
        assert "Suspected cancer: recognition and referral" not in rec.text, rec.id
        assert "NICE 2026" not in rec.text and "Page " not in rec.text, rec.id
        assert "\u2022" not in rec.text and "\uff0d" not in rec.text, rec.id
        assert rec.year_tags, rec.id
        assert not rec.text.startswith(rec.id)


def test_text_across_a_page_break(recs: dict[str, Recommendation]) -> None:
    assert recs["1.3.3"].text.endswith(
        "because of ongoing unexplained symptoms (for example, abdominal mass). [2023]"
    )
    assert "with low haemoglobin levels or\n- raised platelet count" in recs["1.2.3"].text
    assert recs["1.4.3"].text.endswith("for information about seeking specialist advice. [2015]")


def test_bullets_and_nested_lists(recs: dict[str, Recommendation]) -> None:
    assert recs["1.1.1"].text == (
        "Refer people using a suspected cancer pathway referral for lung cancer if they:\n"
        "- have chest X-ray findings that suggest lung cancer or\n"
        "- are aged 40 and over with unexplained haemoptysis. [2015]"
    )
    text = recs["1.1.5"].text
    asbestos = "\n- they have 1 or more of the following unexplained symptoms and have been exposed to"
    assert asbestos in text
    nested = ["cough", "fatigue", "shortness of breath", "chest pain", "weight loss", "appetite loss. [2015]"]
    assert text.endswith("".join(f"\n  - {item}" for item in nested))
    assert "\n- blood tests for:\n  - calcium\n" in recs["1.10.4"].text
    assert "\nFIT should be offered even if" in recs["1.3.1"].text.replace("  FIT", "FIT")


def test_table_in_recommendation_1_6_3(recs: dict[str, Recommendation]) -> None:
    text = recs["1.6.3"].text
    assert "in table 1. Take into account the person's preferences" in text
    caption = "Table 1 Age-specific PSA thresholds for people with possible symptoms of prostate cancer"
    assert f"\n{caption}\n" in text
    for row in (
        "Below 40 Use clinical judgement",
        "40 to 49 More than 2.5",
        "50 to 59 More than 3.5",
        "60 to 69 More than 4.5",
        "70 to 79 More than 6.5",
        "Above 79 Use clinical judgement",
    ):
        assert f"\n{row}" in text
    assert "For a short explanation" not in text  # the pointer to the rationale is prose


def test_checklist_kept_with_1_7_1(recs: dict[str, Recommendation]) -> None:
    text = recs["1.7.1"].text
    assert "weighted 7-point checklist score of 3 or more. [2015]\nWeighted 7-point checklist\n" in text
    assert "Major features of the lesions (scoring 2 points each):\n- change in size" in text
    assert text.endswith("- change in sensation.")


def test_year_tags(recs: dict[str, Recommendation]) -> None:
    assert recs["1.1.1"].year_tags == ["2015"]
    assert recs["1.2.1"].year_tags == ["2015", "amended 2025"]
    assert recs["1.10.5"].year_tags == ["2015", "amended 2025"]  # tag wraps onto a new line
    assert recs["1.5.1"].year_tags == ["2011", "amended 2020"]
    assert recs["1.16.1"].year_tags == ["2005"]


def test_sections_and_subsections(recs: dict[str, Recommendation]) -> None:
    r = recs["1.1.4"]
    assert (r.section, r.section_title) == ("1.1", "Lung and pleural cancers")
    assert r.subsection_title == "Mesothelioma"
    assert recs["1.4.1"].subsection_title is None
    assert recs["1.10.7"].subsection_title == "Non-Hodgkin's lymphoma"
    assert recs["1.16.8"].section_title == "The diagnostic process"


SITES = {
    "1.1.1": "lung",
    "1.1.4": "mesothelioma",
    "1.2.1": "oesophageal",
    "1.2.4": "pancreatic",
    "1.2.6": "stomach",
    "1.2.10": "gall bladder",
    "1.2.11": "liver",
    "1.3.1": "colorectal",
    "1.3.6": "anal",
    "1.4.1": "breast",
    "1.5.1": "ovarian",
    "1.5.10": "endometrial",
    "1.5.13": "cervical",
    "1.5.14": "vulval",
    "1.5.15": "vaginal",
    "1.6.1": "prostate",
    "1.6.4": "bladder",
    "1.6.6": "renal",
    "1.6.7": "testicular",
    "1.6.9": "penile",
    "1.7.1": "melanoma",
    "1.7.4": "squamous cell carcinoma",
    "1.7.5": "basal cell carcinoma",
    "1.8.1": "laryngeal",
    "1.8.2": "oral",
    "1.8.5": "thyroid",
    "1.9.1": "brain and CNS",
    "1.9.2": "brain and CNS",
    "1.10.1": "leukaemia",
    "1.10.2": "leukaemia",
    "1.10.4": "myeloma",
    "1.10.6": "non-Hodgkin's lymphoma",
    "1.10.8": "Hodgkin's lymphoma",
    "1.11.1": "bone sarcoma",
    "1.11.4": "soft tissue sarcoma",
    "1.12.1": "neuroblastoma",
    "1.12.2": "retinoblastoma",
    "1.12.3": "Wilms' tumour",
    "1.13.2": "non-site-specific",
    "1.14.1": "non-site-specific",
    "1.16.8": "non-site-specific",
}


@pytest.mark.parametrize(("rec_id", "site"), sorted(SITES.items()))
def test_cancer_site(recs: dict[str, Recommendation], rec_id: str, site: str) -> None:
    assert recs[rec_id].cancer_site == site


ACTIONS = {
    "immediate_referral": ["1.10.2"],
    "very_urgent_referral": ["1.9.2", "1.10.7", "1.10.9", "1.11.2", "1.11.7", "1.12.1", "1.12.3"],
    "very_urgent_investigation": ["1.10.1", "1.10.3", "1.11.3", "1.11.6"],
    "urgent_investigation": [
        "1.1.2",
        "1.1.3",
        "1.1.5",
        "1.1.6",
        "1.2.5",
        "1.2.10",
        "1.2.11",
        "1.9.1",
        "1.11.4",
        "1.13.2",
        "1.13.3",
        "1.13.4",
    ],
    "non_urgent_referral": ["1.4.3", "1.6.5", "1.7.5"],
    "non_urgent_investigation": ["1.2.2", "1.2.3", "1.2.8", "1.2.9", "1.5.7", "1.5.12", "1.6.8"],
    "primary_care_test": ["1.3.1", "1.5.2", "1.5.3", "1.5.5", "1.5.6", "1.6.2", "1.10.4"],
}
PATHWAY = [
    "1.1.1",
    "1.1.4",
    "1.2.1",
    "1.2.4",
    "1.2.6",
    "1.2.7",
    "1.3.2",
    "1.3.5",
    "1.3.6",
    "1.4.1",
    "1.4.2",
    "1.5.1",
    "1.5.8",
    "1.5.10",
    "1.5.11",
    "1.5.13",
    "1.5.14",
    "1.5.15",
    "1.6.1",
    "1.6.3",
    "1.6.4",
    "1.6.6",
    "1.6.7",
    "1.6.9",
    "1.6.10",
    "1.7.1",
    "1.7.2",
    "1.7.3",
    "1.7.4",
    "1.7.6",
    "1.8.1",
    "1.8.2",
    "1.8.4",
    "1.8.5",
    "1.10.5",
    "1.10.6",
    "1.10.8",
    "1.11.1",
    "1.11.5",
    "1.12.2",
]


def test_actions_for_every_recommendation(recs: dict[str, Recommendation]) -> None:
    expected = {rid: action for action, ids in ACTIONS.items() for rid in ids}
    expected.update({rid: "suspected_cancer_pathway_referral" for rid in PATHWAY})
    for rid in recs:
        expected.setdefault(rid, "other")  # 1.3.3, 1.3.4, 1.5.4, 1.5.9, 1.7.7, 1.8.3, 1.13.1, 1.14-1.16
    assert {rid: r.action for rid, r in recs.items()} == expected


def test_strength_and_timeframe(recs: dict[str, Recommendation]) -> None:
    assert (recs["1.1.1"].strength, recs["1.1.1"].timeframe) == ("refer", "none")
    assert (recs["1.1.2"].strength, recs["1.1.2"].timeframe) == ("offer", "2 weeks")
    assert (recs["1.10.1"].strength, recs["1.10.1"].timeframe) == ("consider", "48 hours")
    assert (recs["1.10.2"].strength, recs["1.10.2"].timeframe) == ("refer", "immediate")
    assert (recs["1.5.1"].strength, recs["1.5.8"].strength) == ("refer", "refer")  # "make a referral"
    assert recs["1.7.6"].strength == "consider"  # "Only consider"
    assert recs["1.13.2"].strength == "offer" and recs["1.13.4"].strength == "consider"
    assert recs["1.13.2"].timeframe == "2 weeks"  # "urgent" = within 2 weeks (terms)
    assert recs["1.5.2"].strength == "other" and recs["1.16.8"].strength == "other"
    assert (recs["1.8.3"].action, recs["1.8.3"].timeframe) == ("other", "2 weeks")


def test_population(recs: dict[str, Recommendation]) -> None:
    p = recs["1.1.2"].population
    assert (p.min_age, p.max_age_exclusive, p.sex, p.age_group) == (40, None, "any", "any")
    assert recs["1.1.1"].population.min_age is None  # chest X-ray findings apply at any age
    assert recs["1.4.1"].population.min_age == 30  # every listed criterion is 30+ or 50+
    assert recs["1.4.3"].population.max_age_exclusive == 30
    assert recs["1.5.11"].population.max_age_exclusive == 55
    ovarian = recs["1.5.2"].population
    assert (ovarian.sex, ovarian.min_age) == ("female", 18)  # "apply to women aged 18 and over"
    assert any("especially if aged 50 or over" in n for n in ovarian.notes)
    assert recs["1.5.5"].population.min_age == 50
    assert recs["1.5.5"].population.age_group == "any"  # "...guideline on IBS in adults" is an aside
    assert recs["1.6.7"].population.sex == "male"
    assert recs["1.6.1"].population.sex == "any"
    cyp = recs["1.10.2"].population
    assert (cyp.age_group, cyp.min_age, cyp.max_age_exclusive) == ("children_and_young_people", None, 25)
    child = recs["1.12.1"].population
    assert (child.age_group, child.max_age_exclusive) == ("children", 16)
    assert recs["1.10.1"].population.age_group == "adults"
    assert recs["1.3.1"].population.age_group == "adults"


def test_criteria_left_to_the_criteria_module(recs: dict[str, Recommendation]) -> None:
    assert all(r.criteria is None and r.criteria_status == "none" for r in recs.values())


def test_highlights_hold_exactly_each_recommendation(
    recs: dict[str, Recommendation], ng12_pdf_path: Any
) -> None:
    """The guideline viewer highlights these boxes: read back from the PDF, they give each
    recommendation's own words, in order, on its printed pages, and nothing else (a table's
    caption, e.g. "Table 1 Age-specific PSA thresholds", is not boxed: only the table is)."""
    import pdfplumber

    def words(text: str) -> list[str]:  # bullet glyphs aside ("•"/"－" printed, "-" in the clean text)
        return [w for w in text.replace("－", " ").replace("•", " ").split() if w != "-"]

    wrong = []
    with pdfplumber.open(ng12_pdf_path) as pdf:
        for rec in recs.values():
            assert rec.highlights, rec.id
            assert {b.page for b in rec.highlights} <= set(range(rec.page, rec.page_end + 1)), rec.id
            printed = " ".join(
                pdf.pages[b.page_index]
                .crop((b.x0 - 0.5, b.top - 0.5, b.x1 + 0.5, b.bottom + 0.5))
                .extract_text()
                for b in rec.highlights
            )
            own = "\n".join(ln for ln in rec.text.splitlines() if not re.match(r"Table \d+ ", ln))
            if words(printed) != words(own):
                wrong.append(rec.id)
    assert not wrong, f"highlights that do not read back as the recommendation: {wrong}"
