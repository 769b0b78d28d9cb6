"""Reading round 3: examinations stated normal, growth centiles, composed findings (an enlarged
testis, a sore that does not heal, graded weakness), myeloma results and recorded explanations.
Every record here is written for the test, in its own words."""

from __future__ import annotations

from typing import Any

import pytest

from ng12_common.knowledge import LexiconEntry
from ng12_common.reading.labs import read_result
from ng12_common.reading.normal_exam import normal_exam
from ng12_common.reading.record import finish, read_record

LEX = [
    LexiconEntry(concept="breast_lump", label="breast lump"),
    LexiconEntry(concept="lymphadenopathy", label="lymphadenopathy", synonyms=["enlarged lymph nodes"]),
    LexiconEntry(concept="axillary_lump", label="lump in the axilla"),
    LexiconEntry(concept="non_painful_testicular_enlargement", label="non-painful enlargement of the testis"),
    LexiconEntry(concept="penile_ulceration", label="ulcerated lesion"),
    LexiconEntry(
        concept="skin_lesion_suspicious_of_bcc", kind="finding", label="basal cell carcinoma lesion"
    ),
    LexiconEntry(
        concept="newly_abnormal_central_neurological_function",
        label="newly abnormal central neurological function",
    ),
    LexiconEntry(concept="bone_pain", label="bone pain"),
    LexiconEntry(concept="oral_ulceration", label="ulceration in the oral cavity", synonyms=["mouth ulcer"]),
    LexiconEntry(concept="cough", label="cough"),
    LexiconEntry(
        concept="chest_xray_suggests_lung_cancer",
        kind="finding",
        label="chest x-ray findings that suggest lung cancer",
        synonyms=["chest x ray suggest lung cancer"],
    ),
    LexiconEntry(concept="blood_tests_suggest_myeloma", kind="finding", label="blood tests suggest myeloma"),
]


def _read(**fields: Any) -> Any:
    record: dict[str, Any] = {"age": 58, "gender": "Male", "symptoms": [], **fields}
    return read_record(record, LEX)


@pytest.mark.parametrize(
    "clause",
    [
        "armpits clear",
        "both renal angles nt",
        "left knee full rom",
        "abdomen soft",
        "cranial nerves intact",
        "r hip full range of movement",
        "pupils equal and reactive",
    ],
)
def test_an_examined_part_with_a_normal_status_is_normal(clause: str) -> None:
    assert normal_exam(clause) == "examination stated normal"


@pytest.mark.parametrize(
    "clause",
    [
        "axillary nodes palpable",
        "hard irregular mass",
        "knee swollen",
        "liver edge 3 cm",
        "breast tethered clear",
    ],
)
def test_anything_else_beside_the_part_is_not_called_normal(clause: str) -> None:
    assert normal_exam(clause) is None


def test_growth_chart_positions_are_read_as_not_used_by_ng12() -> None:
    assert normal_exam("weight on the 25th centile") == "a growth-chart centile (NG12 uses none)"
    assert normal_exam("height between 9th and 25th centiles") is not None
    assert normal_exam("weight loss") is None


def test_normal_examination_clauses_leave_the_record_complete() -> None:
    reading = _read(exam_findings=["armpits clear, renal angles NT", "R elbow full ROM"])
    assert reading.unread == []
    assert {f.status for f in reading.findings} == {"absent"}


def test_a_lump_beside_a_normal_clause_is_still_read() -> None:
    reading = _read(gender="Female", exam_findings=["firm lump L breast, armpits clear"])
    assert "breast_lump" in reading.facts.symptoms and reading.unread == []


def test_muscle_tenderness_of_the_back_is_read_as_not_used_by_ng12() -> None:
    reading = _read(exam_findings=["paravertebral muscle tenderness"])
    assert reading.unread == [] and reading.findings[0].status == "not_ng12"


@pytest.mark.parametrize(
    ("entry", "concept"),
    [
        ("left testis larger than the right", "non_painful_testicular_enlargement"),
        ("ulcer on the glans that won't heal", "penile_ulceration"),
        ("reduced power down the left side of the body", "newly_abnormal_central_neurological_function"),
    ],
)
def test_a_finding_word_and_a_site_compose_the_finding(entry: str, concept: str) -> None:
    reading = _read(exam_findings=[entry])
    assert concept in reading.facts.symptoms, [f.model_dump() for f in reading.findings]


def test_a_skin_sore_that_has_not_healed_stays_unread_for_review() -> None:
    # NHS A-Z names a non-healing sore for both BCC (NG12 1.7.5) and SCC (1.7.4): the clinician decides
    reading = _read(exam_findings=["crusted spot on the nose that hasn't healed"])
    assert "skin_lesion_suspicious_of_bcc" not in reading.facts.symptoms and reading.unread


