"""Gateway configuration, read from the environment (see deploy/stack_spec.py and docs/security.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode

from ng12_common.settings import HttpServiceSettings

RATE = r"^\d{1,9}\s*/\s*\d{0,4}\s*(second|minute|hour|day)s?$"


def _csv(value: object) -> object:
    """CORS_ALLOW_ORIGINS / OIDC_ALGORITHMS are comma-separated lists in the environment."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class GatewaySettings(HttpServiceSettings):
    port: int = Field(default=8000, ge=1, le=65535)
    metrics_port: int | None = Field(
        default=9100, ge=1, le=65535, description="private port of /metrics (never on the public port)"
    )
    assessment_url: str = Field(pattern=r"^https?://", description="base URL of the assessment service")
    chat_url: str = Field(pattern=r"^https?://", description="base URL of the chat service")
    retrieval_addr: str = Field(
        min_length=3, description="host:port of retrieval (or of its replicas, comma-separated)"
    )
    retrieval_writer_addr: str = Field(
        default="", description="the retrieval writer, for activate and roll back (empty: RETRIEVAL_ADDR)"
    )
    retrieval_service_token: str = Field(
        default="", max_length=512, description="sent to retrieval's index-changing RPCs (activate, rollback)"
    )
    redis_url: str = Field(pattern=r"^rediss?://", description="Celery broker and ingestion job records")
    session_redis_url: str = Field(
        default="",
        pattern=r"^(rediss?://.*)?$",
        description="chat sessions and rate limits; empty: REDIS_URL",
    )
    frontend_dir: Path = Path("frontend")
    downstream_timeout_seconds: float = Field(default=10.0, gt=0, le=120)
    downstream_connect_timeout_seconds: float = Field(default=2.0, gt=0, le=30)
    retrieval_timeout_seconds: float = Field(default=3.0, gt=0, le=60)
    job_record_ttl_seconds: int = Field(default=7 * 86400, ge=3600)
    job_key_prefix: str = Field(default="ng12:jobs", pattern=r"^[A-Za-z0-9:_-]{1,64}$")
    ingestion_queue: str = Field(
        default="celery", pattern=r"^[A-Za-z0-9._:-]{1,64}$", description="Celery queue"
    )
    upload_dir: Path = Field(
        default=Path("var/uploads"), description="uploaded PDFs for the worker (a volume both share)"
    )
    ingestion_running_ttl_seconds: int = Field(
        default=3 * 3600, ge=60, description="longest a job holds the one-ingestion-at-a-time claim"
    )

    # --- identity -------------------------------------------------------------------------------
    auth_dir: Path = Field(default=Path("var/auth"), description="local accounts and the token key")
    auth_jwt_secret: str = Field(
        default="",
        max_length=512,
        description="HS256 key of the gateway's own tokens; empty: generated once into AUTH_DIR",
    )
    auth_token_ttl_seconds: int = Field(default=900, ge=60, le=86400)
    auth_local_accounts: bool | None = Field(
        default=None, description="local accounts (var/auth/users.json); default on, except in production"
    )
    oidc_issuer: str = Field(default="", max_length=512, description="OIDC issuer; empty: no OIDC")
    oidc_audience: str = Field(default="", max_length=512)
    oidc_jwks_url: str = Field(
        default="", max_length=1024, description="default: from the discovery document"
    )
    oidc_algorithms: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["RS256", "ES256"])
    oidc_roles_claim: str = Field(
        default="roles", max_length=200, description="dotted path, e.g. realm_access.roles"
    )
    oidc_user_claim: str = Field(
        default="sub",
        max_length=100,
        description="the claim naming the user; `sub` (immutable) unless the provider guarantees another",
    )
    oidc_role_map: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict,
        description="JSON object: identity-provider role -> clinician|admin|service; empty: none",
    )
    session_key_prefix: str = Field(default="ng12:gw", pattern=r"^[A-Za-z0-9:_-]{1,64}$")
    session_ttl_seconds: int = Field(default=86400, ge=3600, description="as the chat history's TTL")

    # --- audit ------------------------------------------------------------------------------------
    gateway_database_url: str = Field(
        default="sqlite:///var/gateway/gateway.sqlite3",
        pattern=r"^(sqlite|postgresql(\+psycopg)?)://",
        description="audit trail and API keys: PostgreSQL in production, SQLite for make run",
    )
    audit_retention_days: int = Field(default=3650, ge=1, le=36500)

    # --- abuse limits and browser hardening --------------------------------------------------------
    rate_limit_user: str = Field(default="300/minute", pattern=RATE)
    rate_limit_ip: str = Field(default="600/minute", pattern=RATE)
    rate_limit_chat: str = Field(default="30/minute", pattern=RATE)
    rate_limit_ingestion: str = Field(default="10/hour", pattern=RATE)
    rate_limit_signin: str = Field(default="10/minute", pattern=RATE)
    rate_limit_prefix: str = Field(default="ng12:rl", pattern=r"^[A-Za-z0-9:_-]{1,64}$")
    trusted_proxy_hops: int = Field(
        default=0, ge=0, le=5, description="X-Forwarded-For entries added by trusted proxies in front"
    )
    max_body_bytes: int = Field(default=64 * 1024, ge=1024, le=16 * 1024 * 1024)
    max_upload_bytes: int = Field(default=50 * 1024 * 1024, ge=1024 * 1024, le=512 * 1024 * 1024)
    cors_allow_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)

    @field_validator("cors_allow_origins", "oidc_algorithms", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        return _csv(value)

    @field_validator("oidc_role_map", mode="before")
    @classmethod
    def _json_object(cls, value: object) -> object:
        """OIDC_ROLE_MAP is a JSON object in the environment; empty (compose's and Kubernetes'
        default) is none."""
        if isinstance(value, str):
            if not value.strip():
                return {}
            try:
                return json.loads(value)
            except ValueError:
                raise ValueError('must be a JSON object, e.g. {"NG12.Clinician": "clinician"}') from None
        return value

    @model_validator(mode="after")
    def _identity_configured(self) -> GatewaySettings:
        if self.environment == "production":
            if self.auth_local_accounts is None:
                self.auth_local_accounts = False
            if not self.oidc_issuer and not self.auth_local_accounts:
                raise ValueError(
                    "ENVIRONMENT=production needs OIDC_ISSUER (and OIDC_AUDIENCE), or local accounts "
                    "enabled explicitly with AUTH_LOCAL_ACCOUNTS=true"
                )
            if not self.auth_jwt_secret or len(self.auth_jwt_secret) < 32:
                raise ValueError("AUTH_JWT_SECRET must be at least 32 characters when ENVIRONMENT=production")
        elif self.auth_local_accounts is None:
            self.auth_local_accounts = True
        if self.oidc_issuer and not self.oidc_audience:
            raise ValueError("OIDC_AUDIENCE must be set with OIDC_ISSUER")
        bad = [a for a in self.oidc_algorithms if a not in ALLOWED_ALGORITHMS]
        if bad:
            raise ValueError(f"OIDC_ALGORITHMS: {bad} not allowed; choose from {sorted(ALLOWED_ALGORITHMS)}")
        return self

    @property
    def sessions_redis(self) -> str:
        return self.session_redis_url or self.redis_url

    @property
    def local_accounts_enabled(self) -> bool:
        return bool(self.auth_local_accounts)

    @classmethod
    def secret_fields(cls) -> tuple[str, ...]:
        return ("auth_jwt_secret", "retrieval_service_token")


ALLOWED_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}
)
