"""Reading round 8: compositions compared by word stem ("bringing up" is "brings up"); a lump
described only by its size and feel ("L axilla 2cm hard"); the testes as "balls"; clothes or a belt
gone loose; burning after food or behind the breastbone; pain on passing urine. Every clause is
written for the test."""

from __future__ import annotations

import pytest

from ng12_common.knowledge import LexiconEntry
from ng12_common.lexicon_match import read_phrase
from ng12_common.reading.compose import compose
from ng12_common.reading.record import read_record
from ng12_common.reading.sizes import comparison, size_statement

LEX = [
    LexiconEntry(concept="haemoptysis", label="haemoptysis"),
    LexiconEntry(concept="lump", label="lump", synonyms=["mass"]),
    LexiconEntry(concept="breast_lump", label="breast lump"),
    LexiconEntry(concept="axillary_lump", label="lump in the axilla"),
    LexiconEntry(concept="neck_lump", label="lump in the neck"),
    LexiconEntry(concept="cervical_lymphadenopathy", label="cervical lymphadenopathy"),
    LexiconEntry(concept="non_painful_testicular_enlargement", label="non-painful enlargement of the testis"),
    LexiconEntry(concept="weight_loss", label="weight loss"),
    LexiconEntry(concept="dyspepsia", label="dyspepsia"),
    LexiconEntry(concept="reflux", label="reflux"),
    LexiconEntry(concept="dysuria", label="dysuria"),
    LexiconEntry(concept="abdominal_mass", label="abdominal mass"),
    LexiconEntry(concept="lower_urinary_tract_symptoms", label="lower urinary tract symptoms"),
    LexiconEntry(
        concept="newly_abnormal_central_neurological_function", label="central neurological function"
    ),
    LexiconEntry(concept="anal_ulceration", label="anal ulceration"),
    LexiconEntry(concept="oral_ulceration", label="oral ulceration"),
    LexiconEntry(concept="skin_lesion_suspicious_of_bcc", label="skin lesion suspicious of bcc"),
    LexiconEntry(concept="hepatomegaly", label="hepatomegaly"),
    LexiconEntry(concept="splenomegaly", label="splenomegaly"),
    LexiconEntry(concept="haematuria", label="haematuria"),
]


def _concepts(clause: str) -> list[str]:
    return sorted(m.concept + ("(absent)" if m.negated else "") for m in read_phrase(clause, LEX).matches)


@pytest.mark.parametrize(
    "clause",
    [
        "been bringing up flecks of blood in the mornings",
        "brought up blood streaked phlegm twice",
        "coughed up bloody sputum",
    ],
)
def test_a_composition_matches_other_forms_of_its_words(clause: str) -> None:
    assert _concepts(clause) == ["haemoptysis"]


def test_words_whose_stem_is_another_word_are_compared_as_written() -> None:
    # "tests" shares the stem of "testes": a result is not a testis
    assert compose("tests show it is bigger") == []


@pytest.mark.parametrize(
    ("clause", "concept"),
    [
        ("L axilla 2cm hard, NT", "axillary_lump"),
        ("R lateral thigh: 4 cm firm, non-tender, feels fixed", "lump"),
        ("R anterior triangle: 2 cm firm, mobile lump below the angle of the jaw", "neck_lump"),
    ],
)
def test_a_lump_described_by_its_size_and_feel_is_a_lump_at_its_site(clause: str, concept: str) -> None:
    assert _concepts(clause) == [concept]


def test_the_described_lump_is_the_generic_lump_named_after_it() -> None:
    assert _concepts("L breast UOQ: 2cm hard, irregular, non-tender lump") == ["breast_lump"]


def test_a_size_and_feel_gives_way_to_a_composed_finding() -> None:
    # the node at a site is already composed: the size and feel add nothing of their own
    assert _concepts("1.5 cm hard node L neck") == ["cervical_lymphadenopathy"]


def test_a_soft_swelling_measured_is_not_read_as_a_lump() -> None:
    assert _concepts("R anterior shin: 2 cm soft, tender, bruised") == []


def test_the_belly_of_a_muscle_is_not_the_abdomen() -> None:
    assert "abdominal_mass" not in _concepts("R calf: 3.5 cm firm, deep mass within the muscle belly")


@pytest.mark.parametrize("clause", ["one ball feels bigger than the other", "his left ball has got larger"])
def test_a_ball_bigger_is_an_enlarged_testis(clause: str) -> None:
    assert _concepts(clause) == ["non_painful_testicular_enlargement"]


@pytest.mark.parametrize(
    "clause", ["lump now bigger, like a golf ball", "swelling on the ball of the foot, bigger than last week"]
)
def test_a_ball_of_the_foot_or_a_golf_ball_is_not_a_testis(clause: str) -> None:
    assert "non_painful_testicular_enlargement" not in _concepts(clause)


@pytest.mark.parametrize(
    "clause", ["had to put 2 new holes in his belt", "trousers hanging off him now", "her rings are looser"]
)
def test_clothes_or_a_belt_gone_loose_is_weight_loss(clause: str) -> None:
    assert _concepts(clause) == ["weight_loss"]


