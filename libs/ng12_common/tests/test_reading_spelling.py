"""Typing slips corrected towards clinical words, and the words that must stay as written."""

from __future__ import annotations

import pytest

from ng12_common.knowledge import LexiconEntry
from ng12_common.lexicon_match import read_phrase
from ng12_common.reading.spelling import Speller

VOCAB = frozenset(
    "breathless haemoptysis haematuria dysphagia postmenopausal bleeding bowels hoarseness bruising "
    "pyrexial swelling hemiplegia weight".split()
)


@pytest.mark.parametrize(
    ("slip", "word"),
    [
        ("breathles", "breathless"),  # a doubled letter typed once
        ("haemoptisis", "haemoptysis"),  # a letter changed
        ("dyspahgia", "dysphagia"),  # two letters swapped
        ("postmenapausal", "postmenopausal"),
        ("bowles", "bowels"),
        ("hoarsness", "hoarseness"),  # a letter dropped
    ],
)
def test_a_slip_inside_a_word_is_corrected(slip: str, word: str) -> None:
    assert Speller(VOCAB).correct_word(slip) == word


@pytest.mark.parametrize(
    "word",
    [
        "apyrexial",  # a first letter changes the meaning: never "pyrexial"
        "hemiplegic",  # a last letter is another word: never "hemiplegia"
        "smelling",  # an English word is never corrected ("swelling")
        "weigh",  # too short
        "amlodipine",  # near no clinical word
    ],
)
def test_words_that_stay_as_written(word: str) -> None:
    assert Speller(VOCAB).correct_word(word) is None


def test_a_word_one_slip_from_two_clinical_words_stays_as_written() -> None:
    assert Speller(frozenset({"abcdefgh", "abcxefgh"})).correct_word("abcyefgh") is None


def test_a_corrected_slip_is_read_and_shows_the_word_read() -> None:
    lex = [LexiconEntry(concept="shortness_of_breath", label="shortness of breath", synonyms=["breathless"])]
    (m,) = read_phrase("bit breathles walking up hill", lex).matches
    assert m.concept == "shortness_of_breath" and m.matched_text == "breathless"
