"""Reranking boosts from precomputed chunk features and query intent, and exact dense ranking
agreeing with a real Chroma collection's HNSW query."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import chromadb
import numpy as np
from chromadb.config import Settings as ChromaSettings

from retrieval.rerank import assessment_boosts, chat_boosts, chunk_features, query_intent
from retrieval.search import SearchParams, _dense_order

WOMEN_50 = {
    "metadata": {
        "population": {"sex": "female", "min_age": 50},
        "criteria": {"op": "all", "of": [{"op": "age_gte", "value": 50}]},
    }
}
ANYONE_40 = {"metadata": {"population": {"sex": "any"}, "criteria": {"op": "age_gte", "value": 40}}}


def _names(boosts: list) -> list[str]:  # type: ignore[type-arg]
    return [b.name for b in boosts]


def test_assessment_boosts_for_a_women_only_recommendation() -> None:
    chunk = chunk_features("Refer women aged 50 and over with a breast lump", "rule_search", [WOMEN_50])
    assert chunk.age_bounds == (("age_gte", 50), ("age_gte", 50))
    woman = assessment_boosts(chunk, {"age": 55, "sex": "female", "smoking": "never"}, ["breast lump"])
    assert _names(woman) == ["age_match", "symptom_overlap", "sex_match"]
    assert woman[0].reason == "patient age 55 ≥ 50"
    man = assessment_boosts(chunk, {"age": 35, "sex": "male", "smoking": "current"}, [])
    assert _names(man) == ["sex_clash"]
    assert sum(b.value for b in man) < 0


def test_smoking_boost_needs_an_ever_smoker_and_a_smoking_recommendation() -> None:
    chunk = chunk_features("aged 40 and over who have ever smoked", "rule_search", [ANYONE_40])
    smoker = assessment_boosts(chunk, {"age": 41, "sex": "male", "smoking": "ex"}, [])
    never = assessment_boosts(chunk, {"age": 41, "sex": "male", "smoking": "never"}, [])
    assert _names(smoker) == ["age_match", "smoking"]
    assert _names(never) == ["age_match"]


def test_chat_boosts_follow_the_question_wording() -> None:
    chunk = chunk_features(
        "Refer people using a suspected cancer pathway referral if they are aged 40 and over "
        "with persistent symptoms for 3 weeks",
        "rule_search",
        [ANYONE_40],
    )
    intent = query_intent("quote the suspected cancer pathway rule for a 45-year-old with persistent cough")
    assert _names(chat_boosts(intent, chunk)) == ["urgency", "age_mention", "duration", "quote_request"]
    plain = query_intent("what is ng12")
    assert chat_boosts(plain, chunk) == []
    symptom_row = chunk_features("haemoptysis: lung cancer", "symptom_index", [])
    assert "quote_request" not in _names(chat_boosts(intent, symptom_row))


def test_exact_dense_order_matches_chroma_hnsw(tmp_path: Path) -> None:
    rng = np.random.default_rng(12)
    matrix = rng.normal(size=(300, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    ids = [f"c{i}" for i in range(len(matrix))]
    client = chromadb.PersistentClient(
        path=str(tmp_path), settings=ChromaSettings(anonymized_telemetry=False)
    )
    collection = client.create_collection(
        "exactness", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    collection.add(ids=ids, embeddings=matrix.tolist())
    serving = SimpleNamespace(collection=collection, row_of={c: i for i, c in enumerate(ids)}, order=ids)
    params = SearchParams(query="q", top_k=8, mode="chat")
    for _ in range(10):
        query = matrix[rng.integers(len(matrix))] + 0.3 * rng.normal(size=384).astype(np.float32)
        query /= np.linalg.norm(query)
        sims = matrix @ query
        exact = _dense_order(serving, sims, query, params, 24, "memory")[:24]  # type: ignore[arg-type]
        hnsw = _dense_order(serving, sims, query, params, 24, "chroma")  # type: ignore[arg-type]
        assert exact == hnsw
