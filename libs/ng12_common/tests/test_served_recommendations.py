"""The one reading of retrieval's CanonicalRecommendation shared by assessment and chat."""

from __future__ import annotations

from typing import Any

from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12_common.criteria import AllOf, AtLeast
from ng12_common.served_recommendations import lexicon_entry, rec_sort_key, served_recommendation

CRITERIA = {
    "op": "all",
    "of": [
        {"op": "age_gte", "value": 40},
        {
            "op": "at_least",
            "n": 2,
            "of": [{"op": "symptom", "concept": "cough"}, {"op": "symptom", "concept": "fatigue"}],
        },
    ],
}


def _message(section: str = "1.1", **metadata: Any) -> pb.CanonicalRecommendation:
    message = pb.CanonicalRecommendation(
        id=f"{section}.2",
        section=section,
        section_title="Lung and pleural cancers",
        cancer_site="lung",
        page=9,
        text="Offer an urgent chest X-ray ...",
        action="urgent_investigation",
        strength="offer",
        timeframe="2 weeks",
    )
    if metadata:
        message.metadata.update(metadata)
    return message


def test_curated_criteria_are_parsed_with_integral_numbers() -> None:
    rec, problem = served_recommendation(
        _message(criteria=CRITERIA, criteria_status="curated", population={"min_age": 40})
    )
    assert problem is None
    assert isinstance(rec.criteria, AllOf) and isinstance(rec.criteria.of[1], AtLeast)
    assert rec.criteria.of[1].n == 2 and isinstance(rec.criteria.of[1].n, int)  # Struct gave 2.0
    assert rec.population == {"min_age": 40} and isinstance(rec.population["min_age"], int)
    assert (rec.section_title, rec.timeframe, rec.page) == ("Lung and pleural cancers", "2 weeks", 9)


def test_stale_or_broken_criteria_are_never_used() -> None:
    stale, why = served_recommendation(_message(criteria=CRITERIA, criteria_status="stale"))
    assert stale.criteria is None and why == "criteria status is 'stale'"
    broken, why = served_recommendation(_message(criteria={"op": "nonsense"}, criteria_status="curated"))
    assert broken.criteria is None and why is not None and why.startswith("criteria do not parse")
    missing, why = served_recommendation(_message(criteria_status="curated"))
    assert missing.criteria is None and why == "no criteria in the index"


def test_sections_without_patient_criteria_and_lean_hits() -> None:
    prose, why = served_recommendation(_message(section="1.15", criteria_status="none"))
    assert prose.criteria is None and why is None
    lean, _ = served_recommendation(_message())  # a Search hit without metadata
    assert lean.criteria is None and lean.population == {} and lean.text


def test_guideline_order_and_lexicon_terms() -> None:
    assert sorted(["1.10.2", "1.9.3", "1.1.1"], key=rec_sort_key) == ["1.1.1", "1.9.3", "1.10.2"]
    term = pb.LexiconTerm(concept="iron_deficiency_anaemia", kind="mystery", synonyms=["IDA"])
    entry = lexicon_entry(term)
    assert (entry.kind, entry.label, entry.synonyms) == ("other", "iron deficiency anaemia", ["IDA"])
