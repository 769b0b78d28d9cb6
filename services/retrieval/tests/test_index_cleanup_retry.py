"""A failed build whose data cannot be removed at once is removed later, on real processes: a
real Chroma server (`chroma run`) and a retrieval writer using it. The Chroma server is stopped
before the build is aborted, so deleting its collection fails (as it does on a full disk, where
the delete cannot write to Chroma's database); the version is named in the registry's
`pending_removal`, and once Chroma is back the writer's maintenance pass
(INDEX_CLEANUP_RETRY_SECONDS, 1 s here) removes the collection and clears the list on disk."""

from __future__ import annotations

import json
import sqlite3
import time
import urllib.request
from pathlib import Path

import chromadb
import grpc

from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from tests.support import start_chroma_server, start_retrieval, stop_process


def _pending(index_dir: Path) -> list[str]:
    registry = json.loads((index_dir / "registry.json").read_text(encoding="utf-8"))
    return list(registry.get("pending_removal", []))


def _collections(port: int) -> set[str]:
    client = chromadb.HttpClient(host="127.0.0.1", port=port)
    return {c.name for c in client.list_collections()}


def _collections_on_disk(chroma_data: Path) -> set[str]:
    """The collections in a stopped Chroma server's own database (what it will serve on restart)."""
    with sqlite3.connect(chroma_data / "chroma.sqlite3") as db:
        return {name for (name,) in db.execute("SELECT name FROM collections")}


def _pending_metric(metrics_port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("ng12_retrieval_index_removals_pending ")]
    return float(line.rsplit(" ", 1)[1])


def test_a_collection_that_could_not_be_deleted_is_deleted_once_chroma_can(tmp_path: Path) -> None:
    chroma, chroma_port = start_chroma_server(tmp_path)
    index_dir = tmp_path / "index"
    env = {
        "CHROMA_DIR": str(index_dir),
        "CHROMA_HOST": "127.0.0.1",
        "CHROMA_PORT": str(chroma_port),
        "INDEX_CLEANUP_RETRY_SECONDS": "1",
    }
    writer, port, metrics_port, log_path = start_retrieval(tmp_path / "writer", extra_env=env)
    try:
        stub = pb_grpc.RetrievalStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        version = stub.BeginIndex(pb.BeginIndexRequest(description="cleanup retry"), timeout=30).version
        collection = f"ng12-chunks-{version}"
        assert collection in _collections(chroma_port)

        stop_process(chroma)  # deleting the collection now fails
        record = stub.AbortIndex(pb.AbortIndexRequest(version=version, reason="test"), timeout=60)
        assert record.status == "failed", record
        assert _pending(index_dir) == [version]  # remembered on disk, not only logged
        assert _pending_metric(metrics_port) == 1.0
        assert "index_data_removal_failed" in log_path.read_text(errors="replace")

        # the stopped server's data still holds the collection (read from its database: once the
        # server is back, the writer's 1 s maintenance pass may delete it before a client could list it)
        assert collection in _collections_on_disk(tmp_path / "chroma-server")
        chroma, _ = start_chroma_server(tmp_path, port=chroma_port)

        def left() -> bool:
            return bool(_pending(index_dir)) or collection in _collections(chroma_port)

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and left():
            time.sleep(0.25)
        assert collection not in _collections(chroma_port)
        assert _pending(index_dir) == []
        assert _pending_metric(metrics_port) == 0.0
        listed = {v.version: v.status for v in stub.ListIndexVersions(pb.ListIndexVersionsRequest()).versions}
        assert listed[version] == "failed"  # its record stays for the admin's history
    finally:
        stop_process(writer)  # type: ignore[arg-type]
        stop_process(chroma)
