"""Conversions between protobuf messages and the store's records."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format
from google.protobuf.struct_pb2 import Struct

from ng12.retrieval.v1 import retrieval_pb2 as pb
from retrieval.records import ChunkRecord, ScoredHit
from retrieval.registry import VersionRecord


def struct_to_dict(s: Struct) -> dict[str, Any]:
    return json_format.MessageToDict(s)


def dict_to_struct(d: dict[str, Any]) -> Struct:
    s = Struct()
    if d:
        s.update(d)
    return s


def chunk_from_pb(c: pb.Chunk) -> ChunkRecord:
    return ChunkRecord(
        id=c.id,
        doc_type=c.doc_type,
        text=c.text,
        page=c.page,
        section=c.section,
        recommendation_ids=list(c.recommendation_ids),
        metadata=struct_to_dict(c.metadata),
    )


def chunk_summary_to_pb(c: ChunkRecord) -> pb.ChunkSummary:
    return pb.ChunkSummary(
        chunk_id=c.id,
        doc_type=c.doc_type,
        section=c.section,
        recommendation_ids=c.recommendation_ids,
        page=c.page,
        text=c.text,
        metadata=dict_to_struct(c.metadata),
    )


def canonical_to_dict(r: pb.CanonicalRecommendation) -> dict[str, Any]:
    return json_format.MessageToDict(r, preserving_proto_field_name=True)


def canonical_from_dict(d: dict[str, Any]) -> pb.CanonicalRecommendation:
    return json_format.ParseDict(d, pb.CanonicalRecommendation())


def lexicon_to_dict(t: pb.LexiconTerm) -> dict[str, Any]:
    return {
        "concept": t.concept,
        "label": t.label,
        "synonyms": list(t.synonyms),
        "kind": t.kind,
        "terms": list(t.terms),
    }


def guideline_to_pb(g: dict[str, Any]) -> pb.GuidelineInfo:
    return json_format.ParseDict(g or {}, pb.GuidelineInfo(), ignore_unknown_fields=True)


def version_to_pb(r: VersionRecord) -> pb.IndexVersion:
    return pb.IndexVersion(
        version=r.version,
        status=r.status,
        guideline=guideline_to_pb(r.guideline),
        embedder_id=r.embedder_id,
        embedding_dim=r.embedding_dim,
        chunk_counts=r.chunk_counts,
        expected_counts=r.expected_counts,
        recommendation_count=r.recommendation_count,
        created_at=r.created_at,
        activated_at=r.activated_at,
        error=r.error,
        description=r.description,
        stale_criteria=r.stale_criteria,
        unused_criteria=r.unused_criteria,
        has_source_pdf=r.has_source_pdf,
        source_filename=r.source_filename,
    )


MAX_SUPPORTING = 3  # supporting passages sent per hit (the best ones)


def hit_to_pb(
    h: ScoredHit, canonical: dict[str, pb.CanonicalRecommendation], metadata: Struct | None
) -> pb.Hit:
    c = h.chunk
    return pb.Hit(
        chunk_id=c.id,
        doc_type=c.doc_type,
        score=round(h.score, 6),
        text=c.text,
        page=c.page,
        section=c.section,
        recommendation_ids=c.recommendation_ids,
        canonical=[canonical[r] for r in c.recommendation_ids if r in canonical],
        boosts=[pb.Boost(name=b.name, value=b.value, reason=b.reason) for b in h.boosts],
        dense_score=round(h.dense, 6),
        lexical_score=round(h.lexical, 6),
        metadata=metadata,
        supporting=[
            pb.SupportingPassage(
                chunk_id=s.chunk.id,
                doc_type=s.chunk.doc_type,
                score=round(s.score, 6),
                page=s.chunk.page,
                section=s.chunk.section,
                text=s.chunk.text,
            )
            for s in h.supporting[:MAX_SUPPORTING]
        ],
    )
