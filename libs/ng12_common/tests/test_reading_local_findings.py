"""Reading round 6: bleeding from a lesion or a period is local, not the bleeding tendency of NG12
1.10.1; discharge and staining from the nipple; a bump on a limb; a treated STI in the history;
"went" as resolution; "again" said of another finding; persistent diarrhoea as a change in bowel
habit; "never had this before" as a first presentation. Every record is written for the test."""

from __future__ import annotations

from typing import Any

import pytest

from ng12_common.knowledge import LexiconEntry
from ng12_common.lexicon_match import _modifiers
from ng12_common.reading.compose import NO_FINDING, compose
from ng12_common.reading.context import default_rules
from ng12_common.reading.record import finish, read_record

LEX = [
    LexiconEntry(concept="bleeding", label="bleeding"),
    LexiconEntry(concept="rectal_bleeding", label="rectal bleeding"),
    LexiconEntry(concept="fever", label="fever"),
    LexiconEntry(concept="haematuria", label="haematuria", synonyms=["blood in her urine"]),
    LexiconEntry(concept="urinary_tract_infection", label="urinary tract infection", synonyms=["uti"]),
    LexiconEntry(concept="diarrhoea", label="diarrhoea", synonyms=["loose stools"]),
    LexiconEntry(concept="change_in_bowel_habit", label="change in bowel habit"),
    LexiconEntry(concept="nipple_discharge", label="nipple discharge"),
    LexiconEntry(concept="penile_ulceration", label="ulcerated lesion", synonyms=["ulcer on the glans"]),
    LexiconEntry(
        concept="sti_treatment_completed",
        label="treatment for a sexually transmitted infection has been completed",
        kind="history",
    ),
]


def _read(**fields: Any) -> Any:
    record: dict[str, Any] = {"age": 60, "gender": "Female", "symptoms": [], **fields}
    reading = read_record(record, LEX)
    return reading, finish(reading)


@pytest.mark.parametrize(
    "clause",
    [
        "it bled a lot",
        "sometimes bleeds when she wipes",
        "now 4 days of bleeding like a light period",
        "shiny spot on her back that bleeds when her bra rubs",
    ],
)
def test_bleeding_from_a_lesion_a_period_or_on_wiping_is_local(clause: str) -> None:
    assert [c.concept for c in compose(clause)] == [NO_FINDING]


def test_a_site_with_a_finding_of_its_own_wins_over_a_local_one() -> None:
    assert [c.concept for c in compose("blood when i wipe my bottom")] == ["rectal_bleeding"]
    assert compose("unexplained bleeding and bruising") == []


@pytest.mark.parametrize(
    "clause",
    [
        "blood stained discharge expressible from a single duct of the r nipple",
        "brownish red marks in her bra from the r nipple",
    ],
)
def test_discharge_or_staining_from_the_nipple_is_nipple_discharge(clause: str) -> None:
    assert [c.concept for c in compose(clause)] == ["nipple_discharge"]


def test_a_bump_on_a_limb_is_a_lump() -> None:
    assert [c.concept for c in compose("dad noticed a bump on her r forearm")] == ["lump"]


def test_went_at_the_end_of_the_clause_is_resolution_and_went_on_is_not() -> None:
    rules = default_rules()
    assert rules.status("the redness and ", " went") == "resolved"
    assert rules.status("", " went on for weeks") is None


def test_a_bleed_like_a_period_is_not_the_bleeding_of_a_bleeding_tendency() -> None:
    _r, facts = _read(symptoms=["now 4 days of bleeding like a light period"])
    assert "bleeding" not in facts.symptoms


def test_again_said_of_the_blood_does_not_make_one_treated_uti_recurrent() -> None:
    _r, facts = _read(
        symptoms=["blood in her urine again, 3 weeks after finishing trimethoprim for a UTI"],
    )
    assert "urinary_tract_infection" not in facts.symptoms
    _r, facts = _read(symptoms=["4th UTI since March, settles with antibiotics but keeps coming back"])
    assert "recurrent" in facts.symptoms["urinary_tract_infection"].modifiers


