"""Fixtures of the chat tests: real Redis (a test DB, a unique key prefix per test), retrieval up or down."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from chat.app import create_app
from chat.history import HistoryStore
from chat.settings import ChatSettings
from ng12_common.redis_client import make_redis
from tests.support import free_port


@pytest.fixture
def key_prefix(redis_url: str) -> Iterator[str]:
    """A prefix no other test uses; its keys (and only they) are deleted afterwards."""
    prefix = f"test:chat:{uuid.uuid4().hex}"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(match=f"{prefix}:*"):
        client.delete(key)
    client.close()


@pytest.fixture
async def history(redis_url: str, key_prefix: str) -> AsyncIterator[HistoryStore]:
    client = make_redis(redis_url)
    yield HistoryStore(client, ttl_seconds=600, max_turns=3, key_prefix=key_prefix, location="test")
    await client.aclose()


@pytest.fixture
def make_client(redis_url: str, key_prefix: str) -> Callable[..., TestClient]:
    def _make(
        retrieval_addr: str | None = None,
        redis_url_override: str | None = None,
        genai_client: object | None = None,
        **overrides: object,
    ) -> TestClient:
        settings = ChatSettings(
            redis_url=redis_url_override or redis_url,
            retrieval_addr=retrieval_addr or f"127.0.0.1:{free_port()}",
            chat_key_prefix=key_prefix,
            chat_history_ttl_seconds=600,
            chat_max_turns=5,
            retrieval_timeout_seconds=2.0,
            environment="test",
        ).model_copy(update=overrides)
        return TestClient(create_app(settings, genai_client=genai_client), raise_server_exceptions=False)

    return _make


@pytest.fixture
def offline_client(make_client: Callable[..., TestClient]) -> Iterator[TestClient]:
    """Real Redis, retrieval on a closed port."""
    with make_client() as client:
        yield client


@pytest.fixture
def ready_client(make_client: Callable[..., TestClient], retrieval_addr: str) -> Iterator[TestClient]:
    """Chat on a real retrieval server, sent traffic only once ready (the scope classifier fitted)."""
    with make_client(retrieval_addr=retrieval_addr) as c:
        deadline = time.monotonic() + 120
        while c.get("/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
        yield c


def ask(client: TestClient, sid: str, message: str) -> dict[str, Any]:
    """One chat turn; the reply must be a 200."""
    reply = client.post("/chat", json={"session_id": sid, "message": message})
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def cited(body: dict[str, Any]) -> list[str]:
    return [str(c["recommendation_id"]) for c in body["citations"]]
