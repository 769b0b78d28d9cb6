"""The symptom lexicon built from the real PDF: coverage, computed rec ids, synonyms, safe mappings."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from ng12_common.knowledge import LexiconEntry, Recommendation
from ng12_common.lexicon_match import match_concepts

sys.path.insert(0, str(Path(__file__).parent))
from criteria_fixtures import *  # noqa: F403 (session fixtures)

from ingestion.kb.lexicon import build_lexicon, load_lexicon_sources, synonyms_for_text


def by_concept(lex: list[LexiconEntry]) -> dict[str, LexiconEntry]:
    return {e.concept: e for e in lex}


def test_every_source_concept_built(kb_lexicon: list[LexiconEntry]) -> None:
    assert [e.concept for e in kb_lexicon] == [s.concept for s in load_lexicon_sources()]


@pytest.mark.parametrize(
    ("concept", "must_include"),
    [
        ("haemoptysis", {"1.1.1"}),
        ("fatigue", {"1.1.2", "1.1.5", "1.5.3", "1.10.1", "1.10.3"}),
        ("dysphagia", {"1.2.1", "1.2.7"}),
        ("iron_deficiency_anaemia", {"1.3.1"}),
        ("fit", {"1.3.1", "1.3.2", "1.3.3"}),
        ("ca125", {"1.5.6", "1.5.7", "1.5.9"}),
        ("psa", {"1.6.3"}),
        ("post_menopausal_bleeding", {"1.5.10", "1.5.11"}),
        ("haematuria", {"1.5.12", "1.6.2", "1.6.4", "1.6.6", "1.12.3"}),
        ("weight_loss", {"1.1.2", "1.2.1", "1.3.1", "1.13.2"}),
    ],
)
def test_recommendation_ids_computed(
    kb_lexicon: list[LexiconEntry], concept: str, must_include: set[str]
) -> None:
    ids = set(by_concept(kb_lexicon)[concept].recommendation_ids)
    assert must_include <= ids


def test_ids_come_from_the_text_not_the_yaml(fresh_recs: list[Recommendation]) -> None:
    bare = fresh_recs  # no criteria attached
    lex = by_concept(build_lexicon(bare))
    assert "1.1.1" in lex["haemoptysis"].recommendation_ids  # text only
    assert build_lexicon([])[0].recommendation_ids == []


@pytest.mark.parametrize(
    ("phrase", "concept"),
    [
        ("hemoptysis", "haemoptysis"),
        ("coughing up blood", "haemoptysis"),
        ("difficulty swallowing", "dysphagia"),
        ("IDA", "iron_deficiency_anaemia"),
        ("PMB", "post_menopausal_bleeding"),
        ("FIT", "fit"),
        ("CA-125", "ca125"),
        ("PSA", "psa"),
        ("LUTS", "lower_urinary_tract_symptoms"),
        ("DRE suggests prostate cancer", "prostate_feels_malignant_on_dre"),
        ("tiredness", "fatigue"),
        ("tired all the time", "fatigue"),
        ("diarrhea", "diarrhoea"),
        ("anemia", "anaemia"),
        ("bloating", "abdominal_distension"),
        ("feeling full quickly (early satiety)", "early_satiety"),
        ("hoarse voice", "hoarseness"),
        ("night sweats", "night_sweats"),
    ],
)
def test_synonyms_map_to_guideline_concepts(
    kb_lexicon: list[LexiconEntry], phrase: str, concept: str | None
) -> None:
    found = [m.concept for m in match_concepts(phrase, kb_lexicon)]
    assert found == ([concept] if concept else [])


def test_lay_terms_are_not_over_mapped(kb_lexicon: list[LexiconEntry]) -> None:
    # blood the patient reports in the urine is visible haematuria (NICE CKS Haematuria)
    (m,) = match_concepts("blood in urine", kb_lexicon)
    assert m.concept == "haematuria" and "visible" in m.modifiers
    (m,) = match_concepts("blood in urine on dipstick", kb_lexicon)
    assert m.concept == "haematuria" and "visible" not in m.modifiers
    (m,) = match_concepts("blood seen in urine", kb_lexicon)
    assert "visible" in m.modifiers
    assert [x.concept for x in match_concepts("enlarged liver", kb_lexicon)] == ["hepatomegaly"]
    assert [x.concept for x in match_concepts("normal neurological examination", kb_lexicon)] == []
    # pale poo is a sign of jaundice (NHS A-Z), not pallor: it is rewritten to "acholic stools", a
    # finding NG12 does not use (reading/data/rewrites.yaml, other_findings.yaml), so the lexicon
    # matches nothing - above all not pallor
    for text in ("pale stools", "pale poo", "stools are pale"):
        assert [x.concept for x in match_concepts(text, kb_lexicon)] == []
    assert [x.concept for x in match_concepts("normal temperature", kb_lexicon)] == []


def test_free_text_phrases(kb_lexicon: list[LexiconEntry]) -> None:
    (m,) = match_concepts("unexplained hemoptysis", kb_lexicon)
    assert (m.concept, m.modifiers) == ("haemoptysis", ["unexplained"])
    (m,) = match_concepts("pigmented skin lesion, largest diameter 8 mm", kb_lexicon)
    assert (m.concept, m.qualifiers) == ("pigmented_skin_lesion", {"size_mm": 8})
    (m,) = match_concepts("no weight loss", kb_lexicon)
    assert (m.concept, m.negated) == ("weight_loss", True)
    (m,) = match_concepts("retraction of one nipple", kb_lexicon)
    assert (m.concept, m.modifiers) == ("nipple_retraction", ["unilateral"])
    (m,) = match_concepts("painless swelling of the left testis", kb_lexicon)
    assert m.concept == "non_painful_testicular_enlargement"


def test_synonyms_for_text(kb_lexicon: list[LexiconEntry]) -> None:
    syn = synonyms_for_text("patient with haemoptysis and dysphagia", kb_lexicon)
    assert "hemoptysis" in syn and "coughing up blood" in syn and "difficulty swallowing" in syn
    assert synonyms_for_text("nothing relevant here", kb_lexicon) == []


def test_word_by_word_matching_equals_one_alternation_over_every_term(
    kb_lexicon: list[LexiconEntry], ng12_recs: list[Recommendation], ng12_source: tuple[Any, Any]
) -> None:
    """The matcher tries, at each word, only the terms starting with that word. It must find
    exactly what one leftmost-first alternation over every term (longest first) finds, on the
    guideline's own text (every recommendation and Part B row) and on questions a GP types."""
    from ng12_common.lexicon_match import _compile_terms, _Index, normalise_phrase

    index = _Index(kb_lexicon)
    reference = _compile_terms(tuple(sorted(index.terms, key=lambda t: (-len(t), t))))
    texts = [r.text for r in ng12_recs]
    texts += [f"{row.symptom} {row.features} {row.recommendation_text}" for row in ng12_source[1]]
    texts += [
        "58 year old woman, recent irritable bowel type symptoms: what should I test?",
        "and at 52 with heartburn and unexplained weight loss?",
        "7.5 mm pigmented lesion, itching, and a change in shape over 3 weeks; no bleeding",
        "coughing up blood, chest pain, SOB and weight loss in an ex-smoker",
    ]
    compared = 0
    for raw in texts:
        text = normalise_phrase(raw, keep_stop_words=True)
        expected = [(m.start(), m.end(), m.group()) for m in reference.finditer(text)]
        assert [(m.start(), m.end(), m.group()) for m in index.finditer(text)] == expected, raw
        compared += len(expected)
    assert compared > 500  # the texts do name many terms


