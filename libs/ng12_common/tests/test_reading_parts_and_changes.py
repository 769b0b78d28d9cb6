"""Reading round 7: pain of the back, a change in the bowels and weight lost given as an amount,
composed from a finding word and a site (SNOMED CT); a diagnosis an examination saw; a medicine
named on its own (it never explains a finding by itself). Every record is written for the test."""

from __future__ import annotations

from typing import Any

import pytest

from ng12_common.knowledge import LexiconEntry
from ng12_common.reading.compose import NO_FINDING, compose
from ng12_common.reading.record import finish, read_record

LEX = [
    LexiconEntry(concept="cough", label="cough"),
    LexiconEntry(concept="back_pain", label="back pain"),
    LexiconEntry(concept="rectal_bleeding", label="rectal bleeding", synonyms=["bright red blood"]),
    LexiconEntry(concept="weight_loss", label="weight loss"),
    LexiconEntry(concept="change_in_bowel_habit", label="change in bowel habit"),
]


def _read(**fields: Any) -> Any:
    record: dict[str, Any] = {"age": 62, "gender": "Male", "symptoms": [], **fields}
    reading = read_record(record, LEX)
    return reading, finish(reading)


@pytest.mark.parametrize(
    "clause", ["aching lower back for 3 months", "nagging ache in the middle of his back", "pain in her back"]
)
def test_pain_of_the_back_or_spine_is_back_pain(clause: str) -> None:
    assert [c.concept for c in compose(clause)] == ["back_pain"]


@pytest.mark.parametrize("clause", ["sore at the back of his throat", "ache at the back of the knee"])
def test_the_back_of_another_part_is_not_the_back(clause: str) -> None:
    assert "back_pain" not in [c.concept for c in compose(clause)]


def test_the_back_passage_is_not_the_back() -> None:
    assert [c.concept for c in compose("pain in the back passage")] == [NO_FINDING]


@pytest.mark.parametrize(
    "clause", ["bowels much looser", "bowels more erratic for 2 months", "stools more frequent"]
)
def test_bowels_that_changed_are_a_change_in_bowel_habit(clause: str) -> None:
    assert [(c.concept, c.negated) for c in compose(clause)] == [("change_in_bowel_habit", False)]


def test_bowels_no_different_are_an_absent_change() -> None:
    assert [(c.concept, c.negated) for c in compose("bowel habit no different to usual")] == [
        ("change_in_bowel_habit", True)
    ]


@pytest.mark.parametrize("clause", ["weighed 7 kg less than in the summer", "down from 75 kg in the spring"])
def test_weight_lost_given_as_an_amount_is_weight_loss(clause: str) -> None:
    assert [c.concept for c in compose(clause)] == ["weight_loss"]


def test_a_weight_recorded_as_the_same_names_no_finding() -> None:
    assert [c.concept for c in compose("weighs the same 82 kg")] == [NO_FINDING]
    _r, facts = _read(symptoms=["weighs the same 82 kg"])
    assert "weight_loss" not in facts.symptoms


def test_a_diagnosis_an_examination_saw_explains_and_is_not_unread() -> None:
    reading, facts = _read(
        symptoms=["bright red blood on the paper for 2 weeks"],
        exam_findings=["posterior midline anal fissure clearly visible on parting buttocks"],
    )
    assert reading.unread == []
    assert "explained" in facts.symptoms["rectal_bleeding"].modifiers


def test_a_cough_attributed_to_a_medicine_is_explained_and_the_new_medicine_is_read() -> None:
    reading, facts = _read(
        symptoms=["dry cough for 6 weeks"],
        history=["cough attributed to ACE inhibitor, switched to losartan"],
    )
    assert "explained" in facts.symptoms["cough"].modifiers
    assert reading.unread == []


def test_a_medicine_alone_does_not_explain_a_cough() -> None:
    _reading, facts = _read(symptoms=["dry cough for 6 weeks"], history=["on ramipril 5 mg"])
    assert "explained" not in facts.symptoms["cough"].modifiers


def test_a_clause_that_only_names_a_medicine_is_read() -> None:
    reading, _facts = _read(symptoms=["dry cough, started a week after ramipril was begun"])
    assert reading.unread == []


def test_pain_on_opening_the_bowels_names_no_ng12_finding_but_tummy_pain_still_does() -> None:
    assert [c.concept for c in compose("really painful to open bowels")] == [NO_FINDING]
    assert [c.concept for c in compose("tummy pain when opening bowels")] == ["abdominal_pain"]


def test_a_racing_heart_is_read_as_palpitations_not_left_unread() -> None:
    reading, _facts = _read(symptoms=["heart racing at night"])
    assert reading.unread == []