def test_diarrhoea_for_six_weeks_is_a_change_in_bowel_habit() -> None:
    _r, facts = _read(symptoms=["loose stools"], symptom_duration_days=49)
    assert "change_in_bowel_habit" in facts.symptoms
    _r, facts = _read(symptoms=["loose stools"], symptom_duration_days=5)
    assert "change_in_bowel_habit" not in facts.symptoms


def test_a_treated_sti_in_the_history_is_read() -> None:
    _r, facts = _read(
        gender="Male",
        symptoms=["ulcer on the glans"],
        history=["Syphilis in August, treated with benzathine penicillin at GUM, course complete"],
    )
    assert "sti_treatment_completed" in facts.history | set(facts.symptoms)


def test_never_had_this_before_is_a_first_presentation() -> None:
    assert "first_presentation" in _modifiers("never had anything like it before")
    assert "first_presentation" not in _modifiers("had this before")


def test_a_negation_runs_on_through_a_list_of_words_that_name_no_finding() -> None:
    lex = [LexiconEntry(concept="breast_lump", label="breast lump", synonyms=["lumps"])]
    reading = read_record(
        {"age": 40, "gender": "Female", "symptoms": ["no breast symptoms; no lumps, pain or discharge"]}, lex
    )
    assert [f.status for f in reading.findings if f.clause == "pain or discharge"] == ["absent"]
    assert reading.complete


@pytest.mark.parametrize("clause", ["nothing palpable", "weight the same", "weight is the same as before"])
def test_an_examination_that_found_nothing_or_a_steady_weight_is_negative(clause: str) -> None:
    assert default_rules().status(clause, clause) == "negated"


def test_a_negated_list_does_not_run_into_a_query_or_a_turn() -> None:
    from ng12_common.lexicon_match import read_phrase

    lex = [
        LexiconEntry(concept="oral_ulceration", label="oral ulceration", synonyms=["ulcerated patch"]),
        LexiconEntry(concept="oral_red_or_red_white_patch", label="red patch", synonyms=["erythroplakia"]),
        LexiconEntry(concept="cough", label="cough"),
        LexiconEntry(concept="dysphagia", label="dysphagia"),
    ]
    read = read_phrase("velvety red non-ulcerated patch floor of mouth, ?erythroplakia", lex)
    assert {m.concept: m.negated for m in read.matches} == {
        "oral_ulceration": True,
        "oral_red_or_red_white_patch": False,
    }
    read = read_phrase("no cough, urinary symptoms, dysphagia", lex)
    assert all(m.negated for m in read.matches)
    read = read_phrase("no cough, but has dysphagia", lex)
    assert {m.concept: m.negated for m in read.matches} == {"cough": True, "dysphagia": False}


def test_sites_listed_with_an_examination_that_found_nothing_or_a_distributed_finding_are_context() -> None:
    lex = [
        LexiconEntry(concept="breast_lump", label="breast lump", synonyms=["lumps"]),
        LexiconEntry(concept="bruising", label="bruising", synonyms=["bruises"]),
        LexiconEntry(concept="lump", label="lump"),
    ]
    for entry in [
        "Both breasts and axillae examined: no lumps",
        "bruises on both forearms and thighs for a week",
    ]:
        reading = read_record({"age": 40, "gender": "Female", "exam_findings": [entry]}, lex)
        assert reading.complete, [(f.clause, f.status) for f in reading.findings]
    # a site listed with a lump that is present is never described away
    reading = read_record({"age": 40, "gender": "Female", "exam_findings": ["lump in groin, and neck"]}, lex)
    assert not [f for f in reading.findings if f.clause.strip() == "and neck" and f.status == "context"]
    assert not [f for f in reading.findings if f.clause.strip() == "neck" and f.status == "context"]


def test_similarity_never_reads_a_present_thing_as_its_absence() -> None:
    from ng12_common.reading.record import _opposite_polarity

    assert _opposite_polarity("absent fundal ('red') reflex", "red reflex present and symmetrical")
    assert not _opposite_polarity("absent fundal ('red') reflex", "no red reflex in the left eye")


def test_a_finding_still_there_after_something_else_cleared_up_is_not_resolved() -> None:
    rules = default_rules()
    assert rules.status("", " still there 7 wks after a throat infection cleared up") is None
    assert rules.status("", " cleared up") == "resolved"
