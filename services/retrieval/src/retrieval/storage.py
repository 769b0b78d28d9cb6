"""Index storage: versions in ChromaDB and on disk, builds, the registry, pruning.

One version = one Chroma collection (`ng12-chunks-vN`) holding the embedded search chunks,
and a folder `versions/vN/` holding the canonical recommendations (verbatim, by id, never
embedded), the chunk records, the lexicon, the BM25 index and the source PDF. Builds always go
into a new version; only a complete, validated version can be activated, and activation is one
atomic registry write (the loading and the swap of what is served are serving.py's).

Chroma is embedded (`PersistentClient` on `<index dir>/chroma`, one process: `make run`) or a
Chroma server (`CHROMA_HOST`: `chroma run`, shared by every replica). Storage has one writer
(`INDEX_ROLE=writer`): it builds, activates and prunes. Replicas (`INDEX_ROLE=replica`) open the
same index directory and Chroma server read-only: every write method refuses on them.

The lifecycle methods are coroutines on retrieval's event loop: they change the registry in
memory there (under `lifecycle`), and do their file and Chroma work (writing a finished version,
removing a failed or pruned one, saving the registry) in a worker thread (`asyncio.to_thread`),
so searches keep being answered meanwhile. The browse cache is shared by those threads and the
loop, behind its own lock.

Removing a version's data can fail: deleting a Chroma collection writes to Chroma's database,
which a full disk refuses (and a Chroma server may be unreachable). Such a version is named in the
registry's `pending_removal` and its removal retried by `retry_pending_removals` (the server's
maintenance pass) and whenever another version's data is removed or pruned, until it succeeds; a
registry that could not be saved then (a full disk again) is saved by that pass too.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import chromadb
import numpy as np
import numpy.typing as npt
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings as ChromaSettings
from chromadb.errors import NotFoundError

from ng12_common.logs import get_logger
from retrieval.embeddings import EmbeddingProvider
from retrieval.lexical import LexicalIndex
from retrieval.metrics import REMOVALS_PENDING
from retrieval.records import ChunkRecord, IndexError_, VersionData
from retrieval.registry import (
    Registry,
    RegistryState,
    VersionRecord,
    collection_name,
    now_iso,
    write_json_atomic,
)

if TYPE_CHECKING:
    from hashlib import _Hash

log = get_logger("retrieval.storage")

SOURCE_PDF = "source.pdf"
_SOURCE_PART = ".source.pdf.part"
FAILED_KEPT = 10  # failed builds' records kept for the admin's history (they hold no data)
READ_ONLY = (
    "this retrieval process is a read-only replica (INDEX_ROLE=replica): index changes go to the "
    "writer (RETRIEVAL_WRITER_ADDR)"
)


@dataclass(frozen=True)
class ChromaLocation:
    """Where the vectors live: a Chroma server (host set) or embedded under `path`."""

    path: Path
    host: str = ""
    port: int = 8000

    def client(self) -> ClientAPI:
        settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        if self.host:
            return chromadb.HttpClient(host=self.host, port=self.port, settings=settings)
        return chromadb.PersistentClient(path=str(self.path), settings=settings)

    def describe(self) -> str:
        return f"server {self.host}:{self.port}" if self.host else f"embedded {self.path}"


@dataclass
class BuildState:
    record: VersionRecord
    chunk_ids: set[str] = field(default_factory=set)
    chunks: list[ChunkRecord] = field(default_factory=list)
    canonical: dict[str, dict[str, Any]] = field(default_factory=dict)
    lexicon: list[dict[str, Any]] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    source_size: int = 0
    source_hash: _Hash = field(default_factory=hashlib.sha256)
    last_activity: float = field(default_factory=time.monotonic)


@dataclass
class StoredVersion:
    """A version's data as storage holds it, read whole (serving builds its index from this)."""

    record: VersionRecord
    collection: Collection
    chunks: list[ChunkRecord]  # in matrix/BM25 row order
    matrix: npt.NDArray[np.float32]  # normalised embeddings, one row per chunk
    canonical: dict[str, dict[str, Any]]
    lexicon: list[dict[str, Any]]
    lexical: LexicalIndex


