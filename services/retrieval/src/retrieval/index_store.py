"""Index versions on disk: ChromaDB collections plus canonical, chunk and lexical files.

One version = one Chroma collection (`ng12-chunks-vN`) holding the embedded search chunks,
and a folder `versions/vN/` holding the canonical recommendations (verbatim, by id, never
embedded), the chunk records, the lexicon and the BM25 index. Builds always go into a new
version; only a complete, validated version can be activated, and activation is one atomic
registry write. This process is the only one that opens the Chroma directory.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import numpy.typing as npt
from chromadb.config import Settings as ChromaSettings

from ng12_common.logs import get_logger
from retrieval.embeddings import EmbeddingProvider
from retrieval.lexical import LexicalIndex
from retrieval.registry import Registry, VersionRecord, now_iso, write_json_atomic

log = get_logger("retrieval.index")

SEARCH_DOC_TYPES = ("rule_search", "symptom_index", "guideline_text")
SOURCE_PDF = "source.pdf"
_SOURCE_PART = ".source.pdf.part"
FAILED_KEPT = 10  # failed builds' records kept for the admin's history (they hold no data)


class IndexError_(Exception):
    """A lifecycle request that cannot be honoured; `kind` maps to a gRPC status."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # invalid | not_found | precondition
        self.message = message


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
class BuildState:
    record: VersionRecord
    chunk_ids: set[str] = field(default_factory=set)
    chunks: list[ChunkRecord] = field(default_factory=list)
    canonical: dict[str, dict[str, Any]] = field(default_factory=dict)
    lexicon: list[dict[str, Any]] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    source_size: int = 0
    source_hash: Any = field(default_factory=hashlib.sha256)
    last_activity: float = field(default_factory=time.monotonic)


@dataclass
class VersionData:
    """What browsing needs of any version that holds data (not only the served one)."""

    record: VersionRecord
    chunks: list[ChunkRecord]
    canonical: dict[str, dict[str, Any]]


@dataclass
class ServingIndex:
    """Everything a Search needs for one active version, loaded in memory."""

    record: VersionRecord
    collection: Any
    chunks: dict[str, ChunkRecord]
    order: list[str]  # chunk ids in matrix/BM25 row order
    matrix: npt.NDArray[np.float32]  # normalised embeddings, row per chunk id in `order`
    canonical: dict[str, dict[str, Any]]
    lexicon: list[dict[str, Any]]
    lexical: LexicalIndex
    normaliser: Any  # search.QueryNormaliser, built once per version
    canonical_pb: dict[str, Any]  # id -> pb.CanonicalRecommendation, built once per version
    canonical_lean_pb: dict[str, Any]  # the same without metadata (Search hits unless asked)
    metadata_pb: dict[str, Any]  # chunk id -> Struct of its metadata, built once per version
    guideline_pb: Any  # pb.GuidelineInfo of this version
    row_of: dict[str, int]  # chunk id -> row in `order`
    features: list[Any]  # rerank.ChunkFeatures per row of `order`, computed once per version


