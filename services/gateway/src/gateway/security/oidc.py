"""OIDC bearer tokens from the hospital's identity provider (Entra ID, NHS CIS2, Keycloak).

Verified with PyJWT against the provider's JWKS (PyJWKClient caches the keys and refetches on an
unknown `kid`): signature, issuer, audience, expiry and not-before, and the algorithm allow-list
(OIDC_ALGORITHMS; never `none` or HMAC, so a public key can't be used as an HMAC secret). Roles
come from a configurable claim (OIDC_ROLES_CLAIM, a dotted path such as `realm_access.roles`),
optionally renamed by OIDC_ROLE_MAP; a token without a known role authenticates but is refused
with 403 by every route.

The user is the claim OIDC_USER_CLAIM, by default `sub`: the one identifier the provider never
reassigns (a `preferred_username` or e-mail can be changed or reused, and would then move one
person's audit trail and chat sessions to another). If the provider cannot be reached (discovery
document or JWKS), `verify` raises `IdentityProviderUnavailable` (the caller answers 503), not a
token error: the token may be fine.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import jwt

from gateway.security.principal import Principal, Role


class IdentityProviderUnavailable(Exception):
    """The identity provider's discovery document or keys cannot be fetched; says which URL."""


def discover_jwks_url(issuer: str, timeout: float = 5.0) -> str:
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:  # noqa: S310 - configured issuer URL
            document: dict[str, Any] = json.load(reply)
    except (OSError, ValueError) as exc:  # URLError, HTTPError, timeouts; a body that is not JSON
        raise IdentityProviderUnavailable(
            f"the identity provider's discovery document at {url} cannot be read ({type(exc).__name__})"
        ) from None
    jwks_uri = document.get("jwks_uri") if isinstance(document, dict) else None
    if not isinstance(jwks_uri, str) or not jwks_uri:
        raise IdentityProviderUnavailable(f"the OIDC discovery document at {url} has no jwks_uri")
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
        if self._client is None:  # discovery is retried on the next token until it succeeds
            url = self._jwks_url or discover_jwks_url(self.issuer)
            self._client = jwt.PyJWKClient(url, cache_keys=True, lifespan=300, timeout=5)
        return self._client

    def _signing_key(self, token: str) -> jwt.PyJWK:
        client = self._keys()
        try:
            return client.get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as exc:
            raise IdentityProviderUnavailable(
                f"the identity provider's keys at {client.uri} cannot be fetched ({exc.__class__.__name__})"
            ) from None

    def verify(self, token: str) -> Principal:
        """The principal of a valid token; raises jwt.PyJWTError if it is not one, or
        IdentityProviderUnavailable if the provider cannot be asked (blocking: run in a thread)."""
        header = jwt.get_unverified_header(token)
        if header.get("alg") not in self.algorithms:
            raise jwt.InvalidAlgorithmError(f"algorithm {header.get('alg')!r} is not allowed")
        key = self._signing_key(token)
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
