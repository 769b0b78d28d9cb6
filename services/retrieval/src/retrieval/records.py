"""Plain records shared by storage, serving and search: no behaviour, no imports of either.

Kept apart so that storage (versions, Chroma, the registry), serving (the loaded index a replica
swaps) and search (ranking) depend on these and never on each other in a circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from retrieval.registry import VersionRecord

SEARCH_DOC_TYPES = ("rule_search", "symptom_index", "guideline_text")


class IndexError_(Exception):
    """A lifecycle request that cannot be honoured; `kind` maps to a gRPC status. A `not_found`
    names what is missing in `missing` (ng12_common.grpc_utils.NOT_FOUND_KINDS), sent to the
    client in the NOT_FOUND's trailing metadata."""

    def __init__(self, kind: str, message: str, missing: str = "") -> None:
        super().__init__(message)
        self.kind = kind  # invalid | not_found | precondition
        self.message = message
        self.missing = missing


@dataclass
class ChunkRecord:
    id: str
    doc_type: str
    text: str
    page: int
    section: str
    recommendation_ids: list[str]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class VersionData:
    """What browsing needs of any version that holds data (not only the served one)."""

    record: VersionRecord
    chunks: list[ChunkRecord]
    canonical: dict[str, dict[str, Any]]


@dataclass
class Boost:
    name: str
    value: float
    reason: str


@dataclass
class ScoredHit:
    chunk: ChunkRecord
    score: float
    dense: float
    lexical: float
    fused: float
    boosts: list[Boost] = field(default_factory=list)
    supporting: list[ScoredHit] = field(default_factory=list)  # other passages of its recommendation
