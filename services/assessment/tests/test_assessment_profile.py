"""Normalising a GP's free text into retrieval's patient profile."""

from __future__ import annotations

import pytest

from assessment.profile import normalise_sex, normalise_smoking, search_profile, symptom_query
from ng12_common.models import PatientRecord


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Current Smoker", "current"),
        ("smoker", "current"),
        ("Ex-Smoker", "ex"),
        ("former smoker", "ex"),
        ("quit smoking 2019", "ex"),
        ("no longer smokes", "ex"),
        ("Never Smoked", "never"),
        ("non-smoker", "never"),
        ("", ""),
        ("unknown", ""),
    ],
)
def test_smoking(text: str, expected: str) -> None:
    assert normalise_smoking(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"), [("Male", "male"), ("F", "female"), ("female", "female"), ("x", "")]
)
def test_sex(text: str, expected: str) -> None:
    assert normalise_sex(text) == expected


def test_profile_and_query() -> None:
    record = PatientRecord(
        age=55,
        gender="Male",
        smoking_history="Current Smoker",
        symptoms=["unexplained hemoptysis", " fatigue "],
    )
    assert search_profile(record) == {
        "age": 55,
        "sex": "male",
        "smoking": "current",
        "symptoms": ["unexplained hemoptysis", "fatigue"],
    }
    assert symptom_query(record) == "unexplained hemoptysis, fatigue"


def test_query_includes_test_results_reported_in_words() -> None:
    record = PatientRecord(
        age=45,
        gender="Female",
        symptoms=["changing pigmented lesion"],
        test_results={"dermoscopy": "suggests melanoma", "psa_ug_per_l": 5.2},
    )
    assert symptom_query(record) == "changing pigmented lesion, dermoscopy suggests melanoma"
