"""An LRU of Search responses, valid for one index version.

A Search answer is a pure function of the served index version and the request (query, top_k,
mode, patient profile, filters), so a repeated request is answered with the response computed the
first time. The key is the request's deterministic serialisation; the cache empties itself
whenever the served version changes (activation, rollback), so a response never outlives the
index that produced it. Degraded (BM25-only) responses are never stored.
"""

from __future__ import annotations

from collections import OrderedDict

from ng12.retrieval.v1 import retrieval_pb2 as pb
from retrieval.metrics import SEARCH_CACHE


class SearchResultCache:
    def __init__(self, size: int) -> None:
        self.size = size
        self._version = ""
        self._entries: OrderedDict[bytes, pb.SearchResponse] = OrderedDict()

    @staticmethod
    def key(request: pb.SearchRequest) -> bytes:
        return request.SerializeToString(deterministic=True)

    def get(self, version: str, key: bytes) -> pb.SearchResponse | None:
        if self.size <= 0:
            return None
        if version != self._version:
            self._entries.clear()
            self._version = version
        response = self._entries.get(key)
        if response is None:
            SEARCH_CACHE.labels(result="miss").inc()
            return None
        self._entries.move_to_end(key)
        SEARCH_CACHE.labels(result="hit").inc()
        return response

    def put(self, version: str, key: bytes, response: pb.SearchResponse) -> None:
        if self.size <= 0 or response.degraded or version != self._version:
            return
        self._entries[key] = response
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
