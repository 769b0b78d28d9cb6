"""Reading round 4: post-menopausal bleeding composed from bleeding and menopause status, neurological
deficits (numbness, visual field loss, weakness of a limb) and their course, 7-point features stated
apart from the lesion, stated diagnoses and healing wounds. Every record is written for the test."""

from __future__ import annotations

from typing import Any

from ng12_common.knowledge import LexiconEntry
from ng12_common.reading.record import finish, read_record

LEX = [
    LexiconEntry(concept="post_menopausal_bleeding", label="post-menopausal bleeding"),
    LexiconEntry(concept="bleeding", label="bleeding"),
    LexiconEntry(
        concept="newly_abnormal_central_neurological_function",
        label="newly abnormal central neurological function",
    ),
    LexiconEntry(
        concept="progressive_loss_of_central_neurological_function",
        label="progressive loss of central neurological function",
    ),
    LexiconEntry(concept="pigmented_skin_lesion", label="pigmented skin lesion", synonyms=["mole"]),
    LexiconEntry(concept="bone_pain", label="bone pain"),
    LexiconEntry(concept="bone_swelling", label="bone swelling"),
    LexiconEntry(concept="lymphadenopathy", label="lymphadenopathy", synonyms=["enlarged lymph node"]),
]


def _read(**fields: Any) -> Any:
    record: dict[str, Any] = {"age": 60, "gender": "Female", "symptoms": [], **fields}
    reading = read_record(record, LEX)
    return reading, finish(reading)


def test_spotting_after_periods_ended_is_post_menopausal_bleeding() -> None:
    reading, facts = _read(symptoms=["a little spotting last week"], history=["post-menopausal since 50"])
    assert "post_menopausal_bleeding" in facts.symptoms
    assert reading.complete


def test_last_period_over_a_year_ago_makes_bleeding_post_menopausal() -> None:
    _r, facts = _read(symptoms=["bleeding like a period for two days"], history=["LMP 2 years ago"])
    assert "post_menopausal_bleeding" in facts.symptoms


def test_bleeding_without_a_stated_menopause_is_not_composed() -> None:
    _r, facts = _read(symptoms=["a little spotting last week"], history=["LMP 3 months ago"])
    assert "post_menopausal_bleeding" not in facts.symptoms
    _r, facts = _read(symptoms=["a little spotting last week"], history=["perimenopausal, irregular cycle"])
    assert "post_menopausal_bleeding" not in facts.symptoms


def test_periods_stopped_under_a_year_or_for_another_reason_are_not_the_menopause() -> None:
    """NICE NG23: the menopause is 12 months without a period; pregnancy and hormonal contraception
    stop periods too (NHS A-Z Stopped or missed periods)."""
    for history in [
        ["periods stopped 4 months ago"],
        ["no periods for 6 months"],
        ["no periods for 2 years since the Mirena was fitted"],
        ["periods stopped 18 months ago", "pregnant, 10 weeks"],
        ["periods stopped at 51"],  # the patient is 51: not a year yet
    ]:
        _r, facts = _read(age=51, symptoms=["a little spotting last week"], history=history)
        assert "post_menopausal_bleeding" not in facts.symptoms, history
    _r, facts = _read(age=53, symptoms=["a little spotting last week"], history=["periods stopped at 51"])
    assert "post_menopausal_bleeding" in facts.symptoms
    _r, facts = _read(
        symptoms=["spotting"], history=["periods stopped 2 years ago", "pregnancy test negative"]
    )
    assert "post_menopausal_bleeding" in facts.symptoms


def test_a_bleeding_word_that_does_not_say_vaginal_is_not_post_menopausal_bleeding() -> None:
    _r, facts = _read(symptoms=["bleeding again"], history=["post-menopausal"])
    assert "post_menopausal_bleeding" not in facts.symptoms
    _r, facts = _read(symptoms=["blood on her knickers"], history=["post-menopausal"])
    assert "post_menopausal_bleeding" in facts.symptoms


def test_bleeding_from_another_site_is_not_post_menopausal_bleeding() -> None:
    _r, facts = _read(symptoms=["blood in her stools"], history=["periods stopped 8 years ago"])
    assert "post_menopausal_bleeding" not in facts.symptoms