def test_a_labelled_qualitative_report_line_is_read_and_an_unclear_one_left_unread() -> None:
    from ng12_common.reading.labs import read_inline

    read = read_inline("SPE: IgG paraprotein band 31 g/L", "male", 67)
    assert read is not None and read.finding == "blood_tests_suggest_myeloma"
    negative = read_inline("SPE: no paraprotein", "male", 67)
    assert negative is not None and negative.finding is None
    assert read_inline("serum FLC: kappa 412 mg/L, ratio 38", "male", 67) is None
    assert read_inline("myeloma screen: awaited", "male", 67) is None


def test_a_doppler_report_of_a_clot_in_a_deep_vein_is_a_dvt_and_no_clot_is_absent() -> None:
    lex = [*LEX, LexiconEntry(concept="deep_vein_thrombosis", label="deep vein thrombosis", kind="finding")]
    found = read_record(
        {
            "age": 66,
            "gender": "Male",
            "symptoms": [],
            "exam_findings": ["Doppler L leg: occlusive thrombus L popliteal vein"],
        },
        lex,
    )
    facts = finish(found)
    assert "deep_vein_thrombosis" in facts.findings | set(facts.symptoms)
    absent = read_record(
        {
            "age": 66,
            "gender": "Male",
            "symptoms": [],
            "exam_findings": ["Doppler: no thrombus in the popliteal vein"],
        },
        lex,
    )
    facts = finish(absent)
    assert "deep_vein_thrombosis" not in facts.findings | set(facts.symptoms)


def test_back_as_time_or_return_is_not_the_back() -> None:
    for clause in (
        "treated for a fissure 2 months back, pain went",
        "the pain came back",
        "the pain is back",
    ):
        assert "back_pain" not in [c.concept for c in compose(clause)], clause
    assert [c.concept for c in compose("his back is sore")] == ["back_pain"]


def test_the_bleeding_said_after_a_site_bleeding_is_that_bleeding_not_a_bleeding_tendency() -> None:
    lex = [*LEX, LexiconEntry(concept="bleeding", label="bleeding")]
    record = {
        "age": 56,
        "gender": "Male",
        "symptoms": ["bright red blood on the paper for 6 weeks", "pain went but the bleeding hasn't"],
    }
    facts = finish(read_record(record, lex))
    assert "rectal_bleeding" in facts.symptoms and "bleeding" not in facts.symptoms
    alone = finish(read_record({"age": 56, "gender": "Male", "symptoms": ["unexplained bleeding"]}, lex))
    assert "bleeding" in alone.symptoms


def test_a_last_proper_period_over_a_year_ago_makes_vaginal_bleeding_post_menopausal() -> None:
    lex = [*LEX, LexiconEntry(concept="post_menopausal_bleeding", label="post-menopausal bleeding")]
    record = {
        "age": 51,
        "gender": "Female",
        "symptoms": ["light vaginal bleeding twice in 3 weeks", "last proper period was 15 months ago"],
    }
    assert "post_menopausal_bleeding" in finish(read_record(record, lex)).symptoms
    record["symptoms"] = ["light vaginal bleeding twice in 3 weeks", "last proper period was 6 months ago"]
    assert "post_menopausal_bleeding" not in finish(read_record(record, lex)).symptoms


def test_again_straight_after_another_finding_in_one_clause_is_that_findings() -> None:
    lex = [
        *LEX,
        LexiconEntry(concept="haematuria", label="haematuria", synonyms=["wee went red"]),
        LexiconEntry(
            concept="urinary_tract_infection", label="urinary tract infection", synonyms=["water infection"]
        ),
    ]
    record = {
        "age": 64,
        "gender": "Female",
        "symptoms": ["wee went red again a week after finishing trimethoprim for a water infection"],
    }
    facts = finish(read_record(record, lex))
    assert "urinary_tract_infection" not in facts.symptoms
    record["symptoms"] = ["water infection again, third since March"]
    assert "urinary_tract_infection" in finish(read_record(record, lex)).symptoms


@pytest.mark.parametrize(
    "clause",
    ["occasionally bleeds when towelling", "bled when he caught it with a comb", "bleeds when she rubs it"],
)
def test_bleeding_when_a_surface_is_rubbed_or_caught_is_local(clause: str) -> None:
    assert [c.concept for c in compose(clause)] == [NO_FINDING]


def test_gums_that_bleed_on_brushing_are_not_taken_as_local() -> None:
    assert compose("gums bleed when brushing") == []


