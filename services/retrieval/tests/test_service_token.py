"""Retrieval's index-changing RPCs need the service token (a real retrieval process); reads do not."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

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
    finally:
        stop_process(proc)  # type: ignore[arg-type]
