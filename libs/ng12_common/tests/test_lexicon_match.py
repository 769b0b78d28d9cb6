"""Unit tests of the free-text phrase matcher and record -> facts conversion (small inline lexicon)."""

from __future__ import annotations

import pytest

from ng12_common.criteria import EvalContext, evaluate
from ng12_common.knowledge import LexiconEntry
from ng12_common.lexicon_match import match_concepts, parse_sex, parse_smoking
from ng12_common.reading.record import facts_from_record

LEX = [
    LexiconEntry(concept="haemoptysis", label="haemoptysis", synonyms=["hemoptysis", "coughing up blood"]),
    LexiconEntry(concept="weight_loss", label="weight loss", synonyms=["losing weight"]),
    LexiconEntry(concept="fatigue", label="fatigue", synonyms=["tiredness"]),
    LexiconEntry(concept="anaemia", label="anaemia", synonyms=["anemia"]),
    LexiconEntry(concept="early_satiety", label="early satiety", synonyms=["feeling full quickly"]),
    LexiconEntry(concept="pigmented_skin_lesion", label="pigmented skin lesion", synonyms=["mole"]),
    LexiconEntry(concept="haematuria", label="haematuria", synonyms=["blood in urine", "visible haematuria"]),
    LexiconEntry(concept="nipple_retraction", label="nipple retraction", synonyms=["retraction of nipple"]),
    LexiconEntry(
        concept="non_painful_testicular_enlargement",
        label="non-painful enlargement of the testis",
        synonyms=["painless swelling of the testis"],
    ),
    LexiconEntry(concept="lump", label="lump"),
    LexiconEntry(concept="oral_ulceration", label="mouth ulcer"),
    LexiconEntry(concept="urinary_tract_infection", label="urinary tract infection", synonyms=["uti"]),
    LexiconEntry(
        concept="hepatosplenomegaly", label="hepatosplenomegaly", synonyms=["enlarged liver and spleen"]
    ),
    LexiconEntry(concept="asbestos_exposure", kind="history", label="asbestos exposure"),
    LexiconEntry(concept="fit", kind="test", label="FIT", synonyms=["faecal immunochemical test"]),
    LexiconEntry(
        concept="dermoscopy_suggests_melanoma", kind="finding", label="dermoscopy suggests melanoma"
    ),
]


def one(phrase: str) -> tuple[str, bool, list[str], dict[str, float]]:
    ms = match_concepts(phrase, LEX)
    assert len(ms) == 1, ms
    m = ms[0]
    return m.concept, m.negated, m.modifiers, m.qualifiers


def test_spelling_and_modifier() -> None:
    assert one("unexplained hemoptysis") == ("haemoptysis", False, ["unexplained"], {})
    assert one("Coughing up blood") == ("haemoptysis", False, [], {})


def test_size_qualifier_in_trailing_segment() -> None:
    assert one("pigmented skin lesion, largest diameter 8 mm") == (
        "pigmented_skin_lesion",
        False,
        [],
        {"size_mm": 8},
    )
    assert one("mole 0.9 cm across")[3] == {"size_mm": 9}


def test_parenthetical_and_lay_term() -> None:
    assert one("feeling full quickly (early satiety)")[0] == "early_satiety"


@pytest.mark.parametrize(
    "phrase", ["no weight loss", "denies weight loss", "weight loss: none", "without weight loss"]
)
def test_negation(phrase: str) -> None:
    assert one(phrase)[:2] == ("weight_loss", True)


def test_explained_applies_to_concept_before_the_cue() -> None:
    ms = {m.concept: m for m in match_concepts("tiredness due to anaemia", LEX)}
    assert "explained" in ms["fatigue"].modifiers
    assert "explained" not in ms["anaemia"].modifiers


