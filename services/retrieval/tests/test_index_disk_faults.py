"""The retrieval writer when its disk refuses a write, on a real index (real Chroma, real PDF).

A fresh retrieval process builds two versions from a slice of the real knowledge base, each with
its own source PDF: v1 (active) and v2 (ready). Then:

- a page whose cache cannot be written (its `pages` folder is a file: mkdir fails with a real
  OSError) is still rendered and answered over gRPC, and cached once the disk allows it;
- after that process stops, the same index is opened in this process (real storage, real
  Chroma) to inject the two failures a running server cannot be made to produce on demand: the
  registry save of an activation failing once (a full disk), and a version pruned while one of
  its pages was being rendered.
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from ingestion.index_upload import upload_index
from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from ng12_common.knowledge import KnowledgeBase
from retrieval import pages
from retrieval.embeddings import LocalMiniLM
from retrieval.pages import PageRenderer
from retrieval.registry import RegistryState
from retrieval.serving import IndexManager
from retrieval.storage import IndexStorage
from tests.support import kb_slice, start_retrieval, stop_process

PNG = b"\x89PNG\r\n\x1a\n"


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


def test_a_page_whose_cache_cannot_be_written_is_still_answered(built: BuiltIndex) -> None:
    cache = built.root / "versions" / built.v1 / "pages"
    shutil.rmtree(cache, ignore_errors=True)
    cache.write_text("not a folder")  # mkdir pages/ fails: the cache cannot be written
    with grpc.insecure_channel(built.addr) as channel:
        stub = pb_grpc.RetrievalStub(channel)
        page = stub.RenderPage(pb.RenderPageRequest(page=9, scale=2.0), timeout=60)
        assert page.png.startswith(PNG) and page.index_version == built.v1
        assert "page_cache_write_failed" in built.log_path.read_text(errors="replace")

        cache.unlink()  # the disk is back: the next render is cached
        again = stub.RenderPage(pb.RenderPageRequest(page=9, scale=2.0), timeout=60)
    assert again.png == page.png
    assert [p.name for p in cache.iterdir()] == ["p9-s200-none.png"]


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


async def test_a_render_does_not_bring_back_a_version_pruned_meanwhile(
    stopped: BuiltIndex, opened: IndexManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager, storage = opened, opened.storage
    assert manager.current is not None
    # a version that holds data but is not served: its page is read from its folder on disk
    retired = next(v for v in (stopped.v1, stopped.v2) if v != manager.current.record.version)
    folder = stopped.root / "versions" / retired
    shutil.rmtree(folder / "pages", ignore_errors=True)
    draw = pages._draw

    def draw_then_prune(*args: Any, **kwargs: Any) -> bytes:
        png = draw(*args, **kwargs)
        # what prune does to the version while its page is being drawn: the record, then the data
        del storage.registry.state.versions[retired]
        shutil.rmtree(folder)
        return png

    monkeypatch.setattr(pages, "_draw", draw_then_prune)
    renderer = PageRenderer(manager)
    try:
        page = await renderer.render(retired, 9, "", 1.0)
    finally:
        renderer.close()
    assert page.png.startswith(PNG) and page.version == retired
    assert not folder.exists()  # no versions/<pruned>/pages/ recreated
    assert "pages" not in {p.name for p in (stopped.root / "versions").iterdir()}
