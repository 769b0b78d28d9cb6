"""Settings base shared by every service: read from the environment, fail fast and clearly.

Each service declares ONE subclass of `ServiceSettings` with its own fields. Environment
variable names are the field names in upper case (no prefix), so `make run` and
deploy/docker-compose.yml can use the same keys (see deploy/stack_spec.py).
"""

from __future__ import annotations

import sys
from typing import Literal, TypeVar

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PLACEHOLDER_SECRETS = frozenset({"", "changeme", "change-me", "secret"})


class ServiceSettings(BaseSettings):
    """Fields every service has."""

    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False, validate_default=True)

    environment: Literal["development", "test", "production"] = "development"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    @model_validator(mode="after")
    def _refuse_placeholder_secrets(self) -> ServiceSettings:
        if self.environment == "production":
            for name in self.secret_fields():
                value = getattr(self, name)
                if value is None or str(value).strip().lower() in PLACEHOLDER_SECRETS:
                    raise ValueError(
                        f"{name.upper()} must be set to a real secret when ENVIRONMENT=production"
                    )
        return self

    @classmethod
    def secret_fields(cls) -> tuple[str, ...]:
        """Names of fields that must not keep a placeholder value in production."""
        return ()


class HttpServiceSettings(ServiceSettings):
    """Fields of the FastAPI services (gateway, assessment, chat)."""

    host: str = "127.0.0.1"
    http_workers: int = Field(
        default=1,
        ge=1,
        le=32,
        description="uvicorn worker processes on the one port (CPU-bound services scale with cores)",
    )
    shutdown_drain_seconds: float = Field(
        default=1.0,
        ge=0,
        le=120,
        description="after SIGTERM, /readyz answers 503 this long before the server stops accepting",
    )


S = TypeVar("S", bound=ServiceSettings)


def describe_validation_error(exc: ValidationError) -> str:
    """One line per problem, naming the environment variable to fix."""
    lines = []
    for err in exc.errors():
        loc = "_".join(str(p) for p in err.get("loc", ()) if p != "__root__").upper()
        msg = err.get("msg", "invalid value")
        value = err.get("input")
        shown = "" if isinstance(value, dict) or value is None else f" (got {value!r})"
        lines.append(f"  {loc or '(settings)'}: {msg}{shown}")
    return "\n".join(lines)


def load_settings(cls: type[S], service: str) -> S:
    """Build the settings or stop the process with a message naming each bad variable."""
    try:
        return cls()
    except ValidationError as exc:
        sys.stderr.write(
            f"{service}: invalid configuration, fix these environment variables:\n"
            f"{describe_validation_error(exc)}\n"
        )
        raise SystemExit(2) from None