def test_modifiers() -> None:
    assert one("lump that is increasing in size")[2] == ["change_in_size", "increasing_in_size"]
    assert one("visible haematuria")[2] == ["visible"]
    # blood the patient reports in the urine is visible haematuria (NICE CKS Haematuria); a dipstick
    # finding is not
    assert one("blood in urine")[2] == ["visible"]
    assert one("blood in urine on dipstick")[2] == ["non_visible"]
    assert one("non-visible haematuria")[2] == ["non_visible"]
    assert one("persistent and recurrent UTI")[2] == ["persistent", "recurrent"]
    assert one("retraction of one nipple")[2] == ["unilateral"]


def test_stop_words_and_laterality_inside_terms() -> None:
    assert one("painless swelling of the left testis")[0] == "non_painful_testicular_enlargement"


def test_term_containing_and_is_not_split() -> None:
    assert one("enlarged liver and spleen")[0] == "hepatosplenomegaly"


def test_duration_qualifier() -> None:
    assert one("mouth ulcer for more than 3 weeks")[3] == {"duration_days": 22}
    assert one("mouth ulcer for 2 weeks")[3] == {"duration_days": 14}


def test_test_value() -> None:
    ms = match_concepts("FIT 12 micrograms/g", LEX)
    assert ms[0].concept == "fit" and ms[0].value == 12


def test_unmatched_phrase() -> None:
    assert match_concepts("sore throat", LEX) == []


def test_parse_sex_and_smoking() -> None:
    assert parse_sex("Female") == "female" and parse_sex("M") == "male" and parse_sex("") is None
    assert parse_smoking("Never Smoked") == "never"
    assert parse_smoking("Ex-Smoker") == "ex"
    assert parse_smoking("Current Smoker") == "current"
    assert parse_smoking(None) is None


def test_facts_from_record() -> None:
    record = {
        "age": 55,
        "gender": "Male",
        "smoking_history": "Ex-Smoker",
        "symptoms": ["unexplained hemoptysis", "no weight loss", "sore throat"],
        "symptom_duration_days": 14,
        "history": ["asbestos exposure"],
        "exam_findings": [],
        "test_results": {"fit": 12, "dermoscopy": "suggests melanoma", "mystery": "odd"},
    }
    facts, unrecognised = facts_from_record(record, LEX)
    assert facts.age == 55 and facts.sex == "male" and facts.smoking == "ex"
    assert set(facts.symptoms) >= {"haemoptysis", "dermoscopy_suggests_melanoma"}
    assert facts.negated == {"weight_loss"}
    assert facts.history == {"asbestos_exposure"}
    assert facts.tests == {"fit": 12}
    assert facts.duration_days == 14
    # a sore throat is read (a common finding NG12 does not use); an unknown test is not
    assert unrecognised == ["mystery: odd"]
    node = {"op": "all", "of": [{"op": "age_gte", "value": 40}, {"op": "symptom", "concept": "haemoptysis"}]}
    assert evaluate(node, facts, EvalContext()).met


def test_comma_inside_a_term_does_not_break_it() -> None:
    lex = [
        LexiconEntry(
            concept="progressive_loss_of_central_neurological_function",
            kind="symptom",
            label="progressive, sub-acute loss of central neurological function",
        )
    ]
    found = match_concepts("progressive, sub-acute loss of central neurological function", lex)
    assert [m.concept for m in found] == ["progressive_loss_of_central_neurological_function"]


def test_result_in_words_with_suggests() -> None:
    lex = [
        LexiconEntry(
            concept="blood_tests_suggest_myeloma",
            kind="finding",
            label="results of the blood tests suggest myeloma",
            synonyms=["results suggest myeloma"],
        )
    ]
    facts, unrecognised = facts_from_record(
        {
            "age": 65,
            "gender": "Male",
            "symptoms": [],
            "test_results": {"serum_protein_electrophoresis": "suggests myeloma"},
        },
        lex,
    )
    assert "blood_tests_suggest_myeloma" in facts.findings and unrecognised == []