def test_upper_motor_neurone_cerebellar_and_sixth_nerve_signs_are_central_neurological_function(
    kb_lexicon: list[LexiconEntry],
) -> None:
    # Macleod's Clinical Examination, the nervous system (lay_terms.yaml)
    for text in ("fails to abduct l eye", "brisk reflexes r", "cant heel toe walk", "brisk r knee jerk"):
        assert [x.concept for x in match_concepts(text, kb_lexicon)] == [
            "newly_abnormal_central_neurological_function"
        ], text


def test_a_temperature_for_days_is_fever_and_a_normal_one_is_not(kb_lexicon: list[LexiconEntry]) -> None:
    assert [x.concept for x in match_concepts("temperature for 2 days", kb_lexicon)] == ["fever"]
    assert [x.concept for x in match_concepts("normal temperature", kb_lexicon)] == []


def test_the_prostate_named_on_examination_is_not_urinary_symptoms(kb_lexicon: list[LexiconEntry]) -> None:
    # "prostatism" shared the stem of "prostate": an examined prostate was read as LUTS (NG12 1.6.1-1.6.2)
    for text in ("prostate smooth, not enlarged", "prostate separately felt, smooth and benign"):
        assert "lower_urinary_tract_symptoms" not in [x.concept for x in match_concepts(text, kb_lexicon)], (
            text
        )
    assert [x.concept for x in match_concepts("prostate symptoms", kb_lexicon)] == [
        "lower_urinary_tract_symptoms"
    ]


def test_up_at_night_to_pass_water_is_nocturia(kb_lexicon: list[LexiconEntry]) -> None:
    for text in ("up 3x a night to pass water for 6 months", "getting up 4 times a night to pee"):
        assert [x.concept for x in match_concepts(text, kb_lexicon)] == ["nocturia"], text


def test_word_finding_wobbly_walking_and_double_vision_in_lay_words(kb_lexicon: list[LexiconEntry]) -> None:
    for text in (
        "husband says she struggles to find her words",
        "mum says he's been wobbly walking for 3 wks",
        "seeing double for 2 weeks",
    ):
        assert [x.concept for x in match_concepts(text, kb_lexicon)] == [
            "newly_abnormal_central_neurological_function"
        ], text
