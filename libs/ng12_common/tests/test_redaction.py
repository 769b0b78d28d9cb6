"""Personal data is redacted with presidio's maintained recognisers, offline, and clinical text is kept."""

from __future__ import annotations

import pytest

from ng12_common.redaction import shared_redactor


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NHS number 943 476 5919, haemoptysis", "NHS number <UK_NHS>, haemoptysis"),
        ("nhs no 9434765919", "nhs no <UK_NHS>"),
        ("lives at SW1A 1AA", "lives at <UK_POSTCODE>"),
        ("call 020 7946 0958 after 5", "call <PHONE_NUMBER> after 5"),
        ("mobile 07911 123456", "mobile <PHONE_NUMBER>"),
        ("email jane.smith@example.org", "email <EMAIL_ADDRESS>"),
        ("Mrs Jane Smith has a cough", "<PERSON> has a cough"),
        ("Dr Patel referred him", "<PERSON> referred him"),
        ("patient name: John Brown, 63", "<PERSON>, 63"),
        ("seen patient Jane Smith today", "seen <PERSON> today"),
    ],
)
def test_personal_data_is_replaced_by_its_type(text: str, expected: str) -> None:
    assert shared_redactor().redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "What does NG12 say about haemoptysis in a 55 year old?",
        "Hb 118 g/L, platelets 450 x10^9/L, PSA 3.8 ng/ml, CA125 36 IU/ml, FIT 12 ug/g",
        "lost 8 kg in 3 months, 2WW for dysphagia, 1.1.1 and 1.6.4",
        "NHS 9434765918 fails the modulus-11 check",  # not an NHS number: kept
        "Smith's fracture; Paget's disease of the nipple",
        "what should I tell a patient I'm referring?",  # one word after "patient" is not a name
        "patient Hb 98 and Patient Aged 58 with PMB",
        "PSA table: aged 50-59/60 and over",  # not a day/month/year
    ],
)
def test_clinical_text_is_left_alone(text: str) -> None:
    assert shared_redactor().redact(text) == text
