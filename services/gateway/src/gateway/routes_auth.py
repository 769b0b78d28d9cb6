"""Sign-in with a local account: POST /api/v1/auth/token (OAuth2 password form) -> a short-lived JWT.

Every attempt, successful or not, is audited (kind `signin`, the username as actor, never the
password) and counted against the per-IP sign-in limit. `GET /api/v1/auth/me` says who the
token belongs to and its roles (the UI shows it; integrators check their key).
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.security import OAuth2PasswordRequestForm
from pydantic import BaseModel

from gateway.deps import Audit
from gateway.rate_limits import RateLimiter
from gateway.security.authenticate import Authenticator, Clinical
from gateway.security.local_accounts import LocalAccounts
from gateway.security.principal import Principal, Role
from ng12_common.models import ErrorResponse

router = APIRouter(prefix="/auth", tags=["auth"])


class TokenOut(BaseModel):
    access_token: str
    token_type: str = "bearer"
    expires_in: int


class Me(BaseModel):
    subject: str
    roles: list[Role]
    method: str


@router.post(
    "/token",
    response_model=TokenOut,
    responses={401: {"model": ErrorResponse}, 422: {"model": ErrorResponse}, 429: {"model": ErrorResponse}},
)
async def sign_in(
    request: Request, form: Annotated[OAuth2PasswordRequestForm, Depends()], audit: Audit
) -> TokenOut:
    limiter: RateLimiter = request.app.state.rate_limiter
    await limiter.check_ip(request, signin=True)
    accounts: LocalAccounts | None = request.app.state.local_accounts
    username = form.username[:64]
    if accounts is None:
        await audit.write(request, "signin", 401, actor=f"local:{username}", summary={"outcome": "disabled"})
        raise HTTPException(
            status_code=401,
            detail={
                "code": "local_accounts_disabled",
                "message": "Local accounts are disabled here; "
                "sign in with your organisation's identity provider.",
            },
            headers={"WWW-Authenticate": "Bearer"},
        )
    user = await asyncio.to_thread(accounts.verify, username, form.password[:1024])
    if user is None:
        await audit.write(request, "signin", 401, actor=f"local:{username}", summary={"outcome": "failed"})
        raise HTTPException(
            status_code=401,
            detail={"code": "invalid_credentials", "message": "Wrong username or password."},
            headers={"WWW-Authenticate": "Bearer"},
        )
    auth: Authenticator = request.app.state.authenticator
    principal = Principal(subject=f"local:{user.username}", roles=frozenset(user.roles), method="local")
    await audit.write(request, "signin", 200, principal=principal, summary={"outcome": "ok"})
    return TokenOut(
        access_token=auth.tokens.issue(user.username, user.roles), expires_in=auth.tokens.ttl_seconds
    )


@router.get("/me", response_model=Me, responses={401: {"model": ErrorResponse}})
async def me(user: Clinical) -> Me:
    return Me(subject=user.subject, roles=sorted(user.roles), method=user.method)
