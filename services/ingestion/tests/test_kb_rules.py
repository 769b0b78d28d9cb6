"""Unit tests of the parsing rules on synthetic input (no PDF needed)."""

from __future__ import annotations

import pytest

from ingestion.kb.classify import AgeGroups, cancer_site, classify, classify_action, find_directive
from ingestion.kb.layout import Line, Word, join_words
from ingestion.kb.part_a import check_numbering
from ingestion.kb.part_b import references
from ingestion.kb.text import render_lines, year_tags

GROUPS = AgeGroups(children=(None, 16), young_people=(16, 25), children_and_young_people=(None, 25))


def _line(x: float, top: float, *texts: str, page: int = 0) -> Line:
    words = []
    pos = x
    for text in texts:
        words.append(Word(text, pos, pos + 6 * len(text), top, top + 12, "Inter-Regular", 12.0))
        pos += 6 * len(text) + 3.4
    return Line(page, page + 1, tuple(words))


def test_join_words_only_spaces_real_gaps() -> None:
    a = Word("and", 0, 20, 0, 12, "Inter-Regular", 12)
    colon = Word(":", 20.2, 23, 0, 12, "Inter-SemiBold", 12)
    b = Word("next", 26.5, 50, 0, 12, "Inter-Regular", 12)
    assert join_words([a, colon, b]) == "and: next"


def test_render_bullets_paragraphs_and_hyphens() -> None:
    lines = [
        _line(92, 100, "Refer", "people", "if", "they:"),
        _line(100, 130, "\u2022", "have", "a", "lump", "or"),
        _line(100, 160, "\u2022", "are", "aged", "40", "and", "over", "with", "any", "of:"),
        _line(118, 190, "\uff0d", "cough"),
        _line(118, 220, "\uff0d", "gender-"),
        _line(138, 238, "related", "pain."),
        _line(92, 280, "A", "new", "paragraph."),
        _line(92, 298, "wrapped", "line.", page=0),
    ]
    assert render_lines(lines, 18.0) == (
        "Refer people if they:\n- have a lump or\n- are aged 40 and over with any of:\n"
        "  - cough\n  - gender-related pain.\nA new paragraph. wrapped line."
    )


def test_year_tags_and_references() -> None:
    assert year_tags("... dyspepsia. [2015, amended 2025]") == ["2015", "amended 2025"]
    assert year_tags("no tag") == []
    ids, malformed = references("Refer [1.2.1] [1.2.7]. See also recommendations 1.16.2 and 1.16.3 1.3.6]")
    assert ids == ["1.2.1", "1.2.7", "1.3.6"]
    assert malformed == ["1.3.6]"]


def test_numbering_warnings() -> None:
    assert check_numbering(["1.1.1", "1.1.2", "1.2.1"]) == []
    warnings = check_numbering(["1.1.1", "1.1.3", "1.1.3", "1.3.1"])
    assert any("1.1.2 is missing" in w for w in warnings)
    assert any("1.1.3 appears more than once" in w for w in warnings)
    assert any("section 1.2 has no recommendations" in w for w in warnings)


@pytest.mark.parametrize(
    ("directive", "action"),
    [
        ("refer children and young people for immediate specialist assessment", "immediate_referral"),
        ("consider very urgent referral (for an appointment within 48 hours)", "very_urgent_referral"),
        ("offer a very urgent full blood count (within 48 hours)", "very_urgent_investigation"),
        ("offer urgent investigation or a suspected cancer pathway referral.", "urgent_investigation"),
        ("refer people using a suspected cancer pathway referral", "suspected_cancer_pathway_referral"),
        ("consider an urgent referral (for an appointment within 2 weeks) by a dentist", "other"),
        ("offer an urgent chest x-ray (to be done within 2 weeks)", "urgent_investigation"),
        ("consider routine referral for people", "non_urgent_referral"),
        ("consider non-urgent, direct access upper gastrointestinal endoscopy", "non_urgent_investigation"),
        ("arrange an ultrasound scan of the abdomen and pelvis.", "non_urgent_investigation"),
        ("measure serum ca125 in primary care", "primary_care_test"),
        ("offer quantitative faecal immunochemical testing (fit)", "primary_care_test"),
    ],
)
def test_action_rules(directive: str, action: str) -> None:
    assert classify_action(directive) == action


def test_directive_forms() -> None:
    found = find_directive("If the ultrasound suggests ovarian cancer, make a referral to a service. [2011]")
    assert found is not None and found[0] == "make a referral"
    text = "For people with weight loss:\n- carry out an assessment and\n- offer urgent investigation. [2015]"
    found = find_directive(text)
    assert found is not None and found[0] == "offer"
    assert find_directive("Put in place local arrangements. [2005]") is None
    text = "Include all information, including whether the referral is urgent or non-urgent."
    result = classify("x", text, [], GROUPS)
    assert (result.action, result.strength) == ("other", "other")


def test_population_rules() -> None:
    pop = classify("x", "Consider a test in women aged under 55 with bleeding. [2015]", [], GROUPS).population
    assert (pop.sex, pop.max_age_exclusive) == ("female", 55)
    text = "Refer people if they are:\n- aged 30 and over with a lump or\n- aged 50 and over. [2015]"
    assert classify("x", text, [], GROUPS).population.min_age == 30
    text = "Refer people if they:\n- have X-ray findings or\n- are aged 40 and over with haemoptysis. [2015]"
    assert classify("x", text, [], GROUPS).population.min_age is None
    scope = ["These apply to women aged 18 and over."]
    pop = classify("x", "Consider tests in a woman. [2011]", scope, GROUPS)
    assert pop.population.min_age == 18
    pop = classify("x", "Consider referral for children and young people with a lump. [2015]", [], GROUPS)
    assert (pop.population.age_group, pop.population.max_age_exclusive) == ("children_and_young_people", 25)


@pytest.mark.parametrize(
    ("section", "subsection", "site"),
    [
        ("Lung and pleural cancers", "Lung cancer", "lung"),
        ("Skin cancers", "Malignant melanoma of the skin", "melanoma"),
        ("Haematological cancers", "Leukaemia in children and young people", "leukaemia"),
        ("Haematological cancers", "Non-Hodgkin's lymphoma", "non-Hodgkin's lymphoma"),
        ("Childhood cancers", "Wilms' tumour", "Wilms' tumour"),
        ("Brain and central nervous system cancers", "Adults", "brain and CNS"),
        ("Breast cancer", None, "breast"),
        ("Sarcomas", "Soft tissue sarcoma in adults", "soft tissue sarcoma"),
        ("Non-site-specific symptoms", "Symptoms of concern in adults", "non-site-specific"),
        ("Safety netting", None, "non-site-specific"),
    ],
)
def test_cancer_site(section: str, subsection: str | None, site: str) -> None:
    assert cancer_site(section, subsection) == site
