"""One way to open Redis: short timeouts, bounded retries.

`make_redis` (redis.asyncio) for the HTTP services, `make_sync_redis` (blocking redis-py) for the
ingestion worker's own calls (attempt counts, the bootstrap lock, the broker's memory). The
library's defaults (no socket timeout at all on a blocking client: a silent server hangs the
caller; 10 retries) would make "Redis is down" take long or forever to report; callers want a
quick, clear failure instead. `redis_location` names the server for error messages without
leaking a password from the URL.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import redis
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.retry import Retry as SyncRetry


def make_redis(url: str, timeout_seconds: float = 2.0, retries: int = 1) -> Redis:
    return Redis.from_url(
        url,
        socket_connect_timeout=timeout_seconds,
        socket_timeout=timeout_seconds,
        retry=Retry(ExponentialBackoff(cap=0.25, base=0.05), retries),
        decode_responses=True,
    )


def make_sync_redis(url: str, timeout_seconds: float = 2.0, retries: int = 1) -> redis.Redis:
    """A blocking client with the same timeouts and retries as `make_redis` (bytes replies)."""
    return redis.Redis.from_url(
        url,
        socket_connect_timeout=timeout_seconds,
        socket_timeout=timeout_seconds,
        retry=SyncRetry(ExponentialBackoff(cap=0.25, base=0.05), retries),
    )


def redis_location(url: str) -> str:
    """host:port/db of a redis:// URL, without credentials."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = parts.port or 6379
    db = parts.path.lstrip("/") or "0"
    return f"{host}:{port}/{db}"
