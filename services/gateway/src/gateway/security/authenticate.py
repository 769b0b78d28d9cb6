"""FastAPI dependencies that authenticate the caller and enforce roles.

A request carries one of:
- `Authorization: Bearer <jwt>`: the gateway's own token (POST /api/v1/auth/token) or an OIDC
  token from the configured identity provider;
- `X-API-Key: ng12_...`: an integrator's API key.

No credentials, or credentials that fail verification: 401 with `WWW-Authenticate: Bearer`.
An OIDC token while the identity provider cannot be reached: 503 `identity_provider_unavailable`
(the token may be valid; retry); an API key while the gateway database is down: 503
`auth_unavailable`. Valid credentials without an allowed role: 403. The principal
is kept on `request.state` for the audit trail and the per-user rate limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

import jwt
from fastapi import Depends, HTTPException, Request, Security
from fastapi.security import APIKeyHeader, OAuth2PasswordBearer
from sqlalchemy.exc import SQLAlchemyError

from gateway.rate_limits import RateLimiter
from gateway.security.api_keys import ApiKeyStore
from gateway.security.oidc import IdentityProviderUnavailable, OidcVerifier
from gateway.security.principal import ADMIN_ROLES, CLINICAL_ROLES, Principal, Role
from gateway.security.tokens import TokenIssuer
from ng12_common.logs import get_logger

log = get_logger("gateway.authenticate")
TOKEN_URL = "/api/v1/auth/token"
API_KEY_HEADER = "X-API-Key"
_bearer = OAuth2PasswordBearer(
    tokenUrl=TOKEN_URL, auto_error=False, description="Sign in with a local account."
)
_api_key = APIKeyHeader(name=API_KEY_HEADER, auto_error=False, description="An integrator's API key.")


@dataclass
class Authenticator:
    tokens: TokenIssuer
    api_keys: ApiKeyStore
    oidc: OidcVerifier | None


def _unauthorized(code: str, message: str) -> HTTPException:
    return HTTPException(
        status_code=401,
        detail={"code": code, "message": message},
        headers={"WWW-Authenticate": 'Bearer realm="ng12-assessor"'},
    )


async def _from_bearer(auth: Authenticator, token: str) -> Principal:
    try:
        if auth.tokens.is_ours(token) or auth.oidc is None:
            return auth.tokens.verify(token)
        return await asyncio.to_thread(auth.oidc.verify, token)
    except IdentityProviderUnavailable as exc:
        raise _cannot_check("identity_provider_unavailable", f"Sign-in cannot be checked: {exc}.") from None
    except jwt.ExpiredSignatureError:
        raise _unauthorized(
            "token_expired", f"The access token has expired; sign in again ({TOKEN_URL})."
        ) from None
    except (jwt.PyJWTError, ValueError, OSError) as exc:
        raise _unauthorized(
            "token_invalid",
            f"The access token is not valid ({type(exc).__name__}); sign in again ({TOKEN_URL}).",
        ) from None


def _cannot_check(code: str, what: str) -> HTTPException:
    """503: the credentials could not be checked (a dependency is down), so the caller retries."""
    return HTTPException(
        status_code=503,
        detail={
            "code": code,
            "message": f"{what} Try again shortly; tell your administrator if it persists.",
        },
        headers={"Retry-After": "5"},
    )


async def current_principal(
    request: Request,
    token: Annotated[str | None, Security(_bearer)],
    api_key: Annotated[str | None, Security(_api_key)],
) -> Principal:
    auth: Authenticator = request.app.state.authenticator
    if token:
        principal = await _from_bearer(auth, token)
    elif api_key:
        try:
            found = await asyncio.to_thread(auth.api_keys.authenticate, api_key)
        except SQLAlchemyError as exc:
            log.warning("api_key_lookup_failed", error=type(exc).__name__)
            raise _cannot_check(
                "auth_unavailable",
                f"The {API_KEY_HEADER} cannot be checked: the gateway database is unavailable.",
            ) from None
        if found is None:
            raise _unauthorized("api_key_invalid", f"The {API_KEY_HEADER} is unknown or revoked.")
        principal = found
    else:
        raise _unauthorized(
            "not_authenticated",
            f"Sign in first: send 'Authorization: Bearer <token>' (get one from {TOKEN_URL}) "
            f"or an '{API_KEY_HEADER}' header.",
        )
    request.state.principal = principal
    return principal


def require_roles(allowed: frozenset[Role]) -> Callable[..., Awaitable[Principal]]:
    """Per-IP rate limit, authentication, the role check, then the per-user limit."""
    names = ", ".join(sorted(r.value for r in allowed))

    async def _check(
        request: Request,
        token: Annotated[str | None, Security(_bearer)],
        api_key: Annotated[str | None, Security(_api_key)],
    ) -> Principal:
        limiter: RateLimiter = request.app.state.rate_limiter
        await limiter.check_ip(request)
        principal = await current_principal(request, token, api_key)
        if not principal.has_any(allowed):
            raise HTTPException(
                status_code=403,
                detail={
                    "code": "forbidden",
                    "message": f"This route needs one of the roles: {names}; you have: "
                    f"{', '.join(sorted(r.value for r in principal.roles)) or 'none'}.",
                },
            )
        await limiter.check_user(principal.subject)
        return principal

    return _check


clinical_guard = require_roles(CLINICAL_ROLES)
admin_guard = require_roles(ADMIN_ROLES)


def _tighter(guard: Callable[..., Awaitable[Principal]], kind: str) -> Callable[..., Awaitable[Principal]]:
    """`guard`, then the per-user limit of `kind` (chat, ingestion). Depending on the same guard
    object as the router lets FastAPI run it once per request."""

    # A default, not Annotated[...]: with postponed annotations FastAPI could not see the local `guard`.
    async def _check(request: Request, principal: Principal = Depends(guard)) -> Principal:  # noqa: B008
        await request.app.state.rate_limiter.check_kind(principal.subject, kind)
        return principal

    return _check


Clinical = Annotated[Principal, Depends(clinical_guard)]
ClinicalChat = Annotated[Principal, Depends(_tighter(clinical_guard, "chat"))]
Admin = Annotated[Principal, Depends(admin_guard)]
AdminIngestion = Annotated[Principal, Depends(_tighter(admin_guard, "ingestion"))]
