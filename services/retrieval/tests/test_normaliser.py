"""Query normalisation: GP shorthand written out in NG12's words, lexicon wording appended."""

from __future__ import annotations

from retrieval.search import QueryNormaliser, expand_shorthand


def test_gp_shorthand_is_written_out() -> None:
    assert expand_shorthand("what info do pts get on a 2ww?") == (
        "what information do patients get on a suspected cancer pathway referral?"
    )
    assert expand_shorthand("cxr for a 60 yo w/ cough") == "chest x-ray for a 60 year old with cough"
    assert expand_shorthand("pts who dna their appts") == "patients who miss their appointments"


def test_shorthand_leaves_words_and_test_names_alone() -> None:
    assert expand_shorthand("ca 125 of 40") == "ca 125 of 40"  # a test, not "cancer"
    assert expand_shorthand("re-evaluate the patient") == "re-evaluate the patient"
    assert expand_shorthand("?lung ca") == "?lung cancer"
    assert expand_shorthand("ptosis and appetite") == "ptosis and appetite"


def test_normaliser_expands_shorthand_and_appends_lexicon_wording() -> None:
    norm = QueryNormaliser([{"label": "rectal bleeding", "synonyms": ["pr bleed"]}])
    assert norm("PR bleed in a 55 yo pt") == "pr bleed in a 55 year old patient rectal bleeding"
