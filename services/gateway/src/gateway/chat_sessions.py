"""Chat sessions belong to the user who created them.

`POST /api/v1/chat/sessions` creates a session with a 128-bit random id (32 hex characters) bound to
the caller's subject. Every later use of the id (chat, history, delete) must come from the same
subject; anyone else, and any id the server did not create, gets 404, so ids cannot be guessed
or probed. Ownership lives in Redis next to the chat memory, with the same lifetime.

Keys: `{prefix}:session:{id}` (hash: owner, created_at) and `{prefix}:owner:{sha256(subject)}`
(sorted set of the owner's session ids by creation time).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from datetime import UTC, datetime

from pydantic import BaseModel
from redis.asyncio import Redis

SESSION_ID_LENGTH = 32


class ChatSessionOut(BaseModel):
    session_id: str
    created_at: str


class ChatSessionList(BaseModel):
    sessions: list[ChatSessionOut]


class ChatSessions:
    def __init__(self, redis: Redis, prefix: str, ttl_seconds: int, max_per_user: int = 500) -> None:
        self._redis = redis
        self._prefix = prefix
        self._ttl = ttl_seconds
        self._max = max_per_user

    def _key(self, session_id: str) -> str:
        return f"{self._prefix}:session:{session_id}"

    def _owner_key(self, subject: str) -> str:
        return f"{self._prefix}:owner:{hashlib.sha256(subject.encode()).hexdigest()}"

    @staticmethod
    def new_session() -> ChatSessionOut:
        """A fresh session id and creation time (not stored yet: `store` it)."""
        return ChatSessionOut(
            session_id=secrets.token_hex(SESSION_ID_LENGTH // 2),
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )

    async def store(self, session: ChatSessionOut, subject: str) -> None:
        """Bind `session` to `subject` (one MULTI/EXEC transaction)."""
        session_id, created = session.session_id, session.created_at
        owner_key = self._owner_key(subject)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(self._key(session_id), mapping={"owner": subject, "created_at": created})
            pipe.expire(self._key(session_id), self._ttl)
            pipe.zadd(owner_key, {session_id: time.time()})
            pipe.zremrangebyscore(owner_key, "-inf", time.time() - self._ttl)
            pipe.zremrangebyrank(owner_key, 0, -self._max - 1)
            pipe.expire(owner_key, self._ttl)
            await pipe.execute()

    async def owned_by(self, session_id: str, subject: str) -> bool:
        """True if the session exists and belongs to `subject` (refreshes its lifetime)."""
        if len(session_id) != SESSION_ID_LENGTH:
            return False
        owner = await self._redis.hget(self._key(session_id), "owner")  # type: ignore[misc]
        if owner is None:
            return False
        value = owner.decode() if isinstance(owner, bytes) else str(owner)
        if not secrets.compare_digest(value, subject):
            return False
        await self._redis.expire(self._key(session_id), self._ttl)
        return True

    async def list(self, subject: str) -> ChatSessionList:
        raw_ids = await self._redis.zrevrange(self._owner_key(subject), 0, self._max - 1)
        ids = [raw.decode() if isinstance(raw, bytes) else str(raw) for raw in raw_ids]
        async with self._redis.pipeline(transaction=False) as pipe:  # one round trip for all
            for sid in ids:
                pipe.hget(self._key(sid), "created_at")
            created = await pipe.execute()
        return ChatSessionList(
            sessions=[
                ChatSessionOut(session_id=sid, created_at=c.decode() if isinstance(c, bytes) else str(c))
                for sid, c in zip(ids, created, strict=True)
                if c is not None  # expired with its history
            ]
        )

    async def forget(self, session_id: str, subject: str) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._key(session_id))
            pipe.zrem(self._owner_key(subject), session_id)
            await pipe.execute()
