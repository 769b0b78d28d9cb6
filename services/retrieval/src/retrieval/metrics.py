"""Retrieval-specific Prometheus metrics (request counts/latency come from ng12_common)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

ACTIVE_INDEX = Gauge(
    "ng12_retrieval_active_index_version", "Sequence number of the active index version (0: none)."
)
ACTIVE_INDEX_ACTIVATED = Gauge(
    "ng12_retrieval_active_index_activated_timestamp_seconds",
    "When the active index version was activated (Unix time; 0: none). The stale-index alert reads it.",
)
INDEX_CHUNKS = Gauge("ng12_retrieval_index_chunks", "Chunks in the active index, by doc type.", ["doc_type"])
SEARCH_DEGRADED = Counter(
    "ng12_retrieval_search_degraded_total", "Searches answered from BM25 alone because dense search failed."
)
QUERY_CACHE = Counter("ng12_retrieval_query_cache_total", "Query embedding cache lookups.", ["result"])
SEARCH_CACHE = Counter(
    "ng12_retrieval_search_cache_total", "Search response cache lookups (per index version).", ["result"]
)
REMOVALS_PENDING = Gauge(
    "ng12_retrieval_index_removals_pending",
    "Failed or pruned index versions whose data could not be removed yet (retried; a full disk, say).",
)
