"""The retrieval gRPC service over a real server with the real NG12 index (see conftest.py)."""

from __future__ import annotations

import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc


@pytest.fixture(scope="module")
def stub(retrieval_addr: str):  # type: ignore[no-untyped-def]
    with grpc.insecure_channel(retrieval_addr) as channel:
        yield pb_grpc.RetrievalStub(channel)


def _search(stub, query: str, top_k: int = 5, mode: int = pb.SEARCH_MODE_CHAT, **kw):  # type: ignore[no-untyped-def]
    return stub.Search(pb.SearchRequest(query=query, top_k=top_k, mode=mode, **kw), timeout=10)


def test_search_returns_ranked_hits_naming_the_version(stub, retrieval_server) -> None:  # type: ignore[no-untyped-def]
    r = _search(stub, "unexplained haemoptysis in a 50 year old smoker")
    assert r.index_version == retrieval_server.version
    assert r.guideline.code == "NG12" and r.guideline.last_updated == "2026-01-12"
    assert 1 <= len(r.hits) <= 5
    scores = [h.score for h in r.hits]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert all(1 <= h.page <= 95 and h.text and h.chunk_id for h in r.hits)
    assert any("haemoptysis" in h.text.lower() for h in r.hits)


def test_health_is_serving_with_an_active_index(retrieval_addr: str) -> None:
    with grpc.insecure_channel(retrieval_addr) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