def test_a_man_is_never_read_with_post_menopausal_bleeding() -> None:
    _r, facts = _read(gender="Male", symptoms=["spotting"], history=["post-menopausal"])
    assert "post_menopausal_bleeding" not in facts.symptoms


def test_numb_face_and_field_loss_are_neurological_deficits() -> None:
    for text in [
        "left side of her face has gone numb",
        "reduced sensation down one side of body",
        "weakness of the right side of body",
        "keeps bumping into things on her right side",
    ]:
        _r, facts = _read(symptoms=[text])
        assert "newly_abnormal_central_neurological_function" in facts.symptoms, text


def test_a_numb_or_weak_limb_or_face_alone_is_not_read_as_a_central_deficit() -> None:
    """A numb arm, a weak face or a knock on a table have common peripheral or no neurological
    causes (a compressed nerve, Bell's palsy): only one side of the body, or field loss, composes."""
    for text in [
        "arm numb after sleeping on it",
        "left arm numb",
        "weakness left side of face, ?bells palsy",
        "bumping into the side of a table",
        "reduced sensation left arm",
    ]:
        _r, facts = _read(symptoms=[text])
        assert "newly_abnormal_central_neurological_function" not in facts.symptoms, text


def test_a_deficit_that_recovered_fully_is_transient() -> None:
    _r, facts = _read(symptoms=["went weak down one side for ten minutes this morning, now fully recovered"])
    assert "newly_abnormal_central_neurological_function" not in facts.symptoms
    assert "progressive_loss_of_central_neurological_function" not in facts.symptoms


def test_worsening_stated_apart_makes_the_only_deficit_progressive() -> None:
    _r, facts = _read(symptoms=["weaker down one side", "getting worse over a month"])
    assert "progressive_loss_of_central_neurological_function" in facts.symptoms


def test_worsening_is_not_given_to_a_deficit_when_another_complaint_is_recorded() -> None:
    _r, facts = _read(symptoms=["weaker down one side", "mole on back", "getting worse over a month"])
    assert "progressive_loss_of_central_neurological_function" not in facts.symptoms


def test_checklist_features_in_their_own_clauses_describe_the_lesion() -> None:
    reading, facts = _read(
        symptoms=["mole on her calf"], exam_findings=["variegated pigment", "erythema around it"]
    )
    mods = facts.symptoms["pigmented_skin_lesion"].modifiers
    assert {"irregular_colour", "inflammation"} <= mods
    assert reading.complete


def test_a_feature_stated_absent_apart_from_the_lesion_adds_nothing() -> None:
    _r, facts = _read(symptoms=["mole on his back", "no change in size since last year"])
    assert "change_in_size" not in facts.symptoms["pigmented_skin_lesion"].modifiers


def test_a_mole_that_has_gone_dark_is_not_resolved() -> None:
    _r, facts = _read(symptoms=["the mole has gone darker"])
    assert "pigmented_skin_lesion" in facts.symptoms


def test_a_tender_bone_is_bone_pain() -> None:
    _r, facts = _read(age=12, symptoms=["tenderness over the right tibia"])
    assert "bone_pain" in facts.symptoms


def test_a_stated_diagnosis_is_history_not_an_unread_finding() -> None:
    from ng12_common.reading.explanations import stated_diagnosis

    stated_text = stated_diagnosis("clinical impression osgood schlatter disease", frozenset())
    assert stated_text == "Osgood-Schlatter disease"
    reading, _facts = _read(symptoms=["sore patch inside mouth", "he thinks it is cheek biting"])
    stated = [f for f in reading.findings if f.evidence and f.evidence.startswith("diagnosis:")]
    assert stated and stated[0].status == "history"


def test_a_queried_diagnosis_or_one_beside_a_finding_word_is_not_taken() -> None:
    reading, _f = _read(symptoms=["query cellulitis"])
    assert not [f for f in reading.findings if f.evidence and f.evidence.startswith("diagnosis:")]
    reading, _f = _read(symptoms=["enlarged lymph node c/w cellulitis"])
    assert not [f for f in reading.findings if f.evidence and f.evidence.startswith("diagnosis:")]


def test_a_healing_cut_is_read_as_not_an_ng12_finding() -> None:
    reading, _f = _read(exam_findings=["healing cut on the left hand"])
    assert reading.complete
