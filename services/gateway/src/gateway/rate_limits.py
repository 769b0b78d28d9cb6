"""Rate limits per user and per client IP, shared by every gateway replica through Redis.

The `limits` library (moving-window counters in Redis) enforces, on each API request:
- per IP: RATE_LIMIT_IP over all routes (including sign-in attempts before anyone is known);
- per user: RATE_LIMIT_USER over all routes;
- tighter per-user limits on chat (RATE_LIMIT_CHAT) and ingestion (RATE_LIMIT_INGESTION), and a
  per-IP limit on sign-in (RATE_LIMIT_SIGNIN) against password guessing.
Over a limit: 429 `rate_limited` with `Retry-After` (seconds until the window frees a slot).
If Redis cannot be reached the limit is not enforced for that request and a warning is logged:
assessments do not need Redis, and a GP's assessment must not fail because the limiter's store
is down (the routes that do need Redis answer 503 themselves).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from fastapi import HTTPException, Request
from limits import RateLimitItem, parse
from limits.aio.storage import RedisStorage
from limits.aio.strategies import MovingWindowRateLimiter

from gateway.audit.recorder import client_ip
from ng12_common.logs import get_logger

log = get_logger("gateway.rate_limits")


@dataclass(frozen=True)
class Limits:
    user: RateLimitItem
    ip: RateLimitItem
    chat: RateLimitItem
    ingestion: RateLimitItem
    signin: RateLimitItem


class RateLimiter:
    def __init__(self, redis_url: str, prefix: str, limits: Limits, trusted_hops: int) -> None:
        url = redis_url.replace("redis://", "async+redis://", 1).replace("rediss://", "async+rediss://", 1)
        self._storage = RedisStorage(url, implementation="redispy", key_prefix=prefix, wrap_exceptions=True)
        self._limiter = MovingWindowRateLimiter(self._storage)
        self.limits = limits
        self.trusted_hops = trusted_hops

    @classmethod
    def from_strings(
        cls,
        redis_url: str,
        prefix: str,
        trusted_hops: int,
        *,
        user: str,
        ip: str,
        chat: str,
        ingestion: str,
        signin: str,
    ) -> RateLimiter:
        return cls(
            redis_url,
            prefix,
            Limits(parse(user), parse(ip), parse(chat), parse(ingestion), parse(signin)),
            trusted_hops,
        )

    async def _hit(self, item: RateLimitItem, scope: str, identity: str) -> None:
        try:
            allowed = await self._limiter.hit(item, scope, identity)
            if allowed:
                return
            stats = await self._limiter.get_window_stats(item, scope, identity)
        except Exception as exc:  # noqa: BLE001 - limits wraps storage errors; fail open, loudly
            log.warning("rate_limit_store_unavailable", scope=scope, error=type(exc).__name__)
            return
        retry = max(1, math.ceil(stats.reset_time - time.time()))
        raise HTTPException(
            status_code=429,
            detail={
                "code": "rate_limited",
                "message": f"Too many requests ({scope}: {item}); try again in {retry} s.",
            },
            headers={"Retry-After": str(retry)},
        )

    async def check_ip(self, request: Request, signin: bool = False) -> None:
        ip = client_ip(request, self.trusted_hops) or "unknown"
        await self._hit(self.limits.ip, "ip", ip)
        if signin:
            await self._hit(self.limits.signin, "signin", ip)

    async def check_user(self, subject: str) -> None:
        await self._hit(self.limits.user, "user", subject)

    async def check_kind(self, subject: str, kind: str) -> None:
        """The tighter per-user limit of chat or ingestion."""
        item = {"chat": self.limits.chat, "ingestion": self.limits.ingestion}[kind]
        await self._hit(item, kind, subject)
