"""Index versions on a real retrieval process: build while serving, abort, crash, activate, roll back.

Uses a second, fresh retrieval server (its own Chroma dir) and a slice of the real NG12
knowledge base (the one the session fixture built), so each build takes seconds.
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from ingestion.index_upload import IndexBuildFailed, upload_index
from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from ng12_common.knowledge import KnowledgeBase
from tests.support import kb_slice, start_retrieval, stop_process


class Server:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.port = 0
        self.proc = None
        self.start()

    def start(self) -> None:
        self.proc, self.port, _, _ = start_retrieval(self.tmp, self.port or None)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stub(self, channel: grpc.Channel) -> pb_grpc.RetrievalStub:
        return pb_grpc.RetrievalStub(channel)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("lifecycle"))
    yield s
    stop_process(s.proc)  # type: ignore[arg-type]


def _versions(addr: str) -> pb.ListIndexVersionsResponse:
    with grpc.insecure_channel(addr) as ch:
        return pb_grpc.RetrievalStub(ch).ListIndexVersions(pb.ListIndexVersionsRequest(), timeout=10)


def _search_version(addr: str) -> str:
    with grpc.insecure_channel(addr) as ch:
        r = pb_grpc.RetrievalStub(ch).Search(
            pb.SearchRequest(query="haemoptysis", top_k=3, mode=pb.SEARCH_MODE_CHAT), timeout=10
        )
    return r.index_version


def test_lifecycle(server: Server, real_kb: KnowledgeBase) -> None:
    # v1 built and activated
    v1 = upload_index(server.addr, kb_slice(real_kb, 0, 12))["version"]
    assert _search_version(server.addr) == v1

    # v2 builds while v1 answers queries in a loop: no query fails, all name v1 until activation
    failures: list[str] = []
    served: list[str] = []
    stop = threading.Event()

    def query_loop() -> None:
        with grpc.insecure_channel(server.addr) as ch:
            stub = pb_grpc.RetrievalStub(ch)
            while not stop.is_set():
                try:
                    r = stub.Search(
                        pb.SearchRequest(query="lump", top_k=3, mode=pb.SEARCH_MODE_CHAT), timeout=10
                    )
                    served.append(r.index_version)
                except grpc.RpcError as exc:
                    failures.append(repr(exc))

    loop = threading.Thread(target=query_loop)
    loop.start()
    try:
        v2 = upload_index(server.addr, kb_slice(real_kb, 0, 24), activate=False)["version"]
    finally:
        stop.set()
        loop.join()
    assert not failures and served and set(served) == {v1}
    assert {v.version: v.status for v in _versions(server.addr).versions}[v2] == "ready"

    # a build that dies mid-stream is aborted and never served
    def broken_progress(stage: str, fraction: float) -> None:
        if stage == "upload":
            raise RuntimeError("ingestion worker killed mid-upload")

    with pytest.raises(grpc.RpcError):
        upload_index(server.addr, kb_slice(real_kb, 0, 24), batch_size=4, progress=broken_progress)
    statuses = {v.version: v.status for v in _versions(server.addr).versions}
    assert "failed" in statuses.values() and _search_version(server.addr) == v1

    # a build that fails validation never becomes active
    kb_bad = kb_slice(real_kb, 0, 6)
    kb_bad = kb_bad.model_copy(update={"recommendations": kb_bad.recommendations[:2]})
    with pytest.raises(IndexBuildFailed) as failed:
        upload_index(server.addr, kb_bad)
    assert any("no canonical text" in p for p in failed.value.problems), failed.value.problems
    with grpc.insecure_channel(server.addr) as ch, pytest.raises(grpc.RpcError) as err:
        pb_grpc.RetrievalStub(ch).ActivateIndex(
            pb.ActivateIndexRequest(version=failed.value.version), timeout=10
        )
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert _search_version(server.addr) == v1

    # activate v2, then roll back to v1
    with grpc.insecure_channel(server.addr) as ch:
        stub = pb_grpc.RetrievalStub(ch)
        assert stub.ActivateIndex(pb.ActivateIndexRequest(version=v2), timeout=30).status == "active"
        assert _search_version(server.addr) == v2
        assert stub.RollbackIndex(pb.RollbackIndexRequest(), timeout=30).version == v1
    assert _search_version(server.addr) == v1

    # a crash in the middle of a build: the restarted server serves v1 and marks the build failed
    with grpc.insecure_channel(server.addr) as ch:
        stub = pb_grpc.RetrievalStub(ch)
        building = stub.BeginIndex(pb.BeginIndexRequest(description="crash test"), timeout=10).version
    server.proc.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
    server.proc.wait(10)  # type: ignore[union-attr]
    server.start()
    after = {v.version: v for v in _versions(server.addr).versions}
    assert after[building].status == "failed" and "interrupted" in after[building].error
    assert _versions(server.addr).active_version == v1
    assert _search_version(server.addr) == v1

    # an index built with another embedder is never searched with this one
    stop_process(server.proc)  # type: ignore[arg-type]
    registry_path = server.tmp / "chroma" / "registry.json"
    registry = json.loads(registry_path.read_text(encoding="utf-8"))
    registry["versions"][v1]["embedder_id"] = "vertex:text-embedding-005@768"
    registry_path.write_text(json.dumps(registry), encoding="utf-8")
    server.start()
    with grpc.insecure_channel(server.addr) as ch, pytest.raises(grpc.RpcError) as err:
        pb_grpc.RetrievalStub(ch).Search(
            pb.SearchRequest(query="haemoptysis", top_k=3, mode=pb.SEARCH_MODE_CHAT), timeout=10
        )
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "vertex:text-embedding-005@768" in err.value.details()
    assert "all-MiniLM-L6-v2" in err.value.details()