@pytest.mark.parametrize(
    ("clause", "concept"),
    [("burning after meals for 6 weeks", "dyspepsia"), ("burning behind his breastbone at night", "reflux")],
)
def test_burning_after_food_or_behind_the_breastbone(clause: str, concept: str) -> None:
    assert _concepts(clause) == [concept]


def test_pain_on_passing_urine_is_dysuria_and_can_be_absent() -> None:
    assert _concepts("stinging when she wees") == ["dysuria"]
    assert _concepts("no pain passing urine") == ["dysuria(absent)"]


@pytest.mark.parametrize("clause", ["stream slower than it was", "the flow is weak and stop start"])
def test_a_slow_or_weak_stream_is_a_urinary_symptom(clause: str) -> None:
    assert _concepts(clause) == ["lower_urinary_tract_symptoms"]


def test_slurred_speech_in_other_words_is_central() -> None:
    assert _concepts("friends say his speech is a bit slurred") == [
        "newly_abnormal_central_neurological_function"
    ]


@pytest.mark.parametrize(
    ("clause", "concept"),
    [
        ("sore at his back passage that won't heal", "anal_ulceration"),
        ("ulcer on the tongue not healing", "oral_ulceration"),
    ],
)
def test_a_sore_that_does_not_heal_at_a_site(clause: str, concept: str) -> None:
    # "not" inside the finding word ("not healing") does not make it absent
    assert _concepts(clause) == [concept]


@pytest.mark.parametrize(
    "clause",
    ["scab on top of my head that just won't heal", "sore at the inner corner of his eye that won't heal"],
)
def test_a_skin_sore_that_does_not_heal_is_left_for_the_clinician(clause: str) -> None:
    # basal or squamous cell carcinoma (NG12 1.7.5 routine, 1.7.4 suspected cancer pathway): not decided here
    assert _concepts(clause) == []


def test_a_liver_just_palpable_is_still_not_hepatomegaly() -> None:
    assert _concepts("liver just palpable") == []
    assert _concepts("spleen not palpable") == ["splenomegaly(absent)"]


@pytest.mark.parametrize(
    ("text", "change"),
    [
        ("was like a pea now more like a grape", "grew"),
        ("from the size of a 5p to a 50p", "grew"),
        ("was a grape, now a pea", "changed"),
        ("now the size of a walnut", None),
        ("a pea and a grape", None),  # two objects not ordered in time
    ],
)
def test_a_size_compared_with_objects_in_order(text: str, change: str | None) -> None:
    assert comparison(text) == change


def test_a_lump_that_went_from_one_object_to_a_larger_one_grew() -> None:
    (lump,) = read_phrase("lump on thigh, was the size of a pea, now the size of a walnut", LEX).matches
    assert lump.concept == "lump" and "increasing_in_size" in lump.modifiers


@pytest.mark.parametrize(
    ("clause", "only_size"),
    [
        ("now more like a golf ball", True),
        ("was like a pea now a grape 5 weeks ago", True),
        ("pea sized lump", False),
    ],
)
def test_a_clause_that_only_gives_a_size_by_an_object(clause: str, only_size: bool) -> None:
    assert size_statement(clause) is only_size


def test_a_size_by_an_object_qualifies_the_finding_and_is_not_unread() -> None:
    record = {
        "age": 60,
        "gender": "Male",
        "symptoms": ["lump on his thigh", "says it is now more like a golf ball"],
    }
    reading = read_record(record, LEX)
    assert reading.unread == [], [f.model_dump() for f in reading.findings]


def test_a_report_said_to_be_back_or_a_test_arranged_is_not_an_unread_finding() -> None:
    record = {
        "age": 60,
        "gender": "Male",
        "symptoms": ["lump on his thigh, scan arranged last visit", "report is back, see results"],
    }
    reading = read_record(record, LEX)
    assert reading.unread == [] and "lump" in reading.facts.symptoms, [
        f.model_dump() for f in reading.findings
    ]


@pytest.mark.parametrize("clause", ["L arm + leg 4/5 power", "r arm leg weak"])
def test_an_arm_and_leg_weak_or_graded_below_five_is_one_sided_weakness(clause: str) -> None:
    assert _concepts(clause) == ["newly_abnormal_central_neurological_function"]


def test_arms_and_legs_weak_is_not_one_side() -> None:
    assert _concepts("arms and legs feel weak") == []


@pytest.mark.parametrize(
    ("clause", "concept"),
    [
        ("his wee looked like Ribena twice today", "haematuria"),
        ("sore spot on the left side of his tongue for 5 weeks", "oral_ulceration"),
        ("stinging when I pass water", "dysuria"),
    ],
)
def test_lay_descriptions_compose_their_finding(clause: str, concept: str) -> None:
    assert [m.concept for m in read_phrase(clause, LEX).matches] == [concept]


def test_now_orders_two_sizes_by_itself() -> None:
    assert (
        comparison("first noticed a pea sized lump a month ago, says it is now the size of a grape") == "grew"
    )