def test_a_queried_diagnosis_is_found_as_a_whole_word() -> None:
    from ng12_common.reading.explanations import _queried

    assert _queried("?UTI on dipstick", "uti")
    assert not _queried("routine bloods; UTI treated", "uti")  # 'uti' inside 'routine' is not it
    assert _queried("routine bloods, ?UTI", "uti")


def test_pronouns_and_possessives_do_not_change_what_a_phrase_names() -> None:
    """One lay term covers every person: pronouns are stop words and verbs match by stems, so no
    "he/she/I" variant of a term is listed."""
    lex = [
        LexiconEntry(concept="haemoptysis", label="haemoptysis", synonyms=["blood when coughing"]),
        LexiconEntry(concept="cough", label="cough"),
        LexiconEntry(concept="haematuria", label="haematuria", synonyms=["blood in pee"]),
    ]
    for text in [
        "blood when I cough",
        "blood when he coughs",
        "blood when they cough",
        "blood when you cough",
    ]:
        assert [m.concept for m in match_concepts(text, lex)] == ["haemoptysis"], text
    for text in ["blood in your pee", "blood in her pee", "blood in my pee"]:
        assert [m.concept for m in match_concepts(text, lex)] == ["haematuria"], text
    # the exact word inside a longer reading gives way to it; on its own it is still read
    assert [m.concept for m in match_concepts("dry cough", lex)] == ["cough"]


def test_a_negation_of_another_verb_does_not_negate_the_finding() -> None:
    """ "not" negates the verb it stands before: when the finding is the subject of its own clause
    ("the lump has gone"), the negated verb is the one governing that clause."""
    for text in [
        "does not think the lump has gone",
        "not sure the lump is smaller",
        "doesn't feel the lump has changed",
    ]:
        (m,) = match_concepts(text, LEX)
        assert m.concept == "lump" and m.context is None, (text, m.context)
    # only a verb of belief, knowledge or perception governs a clause: any other verb's negation
    # negates the finding, even when a predicate of the patient follows it
    for text in [
        "not feeling any lump",
        "does not have a lump",
        "lump not felt",
        "does not have a lump is otherwise well",
        "has not had a lump has been well",
        "never had a lump was seen last year",
    ]:
        (m,) = match_concepts(text, LEX)
        assert m.context == "negated", text
    (m,) = match_concepts("the lump has gone", LEX)
    assert m.context == "resolved"


def test_positive_and_negative_shorthand() -> None:
    from ng12_common.lexicon_match import normalise_phrase

    assert normalise_phrase("Tinel's +ve", keep_stop_words=True) == "tinel positive"
    assert normalise_phrase("nitrites -ve, leucocytes +ve", keep_stop_words=True) == (
        "nitrites negative , leucocytes positive"
    )


def _statuses(phrase: str) -> dict[str, str | None]:
    from ng12_common.lexicon_match import read_phrase

    return {m.concept: m.context for m in read_phrase(phrase, LEX).matches}


def test_a_negation_runs_through_a_list() -> None:
    """ConText's scope runs to the end of the sentence: every bare item of a negated list is absent,
    while "but" or an item with words of its own ("for 2 weeks") ends the list."""
    assert _statuses("denies weight loss, haemoptysis, tiredness") == {
        "weight_loss": "negated",
        "haemoptysis": "negated",
        "fatigue": "negated",
    }
    assert _statuses("no anaemia and haemoptysis or lump") == {
        "anaemia": "negated",
        "haemoptysis": "negated",
        "lump": "negated",
    }
    assert _statuses("no weight loss, haemoptysis for 2 weeks")["haemoptysis"] is None
    assert _statuses("no weight loss but haemoptysis")["haemoptysis"] is None
    assert _statuses("no weight loss, has had haemoptysis")["haemoptysis"] is None


def test_never_negates_what_follows_it() -> None:
    assert _statuses("never had asbestos exposure")["asbestos_exposure"] == "negated"
    assert _statuses("never any asbestos exposure")["asbestos_exposure"] == "negated"