class IndexStorage:
    def __init__(
        self,
        root: Path,
        embedder: EmbeddingProvider,
        keep_versions: int = 2,
        *,
        chroma: ChromaLocation | None = None,
        writer: bool = True,
    ) -> None:
        self.root = root
        self.embedder = embedder
        self.keep_versions = max(2, keep_versions)
        self.writer = writer
        self.chroma = chroma or ChromaLocation(root / "chroma")
        self._browse_cache: OrderedDict[str, VersionData] = OrderedDict()
        self._browse_lock = threading.Lock()  # version_data runs in worker threads
        self.registry = Registry(root)
        self.client = self.chroma.client()
        self.builds: dict[str, BuildState] = {}
        self.lifecycle = asyncio.Lock()  # one lifecycle change at a time (begin, finish, activate...)
        self._unsaved = False  # the registry changed in memory but could not be saved (a full disk)
        REMOVALS_PENDING.set(len(self.registry.state.pending_removal))

    def _writable(self) -> None:
        if not self.writer:
            raise IndexError_("precondition", READ_ONLY)

    # --- start-up -------------------------------------------------------------------------

    def recover(self) -> None:
        """Fail builds a crash of the writer left behind (their data removed). Writer only: a
        replica cannot tell a crashed build from one the writer is running."""
        if not self.writer:
            return
        interrupted = []
        for rec in self.registry.state.versions.values():
            if rec.status == "building":
                rec.status = "failed"
                rec.error = "interrupted: the retrieval process stopped during the build"
                interrupted.append(rec)
        if interrupted or self.registry.state.pending_removal:
            self._discard_and_save(interrupted)

    def active_record(self) -> VersionRecord | None:
        active = self.registry.state.active
        if not active:
            return None
        record = self.registry.get(active)
        if record is None:
            raise RuntimeError(f"registry names active version {active} but has no record of it")
        return record

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
        self._writable()
        async with self.lifecycle:
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
        self._writable()
        state = self.builds.get(version)
        if state is None:
            rec = self.registry.get(version)
            if rec is None:
                raise IndexError_("not_found", f"unknown index version {version!r}", "index_version")
            raise IndexError_("precondition", f"index version {version} is {rec.status}, not building")
        return state

    def _still_building(self, version: str, state: BuildState) -> None:
        """Called with the build's lock held: the build was not failed or aborted while this
        write waited for the lock (its data is removed; writing now would bring it back)."""
        if self.builds.get(version) is not state:
            self._build(version)  # raises: unknown, or no longer building
            raise IndexError_("precondition", f"index version {version} was restarted while writing")

    async def add(
        self,
        version: str,
        chunks: list[ChunkRecord],
        canonical: list[dict[str, Any]],
        lexicon: list[dict[str, Any]],
    ) -> None:
        state = self._build(version)
        async with state.lock:
            self._still_building(version, state)
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
                vectors = await _finish_in_thread(
                    loop.run_in_executor(None, self.embedder.embed_documents, [c.text for c in to_embed])
                )
                await _finish_in_thread(
                    asyncio.to_thread(self._store_vectors, state.record, to_embed, vectors)
                )
            state.chunks.extend(to_embed)
            state.last_activity = time.monotonic()

    def _store_vectors(
        self, record: VersionRecord, chunks: list[ChunkRecord], vectors: npt.NDArray[np.float32]
    ) -> None:
        """Add embedded chunks to the version's Chroma collection (blocking: a worker thread)."""
        collection = self.client.get_collection(record.collection_name)
        collection.add(
            ids=[c.id for c in chunks],
            embeddings=vectors,
            documents=[c.text for c in chunks],
            metadatas=[
                {
                    "doc_type": c.doc_type,
                    "page": c.page,
                    "section": c.section or "",
                    "recommendation_ids": ",".join(c.recommendation_ids),
                }
                for c in chunks
            ],
        )

    async def add_source(self, version: str, data: bytes) -> None:
        """Append a piece of the version's source PDF (written beside its data, renamed in at finish)."""
        state = self._build(version)
        async with state.lock:
            self._still_building(version, state)
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
        # a write in progress (its lock held: embedding a slow batch) is activity, not idleness;
        # if its client is gone, the cancelled upload fails the build once that write ends
        idle = [
            v
            for v, st in self.builds.items()
            if now - st.last_activity > max_idle_seconds and not st.lock.locked()
        ]
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
        async with self.lifecycle, state.lock:
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
                self.builds.pop(version, None)
                await _finish_in_thread(asyncio.to_thread(self._discard_and_save, [record]))
                log.warning("index_build_failed", version=version, problems=problems)
                return record, problems
            await _finish_in_thread(asyncio.to_thread(self._write_version, folder, state))
            record.has_source_pdf = bool(state.source_size)
            record.status = "ready"  # only once its files are all written
            self.builds.pop(version, None)
            await self.prune(also_keep=version)
            log.info("index_build_ready", version=version, counts=record.chunk_counts)
            return record, []

    @staticmethod
    def _write_version(folder: Path, state: BuildState) -> None:
        """A finished build's files: its source PDF renamed in, canonical recommendations, chunk
        records, lexicon and BM25 index (blocking: a worker thread)."""
        if state.source_size:
            os.replace(folder / _SOURCE_PART, folder / SOURCE_PDF)
        write_json_atomic(folder / "canonical.json", state.canonical)
        write_json_atomic(folder / "chunks.json", [c.__dict__ for c in state.chunks])
        write_json_atomic(folder / "lexicon.json", state.lexicon)
        LexicalIndex.build([c.text for c in state.chunks]).save(folder / "bm25")

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
        self._writable()
        async with self.lifecycle:
            record = self.registry.get(version)
            if record is None:
                raise IndexError_("not_found", f"unknown index version {version!r}", "index_version")
            if record.status != "building":
                raise IndexError_("precondition", f"index version {version} is {record.status}, not building")
            record.status = "failed"
            record.error = f"aborted: {reason or 'no reason given'}"
            state = self.builds.pop(version, None)
            if state is not None:
                async with state.lock:  # a write still running for its cancelled upload ends first
                    pass
            await _finish_in_thread(asyncio.to_thread(self._discard_and_save, [record]))
            return record

    # --- activation (serving.IndexManager loads the version, then commits it here) -----------

    def activatable(self, version: str) -> VersionRecord:
        """The record of `version` if it may be activated; IndexError_ otherwise."""
        self._writable()
        record = self.registry.get(version)
        if record is None:
            raise IndexError_("not_found", f"unknown index version {version!r}", "index_version")
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
        return record

    def commit_active(self, version: str) -> str | None:
        """Name `version` the active one in the registry (one atomic write); returns the one it
        replaced. The caller holds `lifecycle` and has loaded the version completely. The new
        state is written from a copy first and applied in memory only once the write succeeded:
        a failed write (a full disk) leaves the registry, in memory and on disk, as it was."""
        self._writable()
        state = self.registry.state
        old = state.active
        activated_at = now_iso()
        changed = state.model_copy(deep=True)
        _mark_active(changed, version, activated_at)
        self.registry.save(changed)  # the atomic switch
        _mark_active(state, version, activated_at)
        return old

    def previous_version(self) -> str:
        previous = self.registry.state.previous
        if not previous or previous not in self.registry.state.versions:
            raise IndexError_("precondition", "there is no previous index version to roll back to")
        return previous

    def read_version(self, record: VersionRecord) -> StoredVersion:
        """Everything stored for `record`: chunk records, vectors (from its Chroma collection),
        canonical recommendations, lexicon and BM25 index. Blocking (file and Chroma reads)."""
        folder = self._folder(record.version)
        chunks_raw = json.loads((folder / "chunks.json").read_text(encoding="utf-8"))
        chunks = [ChunkRecord(**c) for c in chunks_raw]
        order = [c.id for c in chunks]
        collection = self.client.get_collection(record.collection_name)
        got = collection.get(ids=order, include=["embeddings"])
        embeddings = got["embeddings"]
        if embeddings is None or len(got["ids"]) != len(order):
            raise RuntimeError(f"index {record.version}: Chroma collection is missing embeddings")
        by_id = dict(zip(got["ids"], list(embeddings), strict=True))
        return StoredVersion(
            record=record,
            collection=collection,
            chunks=chunks,
            matrix=np.asarray([by_id[i] for i in order], dtype=np.float32),
            canonical=json.loads((folder / "canonical.json").read_text(encoding="utf-8")),
            lexicon=json.loads((folder / "lexicon.json").read_text(encoding="utf-8")),
            lexical=LexicalIndex.load(folder / "bm25"),
        )

    async def prune(self, also_keep: str | None = None) -> None:
        """Keep KEEP_VERSIONS versions that hold data (always the active and the previous one, then
        the newest), and the newest FAILED_KEPT failed records; delete the rest, data and all.
        `also_keep` (a build that just finished, awaiting review or activation) is never pruned.
        The caller holds `lifecycle`. The records go at once; their data in a worker thread."""
        drop = self._unregister_prunable(also_keep)
        await _finish_in_thread(asyncio.to_thread(self._discard_and_save, drop))
        for record in drop:
            log.info("index_pruned", version=record.version, status=record.status)

    def _unregister_prunable(self, also_keep: str | None) -> list[VersionRecord]:
        """Remove the records prune drops from the registry (in memory) and the browse cache;
        return them, their data still to discard."""
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
            del state.versions[record.version]
        with self._browse_lock:
            for record in drop:
                self._browse_cache.pop(record.version, None)
        return drop

    def _discard_and_save(self, records: list[VersionRecord]) -> None:
        """Remove these versions' data and retry the removals still pending, then save the
        registry (blocking: a worker thread; the caller holds `lifecycle`). A save the disk refuses
        is left to the next maintenance pass: the registry in memory is the true one meanwhile."""
        for record in records:
            self._discard_data(record.version)
        self._retry_removals()
        self._save_or_defer()

    def _discard_data(self, version: str) -> bool:
        """Remove a version's folder, then its Chroma collection (a failed, aborted or pruned
        build); True once both are gone. What cannot be removed now is named in the registry's
        `pending_removal` (saved by the caller) and retried later."""
        errors = []
        try:
            shutil.rmtree(self._folder(version))  # first: it frees room for Chroma's delete
        except FileNotFoundError:
            pass
        except Exception as exc:  # noqa: BLE001 - an OSError (a full disk...) or worse: retried later
            errors.append(f"folder: {exc!r}")
        try:
            self.client.delete_collection(collection_name(version))
        except NotFoundError:
            pass  # never created, or already gone
        except Exception as exc:  # noqa: BLE001 - a full disk, an unreachable server...: retried later
            errors.append(f"collection: {exc!r}")
        pending = self.registry.state.pending_removal
        if errors and version not in pending:
            pending.append(version)
            log.warning("index_data_removal_failed", version=version, errors=errors, retried=True)
        elif not errors and version in pending:
            pending.remove(version)
            log.info("index_data_removed_on_retry", version=version)
        REMOVALS_PENDING.set(len(pending))
        return not errors

    def _retry_removals(self) -> list[str]:
        """Try again to remove the data of the versions in `pending_removal` (blocking); returns
        the ones removed now. A version that holds data again (it cannot: names are never reused)
        is only taken off the list."""
        state = self.registry.state
        removed = []
        for version in list(state.pending_removal):
            record = state.versions.get(version)
            if record is not None and record.status != "failed":
                state.pending_removal.remove(version)
                self._unsaved = True
                continue
            if self._discard_data(version):
                removed.append(version)
                self._unsaved = True
        REMOVALS_PENDING.set(len(state.pending_removal))
        return removed

    def _save_or_defer(self) -> None:
        """Save the registry; on an OSError (ENOSPC, say) keep it unsaved for the next pass."""
        try:
            self.registry.save()
        except OSError as exc:
            self._unsaved = True
            log.warning("registry_save_deferred", error=repr(exc))
        else:
            self._unsaved = False

    async def retry_pending_removals(self) -> list[str]:
        """The maintenance pass: retry the data removals that failed, and save a registry that
        could not be saved, in a worker thread. Returns the versions whose data is gone now."""
        if not self.writer or not (self.registry.state.pending_removal or self._unsaved):
            return []
        async with self.lifecycle:

            def retry() -> list[str]:
                removed = self._retry_removals()
                if self._unsaved:
                    self._save_or_defer()
                return removed

            return await asyncio.to_thread(retry)

    def source_pdf(self, version: str) -> Path | None:
        path = self._folder(version) / SOURCE_PDF
        return path if path.is_file() else None

    # --- browsing (any version that holds data) ---------------------------------------------

    def record_with_data(self, version: str) -> VersionRecord:
        """The record of `version` if it holds data; IndexError_ otherwise."""
        if not self.writer:
            self.registry.reload_if_changed()
        record = self.registry.get(version)
        if record is None or record.status not in ("ready", "retired", "active"):
            raise IndexError_(
                "not_found", f"unknown index version {version!r} (or it holds no data)", "index_version"
            )
        return record

    def version_data(self, record: VersionRecord) -> VersionData:
        """Chunks and canonical recommendations of a version read from disk (two kept cached).
        Blocking: called from worker threads, so the cache is only touched under its lock."""
        with self._browse_lock:
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
            raise IndexError_(
                "not_found", f"index version {record.version} has no data on disk", "index_version"
            ) from None
        data = VersionData(record, chunks, canonical)
        with self._browse_lock:
            if record.version in self.registry.state.versions:  # not pruned while it was read
                self._browse_cache[record.version] = data
                while len(self._browse_cache) > 2:
                    self._browse_cache.popitem(last=False)
        return data

    def _folder(self, version: str) -> Path:
        return self.root / "versions" / version


T = TypeVar("T")


async def _finish_in_thread(work: Awaitable[T]) -> T:
    """Await blocking work running in a thread, to its end even when the caller is cancelled (an
    upload whose client vanished is cancelled by grpc while it fails its build): the work still
    runs (a removal is not lost once the status says failed), and a write holds the build's lock
    until it is done (its removal would race the write)."""
    future = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait([future])
        raise


def _mark_active(state: RegistryState, version: str, activated_at: str) -> None:
    """Make `version` the active one in `state`: the one it replaces is retired and becomes the
    previous one (activating the active version again keeps the previous one)."""
    old = state.active
    if old != version:
        if old and old in state.versions:
            state.versions[old].status = "retired"
        state.previous = old
    record = state.versions[version]
    record.status = "active"
    record.activated_at = activated_at
    state.active = version
