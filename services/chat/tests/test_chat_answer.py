"""The extractive placeholder answer: quotes verbatim, cites pages and ids, adds nothing else."""

from __future__ import annotations

from chat.answer import DISCLAIMER, compose_answer
from ng12_common.models import Citation


def test_quotes_each_passage_with_its_citation() -> None:
    citations = [
        Citation(
            recommendation_id="1.1.1",
            section="1.1",
            page=9,
            chunk_id="a",
            excerpt="Refer people using a suspected cancer pathway referral for lung cancer if they:",
        ),
        Citation(recommendation_id=None, section="1.2", page=14, chunk_id="b", excerpt="Dysphagia  (text)"),
    ]
    answer, grounding = compose_answer(citations)
    assert grounding == "sufficient"
    assert (
        '"Refer people using a suspected cancer pathway referral for lung cancer if they:" '
        "[NG12 p.9, rec 1.1.1]" in answer
    )
    assert '"Dysphagia  (text)" [NG12 p.14]' in answer
    assert answer.rstrip().endswith(DISCLAIMER)
    assert "\n" not in DISCLAIMER


def test_no_passages_is_a_refusal() -> None:
    answer, grounding = compose_answer([])
    assert grounding == "none"
    assert "[NG12" not in answer and answer.endswith(DISCLAIMER)
