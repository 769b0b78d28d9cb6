"""The shared Redis factories against a real Redis, and against a server that never answers."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from ng12_common.redis_client import make_redis, make_sync_redis


def test_sync_client_talks_to_a_real_redis(redis_url: str) -> None:
    client = make_sync_redis(redis_url)
    key = f"test:redis-client:{uuid.uuid4().hex}"
    try:
        assert client.incr(key) == 1 and client.incr(key) == 2
    finally:
        client.delete(key)
        client.close()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A Redis URL whose server accepts connections and never answers (a hung Redis)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    listener.close()


def test_sync_client_gives_up_on_a_silent_server_within_its_timeout(silent_server: str) -> None:
    client = make_sync_redis(silent_server, timeout_seconds=0.5, retries=1)
    started = time.monotonic()
    with pytest.raises(redis.TimeoutError):
        client.ping()
    took = time.monotonic() - started
    assert took < 2.5, f"a silent Redis held the caller {took:.1f} s"  # two tries of 0.5 s and a backoff
    client.close()


def test_async_client_gives_up_on_a_silent_server_within_its_timeout(silent_server: str) -> None:
    async def ping() -> float:
        client = make_redis(silent_server, timeout_seconds=0.5, retries=1)
        started = time.monotonic()
        try:
            with pytest.raises(redis.TimeoutError):
                await client.ping()
            return time.monotonic() - started
        finally:
            await client.aclose()  # type: ignore[attr-defined]

    assert asyncio.run(ping()) < 2.5
