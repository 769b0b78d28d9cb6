"""Browsing a version's chunks (admin chunk browser, the guideline viewer's symptom tables).

The canonical recommendations are listed too, as doc type `rule_canonical` with the chunk id
ingestion gives them (`ng12:rec:<id>`), so the counts per type match the version's
`chunk_counts`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from ng12_common.served_recommendations import rec_sort_key
from retrieval.records import ChunkRecord, VersionData

MAX_LIMIT = 1000
DEFAULT_LIMIT = 20


def canonical_chunk(rec: dict[str, Any]) -> ChunkRecord:
    meta = {k: v for k, v in (rec.get("metadata") or {}).items() if k not in ("criteria", "highlights")}
    for key in ("section_title", "action", "strength", "timeframe", "cancer_site", "page_end"):
        if key in rec:
            meta[key] = rec[key]
    return ChunkRecord(
        id=f"ng12:rec:{rec['id']}",
        doc_type="rule_canonical",
        text=str(rec.get("text", "")),
        page=int(rec.get("page", 0)),
        section=str(rec.get("section", "")),
        recommendation_ids=[str(rec["id"])],
        metadata=meta,
    )


def all_chunks(data: VersionData) -> list[ChunkRecord]:
    recs = sorted(data.canonical.values(), key=lambda r: rec_sort_key(str(r["id"])))
    return [canonical_chunk(r) for r in recs] + list(data.chunks)


def _in_section(chunk: ChunkRecord, section: str) -> bool:
    s = chunk.section
    return s == section or s.startswith(section + ".") or s.startswith(section + " > ")


@dataclass
class ChunkPage:
    total: int
    counts_by_type: dict[str, int]
    items: list[ChunkRecord]


def list_chunks(data: VersionData, doc_type: str, section: str, q: str, offset: int, limit: int) -> ChunkPage:
    chunks = all_chunks(data)
    counts = Counter(c.doc_type for c in chunks)
    words = q.lower().split()
    matching = [
        c
        for c in chunks
        if (not doc_type or c.doc_type == doc_type)
        and (not section or _in_section(c, section))
        and all(w in f"{c.id} {' '.join(c.recommendation_ids)} {c.text}".lower() for w in words)
    ]
    return ChunkPage(len(matching), dict(counts), matching[offset : offset + limit])


def find_chunk(data: VersionData, chunk_id: str) -> ChunkRecord | None:
    if chunk_id.startswith("ng12:rec:"):
        rec = data.canonical.get(chunk_id.removeprefix("ng12:rec:"))
        return canonical_chunk(rec) if rec else None
    return next((c for c in data.chunks if c.id == chunk_id), None)
