"""Normalise a patient record into the profile retrieval understands (sex, smoking, symptoms).

Free text as a GP types it ("Current Smoker", "Ex-Smoker", "Never Smoked") becomes the
contract's vocabulary: smoking never | ex | current | "" (unknown), sex male | female | "".
"""

from __future__ import annotations

import re
from typing import Any

from ng12_common.models import PatientRecord

_NEVER = re.compile(r"\bnever\b|\bnon[- ]?smok")
_EX = re.compile(r"\b(ex|former|quit|stopped|previous|no longer)\b")
_CURRENT = re.compile(r"\b(current|smoker|smokes|smoking)\b")


def normalise_smoking(text: str) -> str:
    value = text.strip().lower()
    if not value:
        return ""
    if _NEVER.search(value):
        return "never"
    if _EX.search(value):
        return "ex"
    if _CURRENT.search(value):
        return "current"
    return ""


def normalise_sex(text: str) -> str:
    value = text.strip().lower()
    if value in {"m", "male", "man"}:
        return "male"
    if value in {"f", "female", "woman"}:
        return "female"
    return ""


def search_profile(record: PatientRecord) -> dict[str, Any]:
    """The `patient` argument of RetrievalClient.search for this record."""
    return {
        "age": record.age,
        "sex": normalise_sex(record.gender),
        "smoking": normalise_smoking(record.smoking_history),
        "symptoms": [s.strip() for s in record.symptoms if s.strip()],
    }


def symptom_query(record: PatientRecord) -> str:
    """The retrieval query for an assessment: the presenting conditions, then the findings
    (examination findings and test results reported in words, e.g. "dermoscopy suggests
    melanoma"), joined."""
    reported = [f"{k.replace('_', ' ')} {v}" for k, v in record.test_results.items() if isinstance(v, str)]
    return ", ".join(s.strip() for s in [*record.symptoms, *record.exam_findings, *reported] if s.strip())
