"""The Search response cache: per index version, bounded, never storing degraded answers."""

from __future__ import annotations

from ng12.retrieval.v1 import retrieval_pb2 as pb
from retrieval.result_cache import SearchResultCache


def _key(query: str, top_k: int = 5) -> bytes:
    return SearchResultCache.key(pb.SearchRequest(query=query, top_k=top_k, mode=pb.SEARCH_MODE_CHAT))


def test_a_repeated_request_is_answered_from_the_cache_until_the_version_changes() -> None:
    cache = SearchResultCache(8)
    answer = pb.SearchResponse(index_version="v1", normalized_query="haemoptysis")
    assert cache.get("v1", _key("haemoptysis")) is None
    cache.put("v1", _key("haemoptysis"), answer)
    assert cache.get("v1", _key("haemoptysis")) is answer
    assert cache.get("v1", _key("haemoptysis", top_k=6)) is None  # any field of the request counts
    assert cache.get("v2", _key("haemoptysis")) is None  # a new version empties the cache
    assert len(cache) == 0
    cache.put("v1", _key("haemoptysis"), answer)  # a late answer of the old version is dropped
    assert len(cache) == 0


def test_degraded_answers_are_not_kept_and_the_size_is_bounded() -> None:
    cache = SearchResultCache(2)
    cache.get("v1", _key("a"))
    cache.put("v1", _key("a"), pb.SearchResponse(index_version="v1", degraded=True))
    assert cache.get("v1", _key("a")) is None
    for q in ("a", "b", "c"):
        cache.put("v1", _key(q), pb.SearchResponse(index_version="v1", normalized_query=q))
    assert len(cache) == 2 and cache.get("v1", _key("a")) is None
    assert SearchResultCache(0).get("v1", _key("a")) is None
