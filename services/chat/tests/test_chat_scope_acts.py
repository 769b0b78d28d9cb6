"""What a message does decides its scope: a document request that carries a patient, a screening
programme or another guideline asked about in clinical words, a term's reach asked about."""

from __future__ import annotations

import pytest

from chat.definitions import asked_term
from chat.guardrails import described_patient, leaves_question, mixed_request, rule_scope


@pytest.mark.parametrize(
    "message",
    [
        "could you type up a referral letter for my 71 year old man with haematuria? mark it urgent please",
        "Write a sick note for my patient with a breast lump who is waiting for clinic. Two weeks off.",
        "draft an e-mail to the gastro consultant about my 59yo lady with dysphagia. Keep it brief.",
        "make me a leaflet for a patient having a colonoscopy, what to expect and how to prepare",
        "compose a text to my patient saying the X-ray was fine - list what to watch for. Friendly tone.",
    ],
)
def test_a_document_request_is_declined_whatever_patient_it_carries(message: str) -> None:
    assert rule_scope(message) == "task_request"
    assert mixed_request(message) is None


def test_a_real_question_beside_a_document_request_is_still_answered() -> None:
    found = mixed_request(
        "man of 62 with haemoptysis - which referral does NG12 advise? and type up the letter"
    )
    assert found is not None and found[1][0][1] == "task_request"
    # a one-word question leaning on the patient described asks something; one leaning on the declined
    # request does not
    assert mixed_request("70F with a breast lump. 2ww? then fill in the form for me") is not None
    assert leaves_question("USPSTF rules for screening, what ages?", ["what ages"]) is False


def test_the_patient_a_document_request_describes_is_searched_without_the_request() -> None:
    about = described_patient("please draft the urgent gynae referral letter for my 66yo with PMB? thanks")
    assert "letter" not in about and "PMB" in about
    assert described_patient("write me a letter") == "write me a letter"


@pytest.mark.parametrize(
    "message",
    [
        "how frequently does a 50 year old woman need a smear test?",
        "what are the eligibility criteria for the NHS lung health check?",
        "Healthy 60yo man with no urinary symptoms whatsoever wants a PSA 'for peace of mind'. Do I screen?",
        "What does NICE's menopause guideline say about HRT and breast cancer risk?",
        "According to NICE's head injury guideline, when should a child get a CT?",
        "NCCN criteria for colonoscopy after polypectomy?",
    ],
)
def test_screening_the_well_and_other_guidelines_are_other_guidelines(message: str) -> None:
    assert rule_scope(message) == "other_guideline"
    assert mixed_request(message) is None


@pytest.mark.parametrize(
    "message",
    [
        "bowel screening FIT came back positive in a 64 year old, refer?",
        "her smear test was abnormal and she now has post-coital bleeding - what does NG12 say?",
        "Does NG12 say anything about the 7-point checklist?",
    ],
)
def test_a_screening_result_or_ng12s_own_text_stays_in_scope(message: str) -> None:
    assert rule_scope(message) is None


def test_how_far_a_quoted_term_reaches_is_a_definition_question() -> None:
    assert asked_term("is there a fixed period for 'unexplained' symptoms?") == "Unexplained"
    assert asked_term("how many days is 'very urgent'?") == "Very urgent"
    # an unquoted term in a timing question about a patient is not asked for its definition
    assert asked_term("how many weeks of cough before an urgent chest X-ray?") is None


def test_a_statement_beside_a_declined_request_is_context_not_a_question() -> None:
    # a finding or a plan for the patient names tests and symptoms, but asks nothing: the message
    # is the declined request
    assert mixed_request("Chest X-ray suggests lung cancer in my 80 yo. How long has she got left?") is None
    assert (
        leaves_question(
            "Is the one-stop clinic open on Sundays? I want to send a 66 yo with weight loss and symptoms.",
            ["I want to send a 66 yo with weight loss and symptoms"],
        )
        is False
    )
    assert leaves_question(
        "pathway criteria for myeloma; and the bleep number", ["pathway criteria for myeloma"]
    )


def test_treatment_abbreviations_are_treatment_requests() -> None:
    """ "tx" and "rx" are the usual abbreviations of treatment: first-line tx and tx options are
    treatment questions; a first-line TEST is not (NG12 names tests)."""
    from chat.guardrails import rule_scope

    assert rule_scope("whats first line tx for this these days?") == "treatment"
    assert rule_scope("rx options for early breast ca?") == "treatment"
    assert rule_scope("first line management of prostate ca") == "treatment"
    assert rule_scope("is a urine test first line for suspected myeloma?") is None


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("what chemo will he get and what are his chances?", "treatment"),
        ("if it is cancer would she usually get active surveillance or a mastectomy?", "treatment"),
        ("haem have diagnosed AML. what induction regimen will she have?", "treatment"),
        ("what's the direct line for the urology 2WW team at the hospital?", "logistics"),
        ("where do I find the suspected cancer referral form for our area?", "logistics"),
        ("she's also asking when her next smear is due", "other_guideline"),
    ],
)
def test_treatment_prognosis_contacts_forms_and_smear_recall_are_named_without_doubt(
    message: str, kind: str
) -> None:
    assert rule_scope(message) == kind


def test_the_chance_that_a_symptom_is_cancer_is_not_prognosis() -> None:
    assert rule_scope("what are the chances it's cancer with a breast lump at 35?") is None


def test_a_statement_left_beside_a_declined_question_is_not_answered_as_a_question() -> None:
    message = (
        "the FBC came back abnormal and haem diagnosed ALL. what chemo will he get and what are his chances?"
    )
    assert mixed_request(message) is None
    assert rule_scope(message) == "treatment"
