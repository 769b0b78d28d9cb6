"""The admin guard: header X-Admin-Key must equal ADMIN_API_KEY (401 missing, 403 wrong).

Applied to the whole admin router (`dependencies=[Depends(require_admin)]`), never per route.
APIKeyHeader makes /docs offer an "Authorize" box for the key.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import HTTPException, Request, Security
from fastapi.security import APIKeyHeader

ADMIN_KEY_HEADER = "X-Admin-Key"
_admin_key = APIKeyHeader(name=ADMIN_KEY_HEADER, auto_error=False, description="The ADMIN_API_KEY.")


async def require_admin(request: Request, key: Annotated[str | None, Security(_admin_key)]) -> None:
    if not key:
        raise HTTPException(
            status_code=401,
            detail={
                "code": "admin_key_missing",
                "message": f"Admin routes need the {ADMIN_KEY_HEADER} header.",
            },
        )
    expected: str = request.app.state.settings.admin_api_key
    if not hmac.compare_digest(key.encode(), expected.encode()):
        raise HTTPException(
            status_code=403,
            detail={
                "code": "admin_key_invalid",
                "message": f"The {ADMIN_KEY_HEADER} header is not the admin key.",
            },
        )