def test_food_that_catches_or_lodges_on_the_way_down_is_dysphagia_and_none_is_absent() -> None:
    lex = [*LEX, LexiconEntry(concept="dysphagia", label="dysphagia")]
    for clause in (
        "chunks of meat feel like they catch halfway down his chest",
        "food lodges low in his chest",
    ):
        facts = finish(read_record({"age": 60, "gender": "Male", "symptoms": [clause]}, lex))
        assert "dysphagia" in facts.symptoms, clause
    facts = finish(read_record({"age": 60, "gender": "Male", "symptoms": ["no food sticking"]}, lex))
    assert "dysphagia" not in facts.symptoms


def test_a_chest_x_ray_report_suggesting_mesothelioma_is_read_and_a_negated_one_is_not() -> None:
    lex = [
        *LEX,
        LexiconEntry(
            concept="chest_xray_suggests_mesothelioma",
            label="chest x-ray findings that suggest mesothelioma",
            kind="finding",
        ),
    ]
    report = "CXR: nodular pleural thickening encasing the R hemithorax; possibility of mesothelioma"
    facts = finish(read_record({"age": 66, "gender": "Male", "symptoms": [], "exam_findings": [report]}, lex))
    assert "chest_xray_suggests_mesothelioma" in facts.findings | set(facts.symptoms)
    for negative in ("CXR: no features to suggest mesothelioma", "CXR: no pleural mass"):
        facts = finish(
            read_record({"age": 66, "gender": "Male", "symptoms": [], "exam_findings": [negative]}, lex)
        )
        assert "chest_xray_suggests_mesothelioma" not in facts.findings | set(facts.symptoms), negative


def test_alternating_runs_or_constipation_is_a_change_in_bowel_habit() -> None:
    assert [c.concept for c in compose("alternating runs")] == ["change_in_bowel_habit"]
    assert compose("constipation for 3 days") == []


def test_a_firm_or_fixed_swelling_of_a_limb_is_a_lump_and_a_swollen_ankle_is_not() -> None:
    assert [c.concept for c in compose("non mobile swelling volar r forearm")] == ["lump"]
    assert compose("swelling of both ankles") == []


def test_a_red_reflex_present_and_a_recent_last_period_are_read_as_not_ng12() -> None:
    reading, _facts = _read(
        gender="Female", symptoms=["red reflex present", "last proper period 9 months ago"]
    )
    assert reading.unread == []


@pytest.mark.parametrize("clause", ["thinks it's twice the size now", "the lump grew over the summer"])
def test_a_lump_said_to_have_grown_is_increasing_in_size(clause: str) -> None:
    from ng12_common.lexicon_match import _modifiers

    assert "increasing_in_size" in _modifiers(clause)
    assert "increasing_in_size" not in _modifiers("the lump is the same size")


def test_a_prostate_felt_separately_smooth_and_benign_is_not_a_malignant_prostate() -> None:
    from ng12_common.lexicon_match import normalise_phrase
    from ng12_common.reading.compose import compose_entry

    entry = "DRE: hard irregular mass on anterior rectal wall; prostate separately felt, smooth and benign"
    assert compose_entry(normalise_phrase(entry, keep_stop_words=True)) == []
    assert compose_entry(normalise_phrase("DRE: prostate hard and irregular", keep_stop_words=True))


@pytest.mark.parametrize(
    "clause", ["benign feeling prostate", "non tender prostate", "prostate separately palpable"]
)
def test_a_prostate_examined_and_found_benign_is_read_as_not_ng12(clause: str) -> None:
    reading, _facts = _read(exam_findings=[clause])
    assert reading.unread == []


@pytest.mark.parametrize("clause", ["more thirsty lately", "rushing to the loo", "keeps dropping her cup"])
def test_a_lay_symptom_without_a_listed_word_is_unread_not_context(clause: str) -> None:
    reading, _facts = _read(symptoms=[clause])
    assert reading.unread == [clause]


def test_a_relative_dx_with_a_cancer_is_family_history() -> None:
    reading, _facts = _read(symptoms=["worried - brother dx prostate ca aged 58, wants a PSA"])
    assert reading.unread == []


def test_a_streaming_cold_and_a_fall_on_an_outstretched_hand_are_diagnoses_that_explain() -> None:
    lex = [*LEX, LexiconEntry(concept="hoarseness", label="hoarseness", synonyms=["hoarse voice"])]
    record = {
        "age": 50,
        "gender": "Male",
        "symptoms": ["hoarse voice for 10 days", "started with a streaming cold"],
    }
    reading = read_record(record, lex)
    facts = finish(reading)
    assert "explained" in facts.symptoms["hoarseness"].modifiers and reading.unread == []
    reading, _facts = _read(symptoms=["landed on outstretched hand yesterday"])
    assert reading.unread == []