def test_a_chest_xray_naming_a_malignancy_suggests_lung_cancer() -> None:
    reading = _read(test_results={"chest X-ray": "mass L lower lobe, suspicious for a bronchial malignancy"})
    assert "chest_xray_suggests_lung_cancer" in reading.facts.symptoms


@pytest.mark.parametrize(
    ("key", "value", "suggests"),
    [
        ("serum protein electrophoresis", "IgA lambda paraprotein 12 g/L", True),
        ("protein electrophoresis", "no paraprotein detected", False),
        ("free light chain ratio", "0.9", False),
        ("kappa:lambda ratio", "0.1", True),
        ("serum FLC kappa/lambda ratio", "9.6", True),
    ],
)
def test_myeloma_results(key: str, value: str, suggests: bool) -> None:
    lab = read_result(key, value, "female", 70)
    assert lab is not None
    assert (lab.finding == "blood_tests_suggest_myeloma") is suggests, lab.rule


def _explained(**fields: Any) -> set[str]:
    reading = _read(**fields)
    finish(reading)
    return {c for c, f in reading.facts.symptoms.items() if "explained" in f.modifiers}


def test_a_recorded_skin_infection_explains_the_regional_node() -> None:
    assert "lymphadenopathy" in _explained(
        symptoms=["tender enlarged lymph nodes in the groin"], history=["cellulitis of the shin 5 days ago"]
    )


def test_a_node_that_persists_after_the_infection_is_not_explained() -> None:
    assert "lymphadenopathy" not in _explained(
        symptoms=["enlarged lymph nodes in the groin still there after antibiotics"],
        history=["cellulitis of the shin 5 days ago"],
    )


def test_a_recorded_drug_cough_is_explained_but_the_drug_alone_is_not() -> None:
    assert "cough" in _explained(symptoms=["dry cough"], history=["impression: ACE inhibitor cough"])
    assert "cough" not in _explained(symptoms=["dry cough"], history=["on ramipril"])


def test_a_traumatic_mouth_ulcer_is_explained_and_sent_for_review() -> None:
    reading = _read(symptoms=["mouth ulcer for 10 days"], history=["denture rubbing on the gum"])
    finish(reading)
    assert "explained" in reading.facts.symptoms["oral_ulceration"].modifiers
    assert reading.explained_review


def test_osgood_schlatter_explains_pain_at_the_tibial_tuberosity() -> None:
    assert "bone_pain" in _explained(
        age=12, symptoms=["bone pain below the knee after sport"], history=["Osgood-Schlatter disease"]
    )


def test_an_explanation_covers_only_the_findings_at_its_own_site() -> None:
    """A diagnosis explains the findings it causes where it is, never any lump."""
    assert "lump" not in _explained(symptoms=["lump on the thigh"], history=["abscess drained last week"])
    assert "lump" not in _explained(
        age=13, symptoms=["lump on the thigh"], history=["Osgood-Schlatter disease"]
    )
    assert "cough" not in _explained(symptoms=["dry cough"], history=["cough on ramipril"])
    assert "hoarseness" not in _explained(symptoms=["hoarse voice"], history=["since starting inhaler"])


def test_an_explained_cancer_feature_always_goes_to_review() -> None:
    for symptoms, history, concept in [
        (["lump in the armpit"], ["axillary abscess 1 week ago"], "axillary_lump"),
        (["bone pain below the knee after sport"], ["Osgood-Schlatter disease"], "bone_pain"),
        (["dry cough"], ["impression: ACE inhibitor cough"], "cough"),
    ]:
        reading = _read(age=13 if concept == "bone_pain" else 60, symptoms=symptoms, history=history)
        finish(reading)
        assert "explained" in reading.facts.symptoms[concept].modifiers, concept
        assert any(e.startswith(concept.replace("_", " ")) for e in reading.explained_review), concept


def test_examined_parts_joined_before_one_normal_status_share_it() -> None:
    """ "breasts and axillae NAD": the breasts are as normal as the axillae; a finding between them
    ("weakness L arm") keeps the earlier part unread, so nothing that might be a finding is read away."""

    def unread(exam: str) -> list[str]:
        return read_record(
            {"age": 40, "gender": "Female", "symptoms": [], "exam_findings": [exam]}, []
        ).unread

    assert unread("breasts and axillae NAD") == []
    assert unread("heart, lungs clear") == []
    assert unread("breasts, weakness L arm, axillae NAD") == ["breasts", "weakness l arm"]
