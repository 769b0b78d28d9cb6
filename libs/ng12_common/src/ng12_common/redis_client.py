"""One way to open Redis (redis.asyncio) for the HTTP services: short timeouts, bounded retries.

The library's defaults (5 s socket timeouts, 10 retries) would make "Redis is down" take many
seconds to report; callers want a quick, clear 503 instead. `redis_location` names the server
for error messages without leaking a password from the URL.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff


def make_redis(url: str, timeout_seconds: float = 2.0, retries: int = 1) -> Redis:
    return Redis.from_url(
        url,
        socket_connect_timeout=timeout_seconds,
        socket_timeout=timeout_seconds,
        retry=Retry(ExponentialBackoff(cap=0.25, base=0.05), retries),
        decode_responses=True,
    )


def redis_location(url: str) -> str:
    """host:port/db of a redis:// URL, without credentials."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = parts.port or 6379
    db = parts.path.lstrip("/") or "0"
    return f"{host}:{port}/{db}"
