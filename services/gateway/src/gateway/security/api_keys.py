"""API keys for integrators: `X-API-Key: ng12_<id>_<secret>`, scoped to roles, revocable.

Only the SHA-256 of a key is stored (the key is 256 random bits, so a fast hash is enough: there is
nothing to brute-force). The key itself is shown once, when an admin creates it. Lookups are
cached per process for `cache_seconds`: a revoked key stops working at once in the process that
revoked it (`forget_cached`) and within `cache_seconds` in every other worker process and replica.

Creating and revoking run on a given connection (`insert`, `revoke_on`): the admin routes commit
the change in the same transaction as its audit record.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from datetime import UTC, datetime

from pydantic import BaseModel
from sqlalchemy import Connection, Engine, insert, select, update

from gateway.database import api_keys
from gateway.security.principal import Principal, Role

PREFIX = "ng12_"


class ApiKeyInfo(BaseModel):
    key_id: str
    name: str
    roles: list[Role]
    created_by: str
    created_at: str
    revoked: bool = False
    revoked_at: str | None = None


class CreatedApiKey(ApiKeyInfo):
    api_key: str  # shown once


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ApiKeyStore:
    def __init__(self, engine: Engine, cache_seconds: float = 5.0) -> None:
        self._engine = engine
        self._cache: dict[str, tuple[float, Principal | None]] = {}
        self.cache_seconds = cache_seconds

    @staticmethod
    def new_key(name: str, roles: list[Role], created_by: str) -> CreatedApiKey:
        """A fresh key (not stored yet: `insert` it)."""
        key_id = secrets.token_hex(8)
        return CreatedApiKey(
            api_key=f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}",
            key_id=key_id,
            name=name,
            roles=roles,
            created_by=created_by,
            created_at=_now(),
        )

    @staticmethod
    def insert(conn: Connection, created: CreatedApiKey) -> None:
        """Store `created` (its hash only) on `conn`, inside the caller's transaction."""
        row = created.model_dump(mode="json", exclude={"api_key", "revoked_at"})
        conn.execute(insert(api_keys).values(**row, key_sha256=_digest(created.api_key)))

    def list(self) -> list[ApiKeyInfo]:
        with self._engine.connect() as conn:
            rows = conn.execute(select(api_keys).order_by(api_keys.c.created_at)).mappings().all()
        return [ApiKeyInfo.model_validate({k: v for k, v in r.items() if k != "key_sha256"}) for r in rows]

    def revoke_on(self, conn: Connection, key_id: str) -> bool:
        """Revoke on `conn` (the caller's transaction); False if no active key has this id. Call
        `forget_cached` once it is committed."""
        done = conn.execute(
            update(api_keys)
            .where(api_keys.c.key_id == key_id, api_keys.c.revoked.is_(False))
            .values(revoked=True, revoked_at=_now())
        )
        return bool(done.rowcount)

    def forget_cached(self) -> None:
        self._cache.clear()

    def authenticate(self, key: str) -> Principal | None:
        """The principal of a valid, unrevoked key, else None (blocking: run in a thread)."""
        if not key.startswith(PREFIX) or len(key) > 200:
            return None
        digest = _digest(key)
        cached = self._cache.get(digest)
        now = time.monotonic()
        if cached and now - cached[0] < self.cache_seconds:
            return cached[1]
        with self._engine.connect() as conn:
            row = (
                conn.execute(
                    select(api_keys).where(api_keys.c.key_sha256 == digest, api_keys.c.revoked.is_(False))
                )
                .mappings()
                .first()
            )
        principal = None
        if row is not None:
            roles = frozenset(Role(r) for r in row["roles"] if r in Role._value2member_map_)
            principal = Principal(subject=f"apikey:{row['key_id']}", roles=roles, method="api_key")
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[digest] = (now, principal)
        return principal
