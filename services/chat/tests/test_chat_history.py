"""The Redis history store on a real Redis: order, cap, TTL, atomic pairs, outage."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis

from chat.history import HistoryStore, HistoryUnavailable, now_rfc3339
from ng12_common.models import ChatTurn, Citation
from ng12_common.redis_client import make_redis
from tests.support import free_port


def _pair(n: int) -> tuple[ChatTurn, ChatTurn]:
    cite = Citation(recommendation_id="1.1.1", section="1.1", page=9, chunk_id=f"c{n}", excerpt="verbatim")
    return (
        ChatTurn(role="user", content=f"q{n}", at=now_rfc3339()),
        ChatTurn(
            role="assistant", content=f"a{n}", citations=[cite], grounding="sufficient", at=now_rfc3339()
        ),
    )


async def test_unknown_session_is_empty(history: HistoryStore) -> None:
    assert await history.get("nobody") == []


async def test_pairs_round_trip_in_order(history: HistoryStore) -> None:
    for n in range(2):
        await history.append_pair("s1", *_pair(n))
    turns = await history.get("s1")
    assert [(t.role, t.content) for t in turns] == [
        ("user", "q0"),
        ("assistant", "a0"),
        ("user", "q1"),
        ("assistant", "a1"),
    ]
    assert turns[1].citations[0].recommendation_id == "1.1.1" and turns[1].grounding == "sufficient"
    assert turns[0].at.endswith("Z")


async def test_cap_drops_oldest_pairs(history: HistoryStore) -> None:
    for n in range(5):  # max_turns=3 pairs
        await history.append_pair("s2", *_pair(n))
    turns = await history.get("s2")
    assert [t.content for t in turns] == ["q2", "a2", "q3", "a3", "q4", "a4"]


async def test_ttl_set_and_refreshed(history: HistoryStore, redis_url: str) -> None:
    raw = redis.Redis.from_url(redis_url)
    await history.append_pair("s3", *_pair(0))
    key = history.key("s3")
    assert 590 <= raw.ttl(key) <= 600
    raw.expire(key, 100)
    await history.append_pair("s3", *_pair(1))
    assert raw.ttl(key) > 500
    raw.close()


async def test_concurrent_writes_keep_pairs_together(history: HistoryStore) -> None:
    store = HistoryStore(
        history._redis, ttl_seconds=600, max_turns=100, key_prefix=history.key_prefix, location="test"
    )
    await asyncio.gather(*(store.append_pair("s4", *_pair(n)) for n in range(30)))
    turns = await store.get("s4")
    assert len(turns) == 60
    for user, assistant in zip(turns[::2], turns[1::2], strict=True):
        assert user.role == "user" and assistant.role == "assistant"
        assert user.content[1:] == assistant.content[1:]


async def test_delete(history: HistoryStore) -> None:
    await history.append_pair("s5", *_pair(0))
    assert await history.delete("s5") is True
    assert await history.get("s5") == []
    assert await history.delete("s5") is False


async def test_redis_down_is_history_unavailable_quickly() -> None:
    client = make_redis(f"redis://127.0.0.1:{free_port()}/0", timeout_seconds=1.0)
    store = HistoryStore(
        client, ttl_seconds=60, max_turns=5, key_prefix="test:down", location="127.0.0.1:closed"
    )
    start = time.perf_counter()
    with pytest.raises(HistoryUnavailable, match=r"Redis at 127\.0\.0\.1:closed"):
        await store.get("s")
    with pytest.raises(HistoryUnavailable):
        await store.append_pair("s", *_pair(0))
    assert time.perf_counter() - start < 3.0
    await client.aclose()
