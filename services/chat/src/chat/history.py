"""Chat history in Redis: one list of JSON turns per session, capped, expiring, written atomically.

Keys: `{prefix}:session:{session_id}:turns` (the turns) and `{prefix}:session:{session_id}:meta`
(the session topic and structured clinical state, JSON). Each exchange appends the user turn and
the assistant turn and writes the meta in one MULTI/EXEC transaction (all or nothing), trims to
the newest `max_turns` pairs and refreshes both TTLs. Redis failures become `HistoryUnavailable`
(503). Callers store redacted text only (see chat.redaction).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from redis.asyncio import Redis
from redis.exceptions import RedisError

from chat.clinical import ClinicalState
from ng12_common.logs import get_logger
from ng12_common.models import ChatTurn

log = get_logger("chat.history")


class HistoryUnavailable(Exception):
    """The session store cannot be reached; the message says which and what to do."""


class SessionMeta(BaseModel):
    topic: str | None = None
    state: ClinicalState = Field(default_factory=ClinicalState)


def now_rfc3339() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class HistoryStore:
    def __init__(
        self, redis: Redis, *, ttl_seconds: int, max_turns: int, key_prefix: str, location: str = "redis"
    ) -> None:
        self._redis = redis
        self.ttl_seconds = ttl_seconds
        self.max_turns = max_turns
        self.key_prefix = key_prefix
        self.location = location

    def key(self, session_id: str) -> str:
        return f"{self.key_prefix}:session:{session_id}:turns"

    def meta_key(self, session_id: str) -> str:
        return f"{self.key_prefix}:session:{session_id}:meta"

    async def get_meta(self, session_id: str) -> SessionMeta:
        try:
            raw: bytes | str | None = await self._redis.get(self.meta_key(session_id))
        except RedisError as exc:
            raise self._unavailable(exc) from None
        return self._meta(raw)

    def _meta(self, raw: bytes | str | None) -> SessionMeta:
        if raw:
            try:
                return SessionMeta.model_validate_json(raw)
            except ValidationError:
                log.warning("chat_meta_bad_skipped", key_prefix=self.key_prefix)
        return SessionMeta()

    def _unavailable(self, exc: RedisError) -> HistoryUnavailable:
        return HistoryUnavailable(
            f"The chat session store (Redis at {self.location}) is unavailable ({type(exc).__name__}). "
            "Chat history cannot be read or saved; try again shortly."
        )

    async def get(self, session_id: str) -> list[ChatTurn]:
        """The whole stored history, oldest first (the history endpoint)."""
        try:
            raw: list[bytes | str] = await self._redis.lrange(self.key(session_id), 0, -1)
        except RedisError as exc:
            raise self._unavailable(exc) from None
        return self._parse(raw)

    async def load(self, session_id: str, recent: int) -> tuple[list[ChatTurn], SessionMeta]:
        """What a new turn needs, in one round trip: the newest `recent` turns (oldest first)
        and the session meta. A turn never needs the whole history, so its cost does not grow
        with the conversation."""
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.lrange(self.key(session_id), -recent, -1)
                pipe.get(self.meta_key(session_id))
                raw_turns, raw_meta = await pipe.execute()
        except RedisError as exc:
            raise self._unavailable(exc) from None
        return self._parse(raw_turns), self._meta(raw_meta)

    async def load_meta(self, session_id: str) -> tuple[int, SessionMeta]:
        """How many turns the session has, and its meta, in one round trip (a turn without an
        LLM rewriter needs no earlier turn's text)."""
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.llen(self.key(session_id))
                pipe.get(self.meta_key(session_id))
                count, raw_meta = await pipe.execute()
        except RedisError as exc:
            raise self._unavailable(exc) from None
        return int(count), self._meta(raw_meta)

    def _parse(self, raw: list[bytes | str]) -> list[ChatTurn]:
        turns: list[ChatTurn] = []
        for item in raw:
            try:
                turns.append(ChatTurn.model_validate_json(item))
            except ValidationError:
                log.warning("chat_history_bad_turn_skipped", key_prefix=self.key_prefix)
        return turns

    async def append_pair(
        self, session_id: str, user: ChatTurn, assistant: ChatTurn, meta: SessionMeta | None = None
    ) -> None:
        key = self.key(session_id)
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.rpush(key, user.model_dump_json(), assistant.model_dump_json())
                pipe.ltrim(key, -2 * self.max_turns, -1)
                pipe.expire(key, self.ttl_seconds)
                if meta is not None:
                    pipe.set(self.meta_key(session_id), meta.model_dump_json(), ex=self.ttl_seconds)
                else:
                    pipe.expire(self.meta_key(session_id), self.ttl_seconds)
                await pipe.execute()
        except RedisError as exc:
            raise self._unavailable(exc) from None

    async def delete(self, session_id: str) -> bool:
        try:
            removed: int = await self._redis.delete(self.key(session_id), self.meta_key(session_id))
        except RedisError as exc:
            raise self._unavailable(exc) from None
        return removed > 0

    async def ping(self) -> None:
        try:
            await self._redis.ping()
        except RedisError as exc:
            raise self._unavailable(exc) from None

    async def memory_info(self) -> Mapping[str, Any]:
        """Redis `INFO memory` (used_memory, maxmemory, ...) for the Redis-memory metric."""
        try:
            return await self._redis.info("memory")
        except RedisError as exc:
            raise self._unavailable(exc) from None
