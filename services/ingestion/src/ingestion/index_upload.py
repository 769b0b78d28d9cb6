"""Streams a knowledge base to retrieval as a NEW index version, then validates and activates it.

begin -> UploadChunks (client streaming, batched) -> finish (retrieval validates counts,
canonical references, embedder) -> activate. Any failure after `begin` aborts the version,
so a failed or interrupted ingestion never changes what is served.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.struct_pb2 import Struct

from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from ng12_common.grpc_utils import channel_options, grpc_target, request_metadata
from ng12_common.knowledge import KnowledgeBase, Recommendation
from ng12_common.logs import get_logger

log = get_logger("ingestion.upload")
Progress = Callable[[str, float], None]
SOURCE_PIECE = 1024 * 1024  # UploadSource message size (retrieval refuses larger pieces)


class IndexBuildFailed(RuntimeError):
    def __init__(self, version: str, problems: list[str]) -> None:
        super().__init__(f"index {version} failed validation: {'; '.join(problems)}")
        self.version = version
        self.problems = problems


def _struct(d: dict[str, Any]) -> Struct:
    s = Struct()
    if d:
        s.update(d)
    return s


def _canonical(r: Recommendation) -> pb.CanonicalRecommendation:
    meta = {
        "subsection_title": r.subsection_title or "",
        "population": r.population.model_dump(),
        "criteria": r.criteria,
        "criteria_status": r.criteria_status,
        "text_hash": r.text_hash,
        "year_tags": r.year_tags,
        "highlights": [b.model_dump() for b in r.highlights],
    }
    return pb.CanonicalRecommendation(
        id=r.id,
        section=r.section,
        section_title=r.section_title,
        cancer_site=r.cancer_site,
        page=r.page,
        page_end=r.page_end,
        text=r.text,
        action=r.action,
        strength=r.strength,
        timeframe=r.timeframe,
        metadata=_struct({k: v for k, v in meta.items() if v is not None}),
    )


def expected_counts(kb: KnowledgeBase) -> dict[str, int]:
    counts: Counter[str] = Counter(str(c.doc_type) for c in kb.chunks if c.doc_type != "rule_canonical")
    counts["rule_canonical"] = len(kb.recommendations)
    return dict(counts)


def _messages(
    version: str, kb: KnowledgeBase, batch: int, progress: Progress
) -> Iterator[pb.UploadChunksRequest]:
    search_chunks = [c for c in kb.chunks if c.doc_type != "rule_canonical"]
    yield pb.UploadChunksRequest(
        version=version,
        recommendations=[_canonical(r) for r in kb.recommendations],
        lexicon=[
            pb.LexiconTerm(concept=e.concept, label=e.label, synonyms=e.synonyms, kind=e.kind, terms=e.terms)
            for e in kb.lexicon
        ],
    )
    total = max(1, len(search_chunks))
    for start in range(0, len(search_chunks), batch):
        part = search_chunks[start : start + batch]
        yield pb.UploadChunksRequest(
            version=version,
            chunks=[
                pb.Chunk(
                    id=c.id,
                    doc_type=c.doc_type,
                    text=c.text,
                    page=c.page,
                    section=c.section,
                    recommendation_ids=c.recommendation_ids,
                    metadata=_struct(c.metadata),
                )
                for c in part
            ],
        )
        progress("upload", min(1.0, (start + len(part)) / total))
    # the end marker: without it retrieval reads the stream as cut off and fails the build at once
    yield pb.UploadChunksRequest(version=version, last=True)


def _source_messages(version: str, pdf_path: Path) -> Iterator[pb.UploadSourceRequest]:
    with pdf_path.open("rb") as fh:
        piece = fh.read(SOURCE_PIECE)
        while piece:
            following = fh.read(SOURCE_PIECE)
            yield pb.UploadSourceRequest(version=version, data=piece, last=not following)
            piece = following


def upload_index(
    target: str,
    kb: KnowledgeBase,
    *,
    activate: bool = True,
    batch_size: int = 64,
    timeout: float = 600.0,
    description: str = "",
    progress: Progress = lambda stage, fraction: None,
    service_token: str = "",
    pdf_path: Path | None = None,
    source_filename: str = "",
) -> dict[str, Any]:
    """Build a new version from `kb` (with `pdf_path` as its own source PDF, from which retrieval
    renders pages; its sha256 must be the knowledge base's source_sha256)."""
    g = kb.guideline
    coverage = kb.report.criteria_coverage
    # pick_first: every RPC of one build reaches the same process (the writer holds the build)
    with grpc.insecure_channel(grpc_target(target), options=channel_options("pick_first")) as channel:
        stub = pb_grpc.RetrievalStub(channel)
        md = request_metadata(service_token)
        version = stub.BeginIndex(
            pb.BeginIndexRequest(
                guideline=pb.GuidelineInfo(
                    title=g.title,
                    code=g.code,
                    published=g.published,
                    last_updated=g.last_updated,
                    page_count=g.page_count,
                    source_sha256=g.source_sha256,
                ),
                expected_counts=expected_counts(kb),
                description=description,
                stale_criteria=[str(x) for x in coverage.get("stale", [])],
                unused_criteria=[str(x) for x in coverage.get("unused", [])],
                source_filename=source_filename or (pdf_path.name if pdf_path else ""),
            ),
            timeout=30,
            metadata=md,
        ).version
        log.info("index_build_begun", version=version)
        try:
            if pdf_path is not None:
                progress("upload_pdf", 0.0)
                stub.UploadSource(_source_messages(version, pdf_path), timeout=timeout, metadata=md)
            stub.UploadChunks(_messages(version, kb, batch_size, progress), timeout=timeout, metadata=md)
            progress("validate", 0.0)
            finished = stub.FinishIndex(pb.FinishIndexRequest(version=version), timeout=120, metadata=md)
        except BaseException as exc:
            _abort(stub, version, f"upload failed: {exc!r}"[:500], md)
            raise
        if not finished.valid:
            raise IndexBuildFailed(version, list(finished.problems))
        record = finished.version
        if activate:
            progress("activate", 0.0)
            record = stub.ActivateIndex(pb.ActivateIndexRequest(version=version), timeout=120, metadata=md)
        return {
            "version": record.version,
            "status": record.status,
            "activated": record.status == "active",
            "chunk_counts": dict(record.chunk_counts),
            "recommendation_count": record.recommendation_count,
            "stale_criteria": list(record.stale_criteria),
            "unused_criteria": list(record.unused_criteria),
        }


def _abort(stub: pb_grpc.RetrievalStub, version: str, reason: str, md: tuple[tuple[str, str], ...]) -> None:
    try:
        stub.AbortIndex(pb.AbortIndexRequest(version=version, reason=reason), timeout=10, metadata=md)
    except grpc.RpcError as exc:  # the retrieval side marks interrupted builds failed on restart anyway
        log.warning("abort_failed", version=version, error=repr(exc))


def active_source_sha256(target: str, timeout: float = 10.0) -> tuple[str, str] | None:
    """(version, source_sha256) of the served index, or None when nothing is active."""
    with grpc.insecure_channel(grpc_target(target), options=channel_options()) as channel:
        stub = pb_grpc.RetrievalStub(channel)
        try:
            active = stub.GetActiveIndex(
                pb.GetActiveIndexRequest(), timeout=timeout, metadata=request_metadata()
            )
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.FAILED_PRECONDITION:  # type: ignore[attr-defined]
                return None
            raise
        return active.version, active.guideline.source_sha256


def has_active_index(target: str, timeout: float = 5.0) -> bool:
    """True when retrieval serves an index (errors other than "nothing active" propagate)."""
    return active_source_sha256(target, timeout) is not None
