"""Telling replicas that the served version changed: Redis pub/sub plus a registry re-check.

The writer publishes `{"active": "vN"}` on `INDEX_CHANNEL` after every activation or rollback
(after the registry names the new version). A replica wakes on that message and re-reads the
registry (serving.IndexManager.sync); it also re-reads it every REGISTRY_POLL_SECONDS and on every
(re)subscription, so a message lost while Redis was restarting, or no Redis at all, delays a
replica by at most one poll interval and never leaves it on the old version. The message carries
no state of its own: the registry file is the truth, the message only says "look now".
"""

from __future__ import annotations

import asyncio
import contextlib
import json

from redis.asyncio import Redis
from redis.exceptions import RedisError

from ng12_common.logs import get_logger
from ng12_common.redis_client import make_redis, redis_location
from retrieval.serving import IndexManager, ServingIndex

INDEX_CHANNEL = "ng12:retrieval:index"
log = get_logger("retrieval.replication")


class IndexAnnouncer:
    """The writer's side: publish the served version after each swap (an IndexManager listener)."""

    def __init__(self, redis_url: str, channel: str = INDEX_CHANNEL) -> None:
        self.channel = channel
        self.location = redis_location(redis_url)
        self._redis: Redis = make_redis(redis_url)

    async def __call__(self, serving: ServingIndex | None) -> None:
        if serving is None:
            return
        try:
            receivers = await self._redis.publish(self.channel, json.dumps({"active": serving.version}))
            log.info("index_announced", version=serving.version, replicas_listening=receivers)
        except (RedisError, OSError) as exc:  # replicas still see it at their next registry re-check
            log.warning(
                "index_announce_failed", version=serving.version, redis=self.location, error=repr(exc)
            )

    async def close(self) -> None:
        await self._redis.aclose()  # type: ignore[attr-defined]  # types-redis 4.x stubs predate aclose


async def _listen(redis_url: str, channel: str, wake: asyncio.Event) -> None:
    """Set `wake` on every announcement and after every (re)subscription; reconnect forever."""
    delay = 0.5
    while True:
        client = Redis.from_url(redis_url, socket_connect_timeout=2.0, decode_responses=True)
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(channel)
            wake.set()  # anything announced while we were not subscribed: look now
            delay = 0.5
            log.info("index_channel_subscribed", channel=channel, redis=redis_location(redis_url))
            while True:
                message = await pubsub.get_message(timeout=30.0)
                if message is not None and message.get("type") == "message":
                    wake.set()
        except (RedisError, OSError) as exc:
            log.warning("index_channel_lost", redis=redis_location(redis_url), error=repr(exc))
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[attr-defined]
                await client.aclose()  # type: ignore[attr-defined]
        await asyncio.sleep(delay)
        delay = min(delay * 2, 10.0)


async def follow(
    index: IndexManager, redis_url: str, poll_seconds: float, channel: str = INDEX_CHANNEL
) -> None:
    """A replica's loop: sync with the registry on each announcement and every poll_seconds."""
    wake = asyncio.Event()
    listener = asyncio.create_task(_listen(redis_url, channel, wake)) if redis_url else None
    try:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=poll_seconds)
            wake.clear()
            try:
                await index.sync()
            except Exception as exc:  # noqa: BLE001 - keep following; the next tick tries again
                log.warning("index_sync_failed", error=repr(exc))
    finally:
        if listener is not None:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
