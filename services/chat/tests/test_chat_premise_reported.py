"""A claim reported from someone else ("trainer says ...", "pt read online that ...") is a claim to
check, however tersely the reporter is written; a parent's or patient's account of symptoms is not."""

from __future__ import annotations

import pytest

from chat.premise import asserts_guideline


@pytest.mark.parametrize(
    "message",
    [
        "trainer says breast 2ww is only for women so send routine?",
        "colleague says dysphagia only gets a 2ww over 55",
        "one of our partners reckons FIT has to be over 20",
        "practice manager says we have a week to send referrals",
        "the nurse practitioner believes CA125 comes before any scan",
        "pt read online that any blood in the urine needs a scan",
        "heard that PSA over 4 is always a referral",
        "reg says NG12 needs a USS before I can refer",
    ],
)
def test_a_reported_claim_is_a_claim(message: str) -> None:
    assert asserts_guideline(message)


@pytest.mark.parametrize(
    "message",
    [
        "mum says the lump is bigger, what does NG12 say?",
        "wife says he has been coughing for 6 weeks, 52M smoker - what now?",
        "what does NG12 say about haemoptysis in a 45 yo smoker?",
    ],
)
def test_a_relatives_account_or_a_plain_question_is_not_a_claim(message: str) -> None:
    assert not asserts_guideline(message)
