"""Serving: the index a retrieval process answers from, loaded whole and swapped in one step.

`ServingIndex` is everything a Search needs for one version, built in memory from storage
(`load_serving_index`). `IndexManager` holds the one served reference (`current`). A new version
is loaded completely first (vectors, BM25, rerank features, protobuf messages) and only then
swapped in by one assignment, so a query sees the old version or the new one, never half of
either: a Search reads `current` once and keeps that object for its whole answer.

The writer activates (load, commit the registry, swap, tell the replicas); a replica follows
(`sync`: re-read the registry, and when it names another version, load it and swap).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
from chromadb.api.models.Collection import Collection
from google.protobuf.struct_pb2 import Struct

from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12_common.logs import get_logger
from retrieval.convert import canonical_from_dict, dict_to_struct, guideline_to_pb
from retrieval.lexical import LexicalIndex
from retrieval.normalise import QueryNormaliser
from retrieval.records import ChunkRecord, IndexError_, VersionData
from retrieval.registry import VersionRecord
from retrieval.rerank import ChunkFeatures, chunk_features
from retrieval.storage import IndexStorage, StoredVersion

log = get_logger("retrieval.serving")

Listener = Callable[["ServingIndex | None"], Awaitable[None]]


@dataclass(frozen=True)
class ServingIndex:
    """Everything a Search needs for one active version, loaded in memory. Never mutated: a
    change of version (or of its record) is a new object swapped into IndexManager.current."""

    record: VersionRecord
    collection: Collection
    chunks: dict[str, ChunkRecord]
    order: list[str]  # chunk ids in matrix/BM25 row order
    matrix: npt.NDArray[np.float32]  # normalised embeddings, row per chunk id in `order`
    canonical: dict[str, dict[str, Any]]  # JSON of each recommendation, by id
    lexicon: list[dict[str, Any]]  # JSON terms
    lexical: LexicalIndex
    normaliser: QueryNormaliser  # built once per version
    canonical_pb: dict[str, pb.CanonicalRecommendation]  # id -> message, built once per version
    canonical_lean_pb: dict[str, pb.CanonicalRecommendation]  # the same without metadata (Search hits)
    metadata_pb: dict[str, Struct]  # chunk id -> Struct of its metadata, built once per version
    guideline_pb: pb.GuidelineInfo  # this version's guideline
    row_of: dict[str, int]  # chunk id -> row in `order`
    features: list[ChunkFeatures]  # rerank features per row of `order`, computed once per version

    @property
    def version(self) -> str:
        return self.record.version


def load_serving_index(stored: StoredVersion) -> ServingIndex:
    """Build the in-memory serving index of a stored version (CPU work, no I/O)."""
    chunks = {c.id: c for c in stored.chunks}
    order = [c.id for c in stored.chunks]
    canonical = stored.canonical
    return ServingIndex(
        record=stored.record,
        collection=stored.collection,
        chunks=chunks,
        order=order,
        matrix=stored.matrix,
        canonical=canonical,
        lexicon=stored.lexicon,
        lexical=stored.lexical,
        normaliser=QueryNormaliser(stored.lexicon),
        canonical_pb={k: canonical_from_dict(v) for k, v in canonical.items()},
        canonical_lean_pb={
            k: canonical_from_dict({f: x for f, x in v.items() if f != "metadata"})
            for k, v in canonical.items()
        },
        metadata_pb={cid: dict_to_struct(c.metadata) for cid, c in chunks.items()},
        guideline_pb=guideline_to_pb(stored.record.guideline),
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


class IndexManager:
    """The served version of this process, and the changes to it (activate, roll back, follow)."""

    def __init__(self, storage: IndexStorage) -> None:
        self.storage = storage
        self.current: ServingIndex | None = None
        self._listeners: list[Listener] = []
        self._sync_lock = asyncio.Lock()

    @property
    def writer(self) -> bool:
        return self.storage.writer

    def on_change(self, listener: Listener) -> None:
        """Call `listener(new)` after every swap (health status, metrics, telling replicas)."""
        self._listeners.append(listener)

    def load(self, record: VersionRecord) -> ServingIndex:
        """Read and build the serving index of `record` (blocking: run it off the event loop)."""
        return load_serving_index(self.storage.read_version(record))

    def start(self) -> None:
        """At start-up (blocking): recover the writer's interrupted builds, load the active version."""
        self.storage.recover()
        record = self.storage.active_record()
        if record is not None:
            self.current = self.load(record)
            log.info("index_loaded", version=record.version, chunks=len(self.current.order))

    async def _swap(self, new: ServingIndex | None) -> None:
        self.current = new  # the one assignment that changes what queries see
        for listener in self._listeners:
            try:
                await listener(new)
            except Exception as exc:  # noqa: BLE001 - a listener never undoes a swap
                log.warning("index_listener_failed", error=repr(exc))

    # --- the writer ----------------------------------------------------------------------------

    async def activate(self, version: str) -> VersionRecord:
        storage = self.storage
        async with storage.lifecycle:
            record = storage.activatable(version)
            current = self.current
            if record.status == "active" and current is not None and current.record.version == version:
                return record  # already served: nothing to swap
            loaded = await asyncio.get_running_loop().run_in_executor(None, self.load, record)
            old = storage.commit_active(version)
            await self._swap(loaded)
            await storage.prune()  # its file and Chroma deletes run in a worker thread
        log.info("index_activated", version=version, previous=old)
        return record

    async def rollback(self) -> VersionRecord:
        # after rolling back, the version we left becomes the "previous" one
        return await self.activate(self.storage.previous_version())

    # --- a replica -----------------------------------------------------------------------------

    async def sync(self) -> bool:
        """Follow the registry the writer saves: when it names another active version, load that
        version completely, then swap it in. True when the served version changed. A version that
        fails to load (Chroma unreachable, files not there yet) leaves the old one served; the next
        sync tries again."""
        async with self._sync_lock:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, self.storage.registry.reload_if_changed)
            record = self.storage.active_record()
            current = self.current
            if record is None:
                return False
            if current is not None and current.record.version == record.version:
                if current.record != record:
                    self.current = replace(current, record=record)
                return False
            try:
                loaded = await loop.run_in_executor(None, self.load, record)
            except Exception as exc:  # noqa: BLE001 - keep serving what we have; retried next sync
                log.warning("index_follow_failed", version=record.version, error=repr(exc))
                return False
            previous = current.record.version if current else None
            await self._swap(loaded)
            log.info("index_followed", version=record.version, previous=previous)
            return True

    # --- browsing --------------------------------------------------------------------------------

    def resolve(self, version: str) -> VersionRecord:
        """The record of `version` ("" = the served one) if it holds data; IndexError_ otherwise."""
        if not version:
            if self.current is None:
                raise IndexError_("precondition", "no active NG12 index")
            return self.current.record
        return self.storage.record_with_data(version)

    def version_data(self, version: str) -> VersionData:
        record = self.resolve(version)
        serving = self.current
        if serving is not None and serving.record.version == record.version:
            return VersionData(record, [serving.chunks[c] for c in serving.order], serving.canonical)
        return self.storage.version_data(record)
