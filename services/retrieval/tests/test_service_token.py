"""Retrieval's index-changing RPCs need the service token (a real retrieval process); reads do not.
The two client-streaming uploads (UploadChunks, UploadSource) are checked as well as the unary
calls: the interceptor refuses them before reading a message."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from ng12.retrieval.v1 import retrieval_pb2 as pb
from ng12.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from ng12_common.grpc_utils import SERVICE_TOKEN_METADATA
from ng12_common.retrieval_client import RetrievalClient, RetrievalError
from tests.support import start_retrieval, stop_process

TOKEN = "svc-token-for-tests-0123456789"


def test_index_changes_need_the_token_reads_do_not(tmp_path: Path) -> None:
    proc, port, _metrics, _log = start_retrieval(tmp_path, extra_env={"RETRIEVAL_SERVICE_TOKEN": TOKEN})
    addr = f"127.0.0.1:{port}"

    async def scenario() -> None:
        anonymous = RetrievalClient(addr, timeout_seconds=10)
        holder = RetrievalClient(addr, timeout_seconds=10, service_token=TOKEN)
        wrong = RetrievalClient(addr, timeout_seconds=10, service_token="not-the-token")  # noqa: S106
        try:
            for client in (anonymous, wrong):
                with pytest.raises(RetrievalError) as refused:
                    await client.activate("v-none")
                assert refused.value.grpc_code == grpc.StatusCode.PERMISSION_DENIED
                with pytest.raises(RetrievalError) as refused:
                    await client.rollback()
                assert refused.value.grpc_code == grpc.StatusCode.PERMISSION_DENIED
            with pytest.raises(RetrievalError) as unknown:  # past the check: the version does not exist
                await holder.activate("v-none")
            assert unknown.value.grpc_code == grpc.StatusCode.NOT_FOUND
            listed = await anonymous.list_versions()  # reads stay open
            assert listed.active_version == ""
        finally:
            for client in (anonymous, holder, wrong):
                await client.close()

    try:
        asyncio.run(scenario())
        _streaming_uploads_need_the_token(addr)
    finally:
        stop_process(proc)  # type: ignore[arg-type]


def _streaming_uploads_need_the_token(addr: str) -> None:
    """UploadChunks and UploadSource without the token, or with a wrong one: PERMISSION_DENIED
    naming the RPC. With it: past the check (the build they name does not exist: NOT_FOUND)."""

    def chunks() -> list[pb.UploadChunksRequest]:
        return [pb.UploadChunksRequest(version="v-none", last=True)]

    def source() -> list[pb.UploadSourceRequest]:
        return [pb.UploadSourceRequest(version="v-none", data=b"%PDF-1.7", last=True)]

    with grpc.insecure_channel(addr) as channel:
        stub = pb_grpc.RetrievalStub(channel)
        calls = (("UploadChunks", stub.UploadChunks, chunks), ("UploadSource", stub.UploadSource, source))
        for name, call, messages in calls:
            for metadata in ((), ((SERVICE_TOKEN_METADATA, "not-the-token"),)):
                with pytest.raises(grpc.RpcError) as refused:
                    call(iter(messages()), timeout=10, metadata=metadata)
                assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED, (name, metadata)
                assert f"{name} needs the retrieval service token" in (refused.value.details() or "")
            with pytest.raises(grpc.RpcError) as unknown:
                call(iter(messages()), timeout=10, metadata=((SERVICE_TOKEN_METADATA, TOKEN),))
            assert unknown.value.code() == grpc.StatusCode.NOT_FOUND, (name, unknown.value.details())