class IndexStore:
    def __init__(self, root: Path, embedder: EmbeddingProvider, keep_versions: int = 2) -> None:
        self.root = root
        self.embedder = embedder
        self.keep_versions = max(2, keep_versions)
        self._browse_cache: OrderedDict[str, VersionData] = OrderedDict()
        self.registry = Registry(root)
        self.client = chromadb.PersistentClient(
            path=str(root / "chroma"), settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        )
        self.builds: dict[str, BuildState] = {}
        self.serving: ServingIndex | None = None
        self._lifecycle = asyncio.Lock()

    # --- start-up -------------------------------------------------------------------------

    def recover(self) -> None:
        """Fail builds a crash left behind, then load the active version (if any)."""
        changed = False
        for rec in self.registry.state.versions.values():
            if rec.status == "building":
                rec.status = "failed"
                rec.error = "interrupted: the retrieval process stopped during the build"
                self._discard_data(rec)
                changed = True
        if changed:
            self.registry.save()
        active = self.registry.state.active
        if active:
            record = self.registry.get(active)
            if record is None:
                raise RuntimeError(f"registry names active version {active} but has no record of it")
            self.serving = self._load(record)
            log.info("index_loaded", version=active, chunks=len(self.serving.order))

    # --- building -------------------------------------------------------------------------

    async def begin(
        self,
        guideline: dict[str, Any],
        expected: dict[str, int],
        description: str,
        *,
        stale_criteria: list[str] | None = None,
        unused_criteria: list[str] | None = None,
        source_filename: str = "",
    ) -> VersionRecord:
        async with self._lifecycle:
            version = self.registry.new_version_name()
            record = VersionRecord(
                version=version,
                status="building",
                guideline=guideline,
                embedder_id=self.embedder.embedder_id,
                embedding_dim=self.embedder.dimension,
                expected_counts=dict(expected),
                description=description,
                stale_criteria=sorted(stale_criteria or []),
                unused_criteria=sorted(unused_criteria or []),
                source_filename=source_filename,
            )
            self.client.create_collection(
                record.collection_name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
            )
            self.registry.state.versions[version] = record
            self.registry.save()
            self.builds[version] = BuildState(record=record)
            log.info("index_build_started", version=version)
            return record

    def _build(self, version: str) -> BuildState:
        state = self.builds.get(version)
        if state is None:
            rec = self.registry.get(version)
            if rec is None:
                raise IndexError_("not_found", f"unknown index version {version!r}")
            raise IndexError_("precondition", f"index version {version} is {rec.status}, not building")
        return state

    async def add(
        self,
        version: str,
        chunks: list[ChunkRecord],
        canonical: list[dict[str, Any]],
        lexicon: list[dict[str, Any]],
    ) -> None:
        state = self._build(version)
        async with state.lock:
            state.last_activity = time.monotonic()
            for rec in canonical:
                if rec["id"] in state.canonical:
                    raise IndexError_("invalid", f"recommendation {rec['id']} uploaded twice")
                state.canonical[rec["id"]] = rec
            state.lexicon.extend(lexicon)
            to_embed = [c for c in chunks if c.doc_type != "rule_canonical"]
            for c in chunks:
                if not c.id or not c.text.strip():
                    raise IndexError_("invalid", f"chunk {c.id!r} has no id or no text")
                if c.id in state.chunk_ids:
                    raise IndexError_("invalid", f"chunk id {c.id} uploaded twice")
                state.chunk_ids.add(c.id)
            if to_embed:
                loop = asyncio.get_running_loop()
                vectors = await loop.run_in_executor(
                    None, self.embedder.embed_documents, [c.text for c in to_embed]
                )
                collection = self.client.get_collection(state.record.collection_name)
                collection.add(
                    ids=[c.id for c in to_embed],
                    embeddings=vectors,
                    documents=[c.text for c in to_embed],
                    metadatas=[
                        {
                            "doc_type": c.doc_type,
                            "page": c.page,
                            "section": c.section or "",
                            "recommendation_ids": ",".join(c.recommendation_ids),
                        }
                        for c in to_embed
                    ],
                )
            state.chunks.extend(to_embed)
            state.last_activity = time.monotonic()

    async def add_source(self, version: str, data: bytes) -> None:
        """Append a piece of the version's source PDF (written beside its data, renamed in at finish)."""
        state = self._build(version)
        async with state.lock:
            if not data:
                raise IndexError_("invalid", "an UploadSource message carried no data")
            if len(data) > 1024 * 1024:
                raise IndexError_("invalid", "UploadSource pieces must be at most 1 MiB")
            folder = self._folder(version)
            folder.mkdir(parents=True, exist_ok=True)
            with (folder / _SOURCE_PART).open("ab") as fh:
                fh.write(data)
            state.source_hash.update(data)
            state.source_size += len(data)
            state.last_activity = time.monotonic()

    def source_uploaded(self, version: str) -> tuple[int, str]:
        state = self._build(version)
        return state.source_size, state.source_hash.hexdigest()

    async def reap_idle(self, max_idle_seconds: float) -> list[str]:
        """Abort builds nobody has fed for max_idle_seconds (a client killed between RPCs)."""
        now = time.monotonic()
        idle = [v for v, st in self.builds.items() if now - st.last_activity > max_idle_seconds]
        reaped = []
        for version in idle:
            try:
                await self.abort(version, f"no upload activity for {int(max_idle_seconds)} s")
                reaped.append(version)
            except IndexError_:
                continue
        return reaped

    async def finish(self, version: str) -> tuple[VersionRecord, list[str]]:
        state = self._build(version)
        async with self._lifecycle, state.lock:
            record = state.record
            counts = Counter(c.doc_type for c in state.chunks)
            counts["rule_canonical"] = len(state.canonical)
            record.chunk_counts = dict(counts)
            record.recommendation_count = len(state.canonical)
            problems = self._validate(state, counts)
            folder = self._folder(version)
            if state.source_size:
                expected_sha = str(record.guideline.get("source_sha256", ""))
                got_sha = state.source_hash.hexdigest()
                if expected_sha and got_sha != expected_sha:
                    problems.append(
                        f"source PDF sha256 {got_sha[:12]} does not match the guideline's {expected_sha[:12]}"
                    )
            if problems:
                record.status = "failed"
                record.error = "; ".join(problems)
                self._discard_data(record)
                self.builds.pop(version, None)
                self.registry.save()
                log.warning("index_build_failed", version=version, problems=problems)
                return record, problems
            if state.source_size:
                os.replace(folder / _SOURCE_PART, folder / SOURCE_PDF)
                record.has_source_pdf = True
            write_json_atomic(folder / "canonical.json", state.canonical)
            write_json_atomic(folder / "chunks.json", [c.__dict__ for c in state.chunks])
            write_json_atomic(folder / "lexicon.json", state.lexicon)
            LexicalIndex.build([c.text for c in state.chunks]).save(folder / "bm25")
            record.status = "ready"
            self.builds.pop(version, None)
            self._prune(also_keep=version)
            log.info("index_build_ready", version=version, counts=record.chunk_counts)
            return record, []

    def _validate(self, state: BuildState, counts: Counter[str]) -> list[str]:
        record = state.record
        problems = []
        if not state.chunks:
            problems.append("no search chunks were uploaded")
        for doc_type, expected in sorted(record.expected_counts.items()):
            if counts.get(doc_type, 0) < expected:
                problems.append(
                    f"{doc_type}: {counts.get(doc_type, 0)} uploaded, knowledge base has {expected}"
                )
        missing = sorted({rid for c in state.chunks for rid in c.recommendation_ids} - set(state.canonical))
        if missing and state.canonical:
            problems.append(
                f"chunks reference recommendations with no canonical text: {', '.join(missing[:10])}"
            )
        elif missing:
            problems.append(
                f"chunks reference {len(missing)} recommendations but no canonical texts were uploaded"
            )
        if record.embedder_id != self.embedder.embedder_id:
            problems.append(
                f"embedder mismatch: built with {record.embedder_id}, serving {self.embedder.embedder_id}"
            )
        return problems

    async def abort(self, version: str, reason: str) -> VersionRecord:
        async with self._lifecycle:
            record = self.registry.get(version)
            if record is None:
                raise IndexError_("not_found", f"unknown index version {version!r}")
            if record.status != "building":
                raise IndexError_("precondition", f"index version {version} is {record.status}, not building")
            record.status = "failed"
            record.error = f"aborted: {reason or 'no reason given'}"
            self._discard_data(record)
            self.builds.pop(version, None)
            self.registry.save()
            return record

    # --- serving --------------------------------------------------------------------------

    async def activate(self, version: str) -> VersionRecord:
        async with self._lifecycle:
            record = self.registry.get(version)
            if record is None:
                raise IndexError_("not_found", f"unknown index version {version!r}")
            if record.status not in ("ready", "retired", "active"):
                raise IndexError_(
                    "precondition",
                    f"index version {version} is {record.status}; only ready versions activate",
                )
            if record.embedder_id != self.embedder.embedder_id:
                raise IndexError_(
                    "precondition",
                    f"index {version} was built with {record.embedder_id} but this service embeds with "
                    f"{self.embedder.embedder_id}",
                )
            if record.status == "active":
                return record
            loaded = await asyncio.get_running_loop().run_in_executor(None, self._load, record)
            state = self.registry.state
            old = state.active
            if old and old in state.versions:
                state.versions[old].status = "retired"
            record.status = "active"
            record.activated_at = now_iso()
            state.previous, state.active = old, version
            self.registry.save()  # the atomic switch
            self.serving = loaded
            self._prune()
            log.info("index_activated", version=version, previous=old)
            return record

    async def rollback(self) -> VersionRecord:
        previous = self.registry.state.previous
        if not previous or previous not in self.registry.state.versions:
            raise IndexError_("precondition", "there is no previous index version to roll back to")
        record = await self.activate(previous)
        # after rolling back, the version we left becomes the "previous" one
        return record

    def _load(self, record: VersionRecord) -> ServingIndex:
        folder = self._folder(record.version)
        chunks_raw = json.loads((folder / "chunks.json").read_text(encoding="utf-8"))
        chunks = {c["id"]: ChunkRecord(**c) for c in chunks_raw}
        order = [c["id"] for c in chunks_raw]
        collection = self.client.get_collection(record.collection_name)
        got = collection.get(ids=order, include=["embeddings"])
        embeddings = got["embeddings"]
        if embeddings is None or len(got["ids"]) != len(order):
            raise RuntimeError(f"index {record.version}: Chroma collection is missing embeddings")
        by_id = dict(zip(got["ids"], list(embeddings), strict=True))
        matrix = np.asarray([by_id[i] for i in order], dtype=np.float32)
        from retrieval.convert import canonical_from_dict, dict_to_struct, guideline_to_pb
        from retrieval.rerank import chunk_features
        from retrieval.search import QueryNormaliser

        canonical = json.loads((folder / "canonical.json").read_text(encoding="utf-8"))
        lexicon = json.loads((folder / "lexicon.json").read_text(encoding="utf-8"))
        return ServingIndex(
            record=record,
            collection=collection,
            chunks=chunks,
            order=order,
            matrix=matrix,
            canonical=canonical,
            lexicon=lexicon,
            lexical=LexicalIndex.load(folder / "bm25"),
            normaliser=QueryNormaliser(lexicon),
            canonical_pb={k: canonical_from_dict(v) for k, v in canonical.items()},
            canonical_lean_pb={
                k: canonical_from_dict({f: x for f, x in v.items() if f != "metadata"})
                for k, v in canonical.items()
            },
            metadata_pb={cid: dict_to_struct(c.metadata) for cid, c in chunks.items()},
            guideline_pb=guideline_to_pb(record.guideline),
            row_of={cid: i for i, cid in enumerate(order)},
            features=[
                chunk_features(
                    chunks[cid].text,
                    chunks[cid].doc_type,
                    [canonical[r] for r in chunks[cid].recommendation_ids if r in canonical],
                )
                for cid in order
            ],
        )

    def _prune(self, also_keep: str | None = None) -> None:
        """Keep KEEP_VERSIONS versions that hold data (always the active and the previous one, then
        the newest), and the newest FAILED_KEPT failed records; delete the rest, data and all.
        `also_keep` (a build that just finished, awaiting review or activation) is never pruned."""
        state = self.registry.state
        pinned = {v for v in (state.active, state.previous) if v}
        with_data = sorted(
            (r for r in state.versions.values() if r.status in ("ready", "retired", "active")),
            key=lambda r: r.seq,
            reverse=True,
        )
        room = max(0, self.keep_versions - len(pinned))
        keep = set(pinned) | ({also_keep} if also_keep else set())
        for record in with_data:
            if record.version not in keep and room:
                keep.add(record.version)
                room -= 1
        failed = sorted(
            (r for r in state.versions.values() if r.status == "failed"), key=lambda r: r.seq, reverse=True
        )
        drop = [r for r in with_data if r.version not in keep] + failed[FAILED_KEPT:]
        for record in drop:
            self._discard_data(record)
            del state.versions[record.version]
            self._browse_cache.pop(record.version, None)
            log.info("index_pruned", version=record.version, status=record.status)
        self.registry.save()

    def _discard_data(self, record: VersionRecord) -> None:
        """Remove a version's Chroma collection and folder (a failed, aborted or pruned build)."""
        self._drop_collection(record)
        shutil.rmtree(self._folder(record.version), ignore_errors=True)

    def source_pdf(self, version: str) -> Path | None:
        path = self._folder(version) / SOURCE_PDF
        return path if path.is_file() else None

    # --- browsing (any version that holds data) ---------------------------------------------

    def resolve(self, version: str) -> VersionRecord:
        """The record of `version` ("" = active) if it holds data; IndexError_ otherwise."""
        if not version:
            if self.serving is None:
                raise IndexError_("precondition", "no active NG12 index")
            return self.serving.record
        record = self.registry.get(version)
        if record is None or record.status not in ("ready", "retired", "active"):
            raise IndexError_("not_found", f"unknown index version {version!r} (or it holds no data)")
        return record

    def version_data(self, version: str) -> VersionData:
        record = self.resolve(version)
        serving = self.serving
        if serving is not None and serving.record.version == record.version:
            return VersionData(record, [serving.chunks[c] for c in serving.order], serving.canonical)
        cached = self._browse_cache.get(record.version)
        if cached is not None:
            self._browse_cache.move_to_end(record.version)
            return cached
        folder = self._folder(record.version)
        try:
            chunks = [
                ChunkRecord(**c) for c in json.loads((folder / "chunks.json").read_text(encoding="utf-8"))
            ]
            canonical = json.loads((folder / "canonical.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise IndexError_("not_found", f"index version {record.version} has no data on disk") from None
        data = VersionData(record, chunks, canonical)
        self._browse_cache[record.version] = data
        while len(self._browse_cache) > 2:
            self._browse_cache.popitem(last=False)
        return data

    def _folder(self, version: str) -> Path:
        return self.root / "versions" / version

    def _drop_collection(self, record: VersionRecord) -> None:
        try:
            self.client.delete_collection(record.collection_name)
        except Exception:  # noqa: BLE001 - already gone is fine
            log.debug("collection_already_gone", version=record.version)
