"""OIDC bearer tokens from the hospital's identity provider (Entra ID, NHS CIS2, Keycloak).

Verified with PyJWT against the provider's JWKS (PyJWKClient caches the keys and refetches on an
unknown `kid`): signature, issuer, audience, expiry and not-before, and the algorithm allow-list
(OIDC_ALGORITHMS; never `none` or HMAC, so a public key can't be used as an HMAC secret). Roles
come from a configurable claim (OIDC_ROLES_CLAIM, a dotted path such as `realm_access.roles`),
optionally renamed by OIDC_ROLE_MAP; a token without a known role authenticates but is refused
with 403 by every route.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import jwt

from gateway.security.principal import Principal, Role


def discover_jwks_url(issuer: str, timeout: float = 5.0) -> str:
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    with urllib.request.urlopen(url, timeout=timeout) as reply:  # noqa: S310 - configured issuer URL
        document: dict[str, Any] = json.load(reply)
    jwks_uri = document.get("jwks_uri")
    if not isinstance(jwks_uri, str) or not jwks_uri:
        raise ValueError(f"the OIDC discovery document at {url} has no jwks_uri")
    return jwks_uri


def _claim(claims: dict[str, Any], dotted: str) -> Any:
    value: Any = claims
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


class OidcVerifier:
    def __init__(
        self,
        issuer: str,
        audience: str,
        algorithms: list[str],
        roles_claim: str,
        user_claim: str,
        role_map: dict[str, str],
        jwks_url: str = "",
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self.algorithms = algorithms
        self.roles_claim = roles_claim
        self.user_claim = user_claim
        self.role_map = role_map
        self._jwks_url = jwks_url
        self._client: jwt.PyJWKClient | None = None

    def _keys(self) -> jwt.PyJWKClient:
        if self._client is None:
            url = self._jwks_url or discover_jwks_url(self.issuer)
            self._client = jwt.PyJWKClient(url, cache_keys=True, lifespan=300, timeout=5)
        return self._client

    def verify(self, token: str) -> Principal:
        """The principal of a valid token; raises jwt.PyJWTError otherwise (blocking: run in a thread)."""
        header = jwt.get_unverified_header(token)
        if header.get("alg") not in self.algorithms:
            raise jwt.InvalidAlgorithmError(f"algorithm {header.get('alg')!r} is not allowed")
        key = self._keys().get_signing_key_from_jwt(token)
        claims = jwt.decode(
            token,
            key.key,
            algorithms=self.algorithms,
            audience=self.audience,
            issuer=self.issuer,
            options={"require": ["exp", "iss", "aud", "sub"]},
            leeway=30,
        )
        raw = _claim(claims, self.roles_claim)
        names = [raw] if isinstance(raw, str) else [r for r in (raw or []) if isinstance(r, str)]
        roles = set()
        for name in names:
            mapped = self.role_map.get(name, name)
            if mapped in Role._value2member_map_:
                roles.add(Role(mapped))
        user = claims.get(self.user_claim) or claims["sub"]
        return Principal(subject=f"oidc:{str(user)[:240]}", roles=frozenset(roles), method="oidc")