@pytest.mark.parametrize(
    ("request_kwargs", "fragment"),
    [
        ({"query": "   ", "top_k": 5, "mode": pb.SEARCH_MODE_CHAT}, "query must not be empty"),
        ({"query": "cough", "top_k": 0, "mode": pb.SEARCH_MODE_CHAT}, "top_k"),
        ({"query": "cough", "top_k": 51, "mode": pb.SEARCH_MODE_CHAT}, "top_k"),
        ({"query": "cough", "top_k": 5, "mode": pb.SEARCH_MODE_UNSPECIFIED}, "mode"),
        ({"query": "cough", "top_k": 5, "mode": 7}, "mode"),
    ],
)
def test_bad_search_requests_are_invalid_argument(stub, request_kwargs, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        stub.Search(pb.SearchRequest(**request_kwargs), timeout=5)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert fragment in err.value.details()


def test_one_millisecond_deadline_is_deadline_exceeded(stub) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        stub.Search(
            pb.SearchRequest(query="a brand new query about lumps", top_k=50, mode=pb.SEARCH_MODE_CHAT),
            timeout=0.001,
        )
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_unknown_version_activation_is_not_found(stub) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        stub.ActivateIndex(pb.ActivateIndexRequest(version="v999"), timeout=5)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_list_versions_shows_the_active_one(stub, retrieval_server) -> None:  # type: ignore[no-untyped-def]
    r = stub.ListIndexVersions(pb.ListIndexVersionsRequest(), timeout=5)
    assert r.active_version == retrieval_server.version
    active = next(v for v in r.versions if v.version == r.active_version)
    assert active.status == "active" and active.embedding_dim == 384
    assert active.embedder_id.endswith("all-MiniLM-L6-v2")


def test_lexicon_is_served_for_query_understanding(stub, retrieval_server) -> None:  # type: ignore[no-untyped-def]
    r = stub.GetLexicon(pb.GetLexiconRequest(), timeout=5)
    assert r.index_version == retrieval_server.version
    by_concept = {t.concept: t for t in r.terms}
    assert "haemoptysis" in by_concept
    assert any("hemoptysis" in s.lower() for s in by_concept["haemoptysis"].synonyms)


def test_recommendations_by_id_are_verbatim_with_metadata(stub) -> None:  # type: ignore[no-untyped-def]
    r = stub.GetRecommendations(pb.GetRecommendationsRequest(ids=["1.1.1"]), timeout=5)
    (rec,) = r.recommendations
    assert rec.page == 9 and rec.action == "suspected_cancer_pathway_referral"
    assert "aged 40 and over with unexplained haemoptysis" in rec.text
    assert rec.metadata["criteria_status"] == "curated"
    every = stub.GetRecommendations(pb.GetRecommendationsRequest(), timeout=5)
    assert len(every.recommendations) == 109
    with pytest.raises(grpc.RpcError) as err:
        stub.GetRecommendations(pb.GetRecommendationsRequest(ids=["9.9.9"]), timeout=5)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_metadata_travels_only_when_asked(stub) -> None:  # type: ignore[no-untyped-def]
    lean = _search(stub, "unexplained haemoptysis in a 50 year old smoker")
    full = _search(stub, "unexplained haemoptysis in a 50 year old smoker", include_metadata=True)
    assert [h.chunk_id for h in lean.hits] == [h.chunk_id for h in full.hits]
    lean_recs = [c for h in lean.hits for c in h.canonical]
    full_recs = [c for h in full.hits for c in h.canonical]
    assert lean_recs and all(c.text and c.page and c.action for c in lean_recs)
    assert not any(c.HasField("metadata") for c in lean_recs)
    assert not any(h.HasField("metadata") for h in lean.hits)
    assert all("population" in c.metadata.fields for c in full_recs)
    for response in (lean, full):  # supporting passages are in both: compare the rest
        for hit in response.hits:
            del hit.supporting[:]
    assert lean.ByteSize() < full.ByteSize() / 2


def _counter(metrics_port: int, name: str, result: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith(f'{name}{{result="{result}"}}'):
            return float(line.split()[-1])
    return 0.0


def test_a_repeated_search_is_answered_from_the_version_cache(stub, retrieval_server) -> None:  # type: ignore[no-untyped-def]
    name = "ng12_retrieval_search_cache_total"
    query = "repeated question about a breast lump in a woman aged 31"
    first = _search(stub, query)
    hits_before = _counter(retrieval_server.metrics_port, name, "hit")
    second = _search(stub, query)
    assert _counter(retrieval_server.metrics_port, name, "hit") == hits_before + 1
    assert second == first


def test_embed_returns_unit_vectors_in_order(stub, retrieval_server) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    r = stub.Embed(
        pb.EmbedRequest(texts=["coughing up blood", "blood in sputum", "went shopping"]), timeout=10
    )
    assert r.index_version == retrieval_server.version and r.dimension == 384
    vecs = np.array([list(e.values) for e in r.embeddings])
    assert vecs.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    # paraphrases are nearer each other than an unrelated clause
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2


def test_embed_as_query_shares_the_search_cache(stub, retrieval_server) -> None:  # type: ignore[no-untyped-def]
    """A message embedded as a query is not embedded again by the Search that follows."""
    name = "ng12_retrieval_query_cache_total"
    text = "a brand new question about dysphagia in a 61 year old"
    misses = _counter(retrieval_server.metrics_port, name, "miss")
    stub.Embed(pb.EmbedRequest(texts=[text], as_query=True), timeout=10)
    assert _counter(retrieval_server.metrics_port, name, "miss") == misses + 1
    hits = _counter(retrieval_server.metrics_port, name, "hit")
    _search(stub, text)
    assert _counter(retrieval_server.metrics_port, name, "hit") == hits + 1
    assert _counter(retrieval_server.metrics_port, name, "miss") == misses + 1


@pytest.mark.parametrize(
    ("texts", "fragment"),
    [
        ([], "texts must hold 1-256"),
        (["ok", "  "], "texts[1]"),
        (["x" * 2001], "texts[0]"),
        (["a"] * 257, "1-256"),
    ],
)
def test_bad_embed_requests_are_invalid_argument(stub, texts: list[str], fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        stub.Embed(pb.EmbedRequest(texts=texts), timeout=5)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert fragment in err.value.details()


def test_collapsed_hits_carry_their_supporting_passages(stub) -> None:  # type: ignore[no-untyped-def]
    r = _search(stub, "which blood tests for suspected myeloma", top_k=5)
    ids = [h.recommendation_ids[0] for h in r.hits if h.recommendation_ids]
    assert len(ids) == len(set(ids))  # one hit per recommendation
    supported = [h for h in r.hits if h.supporting]
    assert supported, "no hit carries supporting passages"
    for hit in supported:
        assert len(hit.supporting) <= 3
        for s in hit.supporting:
            assert s.chunk_id != hit.chunk_id and s.text and 1 <= s.page <= 95 and 0.0 <= s.score <= 1.0


@pytest.mark.parametrize(
    ("call", "request_message", "missing"),
    [
        ("ActivateIndex", pb.ActivateIndexRequest(version="v999"), "index_version"),
        ("GetRecommendations", pb.GetRecommendationsRequest(ids=["9.9.9"]), "recommendation"),
        ("GetRecommendations", pb.GetRecommendationsRequest(version="v999"), "index_version"),
        ("GetChunk", pb.GetChunkRequest(chunk_id="ng12:nope"), "chunk"),
        ("GetChunk", pb.GetChunkRequest(version="v999", chunk_id="ng12:rec:1.1.1"), "index_version"),
        ("ListChunks", pb.ListChunksRequest(version="v999"), "index_version"),
        ("RenderPage", pb.RenderPageRequest(page=9, highlight_id="1.99.99"), "recommendation"),
        ("RenderPage", pb.RenderPageRequest(version="v999", page=9), "index_version"),
    ],
)
def test_not_found_names_what_is_missing(stub, call: str, request_message, missing: str) -> None:  # type: ignore[no-untyped-def]
    """Clients map NOT_FOUND by the `ng12-not-found` trailing metadata, never the message text."""
    from ng12_common.grpc_utils import NOT_FOUND_KINDS, NOT_FOUND_METADATA

    with pytest.raises(grpc.RpcError) as err:
        getattr(stub, call)(request_message, timeout=15)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    trailing = dict(err.value.trailing_metadata())
    assert trailing[NOT_FOUND_METADATA] == missing and missing in NOT_FOUND_KINDS


async def test_the_client_reads_what_is_missing(retrieval_addr: str) -> None:
    from ng12_common.retrieval_client import RetrievalClient, RetrievalNotFound

    client = RetrievalClient(retrieval_addr, timeout_seconds=15)
    try:
        with pytest.raises(RetrievalNotFound) as chunk:
            await client.get_chunk("ng12:nope")
        with pytest.raises(RetrievalNotFound) as version:
            await client.get_chunk("ng12:rec:1.1.1", version="v999")
    finally:
        await client.close()
    assert (chunk.value.missing, version.value.missing) == ("chunk", "index_version")
