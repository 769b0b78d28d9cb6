"""Who is calling: the authenticated principal and the roles of the product.

Roles (docs/security.md):
- `clinician`: assess, chat, search, patients, guideline viewer;
- `admin`: everything, including ingestion, indexes, API keys and the audit trail;
- `service`: machine-to-machine integrations (the clinical routes, no admin).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field


class Role(StrEnum):
    CLINICIAN = "clinician"
    ADMIN = "admin"
    SERVICE = "service"


AuthMethod = Literal["local", "oidc", "api_key"]

CLINICAL_ROLES = frozenset({Role.CLINICIAN, Role.ADMIN, Role.SERVICE})
ADMIN_ROLES = frozenset({Role.ADMIN})


class Principal(BaseModel):
    """An authenticated caller. `subject` is stable and unique per user (sessions are bound to it)."""

    subject: str = Field(min_length=1, max_length=256)
    roles: frozenset[Role]
    method: AuthMethod

    @property
    def role(self) -> str:
        """The highest role, for the audit record."""
        for role in (Role.ADMIN, Role.CLINICIAN, Role.SERVICE):
            if role in self.roles:
                return role.value
        return ""

    def has_any(self, allowed: frozenset[Role]) -> bool:
        return bool(self.roles & allowed)
