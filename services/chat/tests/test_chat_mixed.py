"""Mixed requests (chat.mixed): clauses split, the rules then the real scope classifier (over a
real retrieval server's embeddings) per clause; the in-scope part kept, the rest declined."""

from __future__ import annotations

from chat.guardrails import clauses, rule_scope
from chat.mixed import split_request
from chat.scope import ScopeClassifier
from ng12_common.retrieval_client import RetrievalClient


def test_clauses_split_at_sentence_ends_but_not_at_abbreviations() -> None:
    parts = clauses("Child of 6 with bruising. What now? Then give me the tel no. for the on-call team")
    assert parts == ["Child of 6 with bruising", "What now", "Then give me the tel no. for the on-call team"]
    assert rule_scope("what's the tel no for the breast unit") == "logistics"


def never_clinical(text: str) -> bool:
    return False


async def test_a_clause_of_another_kind_is_declined_by_the_classifier(retrieval_addr: str) -> None:
    client = RetrievalClient(retrieval_addr, timeout_seconds=30.0)
    scope = ScopeClassifier(client)
    assert await scope.load()
    mixed = await split_request(
        "Woman of 58 with a new breast lump - which NG12 recommendation applies? "
        "Completely separately, could you suggest a good hotel near the station for a conference?",
        scope.classify,
        never_clinical,
    )
    assert mixed is not None
    assert "breast lump" in mixed.text and "hotel" not in mixed.text
    assert [kind for _, kind in mixed.declined] == ["non_medical"]
    assert "hotel" in mixed.declined[0][0]
    # a short question leaning on the rest, and a statement of context, are never declined
    assert (
        await split_request("61M with haemoptysis. What comes next?", scope.classify, never_clinical) is None
    )
    assert (
        await split_request(
            "Does a 61 year old with haemoptysis need a 2ww? Trying to plan our practice audit.",
            scope.classify,
            never_clinical,
        )
        is None
    )
    # the rules alone need no classifier
    ruled = await split_request("Is haemoptysis a 2ww? and can you write me the letter", None, never_clinical)
    assert ruled is not None and ruled.declined[0][1] == "task_request"
