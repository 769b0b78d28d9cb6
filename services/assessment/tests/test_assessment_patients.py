"""The JSON patient store, on the real data/patients.json and on broken files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assessment.patients import JsonPatientStore, PatientStore, PatientStoreError

REPO = Path(__file__).resolve().parents[3]


def test_reference_patients_load() -> None:
    store: PatientStore = JsonPatientStore(REPO / "data" / "patients.json")
    patients = store.list()
    assert [p.patient_id for p in patients] == [f"PT-{n}" for n in range(101, 111)]
    john = store.get("PT-101")
    assert john is not None
    assert (john.name, john.age, john.gender, john.smoking_history) == (
        "John Doe",
        55,
        "Male",
        "Current Smoker",
    )
    assert john.symptoms == ["unexplained hemoptysis", "fatigue"] and john.symptom_duration_days == 14
    bruce = store.get("PT-110")
    assert bruce is not None and bruce.symptoms == ["visible haematuria"] and bruce.symptom_duration_days == 2


def test_unknown_patient_is_none() -> None:
    assert JsonPatientStore(REPO / "data" / "patients.json").get("PT-999") is None


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(PatientStoreError, match=r"nope\.json"):
        JsonPatientStore(missing)


def test_invalid_patient_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "patients.json"
    path.write_text(json.dumps([{"patient_id": "PT-1", "age": 300, "gender": "Male", "symptoms": []}]))
    with pytest.raises(PatientStoreError, match=r"0\.age"):
        JsonPatientStore(path)


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    row = {"patient_id": "PT-1", "age": 30, "gender": "Male", "symptoms": ["cough"]}
    path = tmp_path / "patients.json"
    path.write_text(json.dumps([row, row]))
    with pytest.raises(PatientStoreError, match="repeats patient_id 'PT-1'"):
        JsonPatientStore(path)
