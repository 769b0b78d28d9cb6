"""UploadChunks' end marker, on the session's real retrieval process: a chunk stream that ends
without its `last` message (its client closed it early, or was killed mid-stream) fails the build
and removes its data at once, not after the idle reaper (BUILD_IDLE_TIMEOUT_SECONDS, 600 s)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from tests.support import RetrievalProcess, chroma_collections

LEXICON = [pb.LexiconTerm(concept="dysphagia", label="dysphagia", synonyms=["swallowing difficulty"])]


def _status(stub: pb_grpc.RetrievalStub, version: str) -> pb.IndexVersion | None:
    listed = stub.ListIndexVersions(pb.ListIndexVersionsRequest(), timeout=10).versions
    return next((v for v in listed if v.version == version), None)


def _failed_within(stub: pb_grpc.RetrievalStub, version: str, seconds: float) -> pb.IndexVersion | None:
    """The version's record once it is no longer building (None: pruned), within `seconds`."""
    deadline = time.monotonic() + seconds
    record = _status(stub, version)
    while record is not None and record.status == "building" and time.monotonic() < deadline:
        time.sleep(0.2)
        record = _status(stub, version)
    return record


def _assert_data_gone(server: RetrievalProcess, version: str, seconds: float = 40.0) -> None:
    """The failed build's folder and Chroma collection are removed right after its status is set
    (folder first, then the collection; what a loaded machine fails to remove is retried by the
    writer's maintenance pass, INDEX_CLEANUP_RETRY_SECONDS): wait for both, at most `seconds`."""
    folder = server.chroma_dir / "versions" / version
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (
        folder.exists() or f"ng12-chunks-{version}" in chroma_collections(server.chroma_dir)
    ):
        time.sleep(0.2)
    assert not folder.exists()
    assert f"ng12-chunks-{version}" not in chroma_collections(server.chroma_dir)


@pytest.fixture
def stub(retrieval_server: RetrievalProcess) -> pb_grpc.RetrievalStub:
    return pb_grpc.RetrievalStub(grpc.insecure_channel(retrieval_server.addr))


def test_a_stream_closed_without_its_last_message_fails_the_build_at_once(
    stub: pb_grpc.RetrievalStub, retrieval_server: RetrievalProcess
) -> None:
    active = stub.GetActiveIndex(pb.GetActiveIndexRequest(), timeout=10).version
    version = stub.BeginIndex(pb.BeginIndexRequest(description="no end marker"), timeout=10).version
    assert f"ng12-chunks-{version}" in chroma_collections(retrieval_server.chroma_dir)
    with pytest.raises(grpc.RpcError) as cut:
        stub.UploadChunks(iter([pb.UploadChunksRequest(version=version, lexicon=LEXICON)]), timeout=30)
    assert cut.value.code() == grpc.StatusCode.ABORTED, cut.value.details()
    assert "cut off" in (cut.value.details() or "")
    record = _status(stub, version)  # failed before the call answered: no waiting
    assert record is not None and record.status == "failed" and "cut off" in record.error, record
    _assert_data_gone(retrieval_server, version)
    assert stub.GetActiveIndex(pb.GetActiveIndexRequest(), timeout=10).version == active


def test_a_client_killed_mid_stream_fails_its_build_at_once(
    stub: pb_grpc.RetrievalStub, retrieval_server: RetrievalProcess, tmp_path: Path
) -> None:
    active = stub.GetActiveIndex(pb.GetActiveIndexRequest(), timeout=10).version
    script = tmp_path / "killed_upload.py"
    script.write_text(
        "import sys, time, grpc\n"
        "from ng12.retrieval.v1 import retrieval_pb2 as pb, retrieval_pb2_grpc as g\n"
        "stub = g.RetrievalStub(grpc.insecure_channel(sys.argv[1]))\n"
        "v = stub.BeginIndex(pb.BeginIndexRequest(description='killed mid-stream'), timeout=10).version\n"
        "src = iter([pb.UploadSourceRequest(version=v, data=b'%PDF-1.7 source', last=True)])\n"
        "stub.UploadSource(src, timeout=30)\n"
        "chunk = pb.Chunk(id='c1', doc_type='recommendation', text='Refer dysphagia.', page=9)\n"
        "def parts():\n"
        "    yield pb.UploadChunksRequest(version=v, chunks=[chunk])\n"
        "    time.sleep(1.0)\n"  # the first message has reached retrieval: now say so, and hang
        "    print(v, flush=True)\n"
        "    time.sleep(600)\n"
        "    yield pb.UploadChunksRequest(version=v, last=True)\n"
        "stub.UploadChunks(parts(), timeout=900)\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [sys.executable, str(script), retrieval_server.addr]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None
        version = proc.stdout.readline().decode().strip()
        assert version, "the upload client did not start its stream"
        record = _status(stub, version)
        assert record is not None and record.status == "building", record
        assert (retrieval_server.chroma_dir / "versions" / version).is_dir()  # its source PDF
        assert f"ng12-chunks-{version}" in chroma_collections(retrieval_server.chroma_dir)
        killed = time.monotonic()
        proc.kill()
        proc.wait(10)
        record = _failed_within(stub, version, 10)
        took = time.monotonic() - killed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert record is not None and record.status == "failed", record
    assert "cut off" in record.error or "cancelled" in record.error, record.error
    assert took < 10, f"the build was failed {took:.1f} s after its client died"
    _assert_data_gone(retrieval_server, version)
    assert stub.GetActiveIndex(pb.GetActiveIndexRequest(), timeout=10).version == active
