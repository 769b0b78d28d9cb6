"""The gateway's own access tokens: short-lived HS256 JWTs issued by POST /api/v1/auth/token.

PyJWT signs and verifies them; verification requires `exp`, `iat`, `sub`, the issuer and the
audience below, and accepts only HS256 (so a token with `alg: none` or another algorithm is
refused). The key is AUTH_JWT_SECRET, or, outside production, a random key created once in
AUTH_DIR/jwt-secret (mode 0600) so tokens survive a restart.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import jwt

from gateway.security.principal import Principal, Role

ISSUER = "ng12-assessor-gateway"
AUDIENCE = "ng12-assessor"
ALGORITHM = "HS256"
SECRET_FILE = "jwt-secret"


def load_or_create_secret(configured: str, auth_dir: Path) -> str:
    if configured:
        return configured
    auth_dir.mkdir(parents=True, exist_ok=True)
    path = auth_dir / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="utf-8").strip()
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(secrets.token_urlsafe(48))
    return path.read_text(encoding="utf-8").strip()


#: Verified tokens remembered per process (a client sends the same token with every request).
VERIFIED_CACHE_SIZE = 10_000


class TokenIssuer:
    def __init__(self, secret: str, ttl_seconds: int) -> None:
        self._secret = secret
        self.ttl_seconds = ttl_seconds
        # token -> (principal, valid from, valid until): tokens that passed `verify`. A token is
        # signed by this process's fixed key, so it verifies again exactly while the time is within
        # its iat/nbf and exp, which a cache hit checks; anything else is verified in full.
        self._verified: dict[str, tuple[Principal, float, float]] = {}

    def issue(self, subject: str, roles: list[Role], now: float | None = None) -> str:
        issued = int(time.time() if now is None else now)
        claims = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": subject,
            "roles": [r.value for r in roles],
            "iat": issued,
            "nbf": issued,
            "exp": issued + self.ttl_seconds,
            "jti": secrets.token_hex(8),
        }
        return jwt.encode(claims, self._secret, algorithm=ALGORITHM)

    def is_ours(self, token: str) -> bool:
        """True if the (unverified) token names this gateway as issuer."""
        if token in self._verified:  # verified earlier: its issuer is this gateway
            return True
        try:
            return jwt.decode(token, options={"verify_signature": False}).get("iss") == ISSUER
        except jwt.PyJWTError:
            return False

    def verify(self, token: str) -> Principal:
        """The principal of a valid token; raises jwt.PyJWTError otherwise."""
        cached = self._verified.get(token)
        if cached is not None:
            principal, valid_from, valid_until = cached
            if valid_from <= time.time() < valid_until:  # PyJWT's iat, nbf and exp checks (no leeway)
                return principal
        claims = jwt.decode(
            token,
            self._secret,
            algorithms=[ALGORITHM],
            audience=AUDIENCE,
            issuer=ISSUER,
            options={"require": ["exp", "iat", "sub", "iss", "aud"]},
        )
        roles = frozenset(Role(r) for r in claims.get("roles", []) if r in Role._value2member_map_)
        principal = Principal(subject=f"local:{claims['sub']}", roles=roles, method="local")
        valid_from = max(int(claims["iat"]), int(claims.get("nbf", claims["iat"])))
        if len(self._verified) >= VERIFIED_CACHE_SIZE:
            self._verified.clear()
        self._verified[token] = (principal, valid_from, int(claims["exp"]))
        return principal
