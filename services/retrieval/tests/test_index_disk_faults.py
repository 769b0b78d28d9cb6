"""The retrieval writer when its disk refuses a write, on a real index (real Chroma, real PDF).

A fresh retrieval process builds two versions from a slice of the real knowledge base, each with
its own source PDF: v1 (active) and v2 (ready). After that process stops, the same index is
opened in this process (real storage, real Chroma) to inject what a running server cannot be
made to produce on demand: the registry save of an activation failing once (a full disk).
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ingestion.index_upload import upload_index
from ng12_common.knowledge import KnowledgeBase
from retrieval.embeddings import LocalMiniLM
from retrieval.registry import RegistryState
from retrieval.serving import IndexManager
from retrieval.storage import IndexStorage
from tests.support import kb_slice, start_retrieval, stop_process


@dataclass
class BuiltIndex:
    proc: Any
    addr: str
    root: Path  # CHROMA_DIR: registry.json, versions/, chroma/
    log_path: Path
    v1: str  # active
    v2: str  # ready


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory, real_kb: KnowledgeBase, ng12_pdf: Path
) -> Iterator[BuiltIndex]:
    tmp = tmp_path_factory.mktemp("disk-faults")
    proc, port, _, log_path = start_retrieval(tmp)
    try:
        addr = f"127.0.0.1:{port}"
        v1 = upload_index(addr, kb_slice(real_kb, 0, 12), pdf_path=ng12_pdf)["version"]
        v2 = upload_index(addr, kb_slice(real_kb, 12, 24), pdf_path=ng12_pdf, activate=False)["version"]
        yield BuiltIndex(proc, addr, tmp / "chroma", log_path, v1, v2)
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def stopped(built: BuiltIndex) -> BuiltIndex:
    """The built index with its server stopped (one process opens an embedded Chroma at a time)."""
    stop_process(built.proc)
    return built


@pytest.fixture(scope="module")
def opened(stopped: BuiltIndex) -> IndexManager:
    """The stopped server's index opened in this process as its writer, serving v1 or v2."""
    manager = IndexManager(IndexStorage(stopped.root, LocalMiniLM(), keep_versions=3))
    manager.start()
    return manager


def _on_disk(root: Path) -> RegistryState:
    return RegistryState.model_validate_json((root / "registry.json").read_text(encoding="utf-8"))


async def test_a_failed_activation_save_changes_nothing_and_a_retry_activates(
    stopped: BuiltIndex, opened: IndexManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    v1, v2 = stopped.v1, stopped.v2
    manager, storage = opened, opened.storage
    assert manager.current is not None and manager.current.record.version == v1
    before_disk = (stopped.root / "registry.json").read_text(encoding="utf-8")
    before_memory = storage.registry.state.model_dump()

    real_save = storage.registry.save
    failures = [OSError(errno.ENOSPC, "No space left on device")]

    def save_once_failing(state: RegistryState | None = None) -> None:
        if failures:
            raise failures.pop()
        real_save(state)

    monkeypatch.setattr(storage.registry, "save", save_once_failing)
    with pytest.raises(OSError, match="No space left"):
        await manager.activate(v2)
    # nothing changed: not in memory, not on disk, not what is served
    assert storage.registry.state.model_dump() == before_memory
    assert (stopped.root / "registry.json").read_text(encoding="utf-8") == before_disk
    assert manager.current.record.version == v1

    # the retry activates for real (before: memory said v2 was active, so it answered at once)
    record = await manager.activate(v2)
    assert record.status == "active" and manager.current.record.version == v2
    disk = _on_disk(stopped.root)
    assert (disk.active, disk.previous) == (v2, v1)
    assert {v: disk.versions[v].status for v in (v1, v2)} == {v1: "retired", v2: "active"}
    assert storage.registry.state.model_dump() == disk.model_dump()

    # activating the served version again is a no-op that keeps the previous one
    await manager.activate(v2)
    assert (_on_disk(stopped.root).active, _on_disk(stopped.root).previous) == (v2, v1)
