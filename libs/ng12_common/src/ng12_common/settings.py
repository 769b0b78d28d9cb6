"""Settings base shared by every service: read from the environment, fail fast and clearly.

Each service declares ONE subclass of `ServiceSettings` with its own fields. Environment
variable names are the field names in upper case (no prefix), so `make run` and
deploy/docker-compose.yml can use the same keys (see deploy/stack_spec.py). A configuration
error names each bad variable and never prints a secret (a secret field's value, a URL's password).
"""

from __future__ import annotations

import re
import sys
from typing import Literal, TypeVar, get_args

from pydantic import Field, SecretBytes, SecretStr, ValidationError, model_validator
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


#: A field whose name contains one of these holds a secret: its value is never echoed.
SECRET_NAME_PARTS = ("secret", "token", "password", "passwd", "key", "credential")
# scheme://user:password@ -> the password, up to the last "@" (a password may hold any character:
# masking too much is harmless, too little is not)
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*):.*@", re.DOTALL)


def _holds_secret_type(annotation: object) -> bool:
    """SecretStr / SecretBytes, also inside Optional[...] or Annotated[...]."""
    if annotation in (SecretStr, SecretBytes):
        return True
    return any(_holds_secret_type(arg) for arg in get_args(annotation))


def is_secret_field(name: str, cls: type[BaseSettings] | None = None) -> bool:
    """True for a field whose value must never be printed: a SecretStr/SecretBytes, one the
    settings class names in secret_fields(), or a name containing secret/token/password/key."""
    lowered = name.lower()
    if any(part in lowered for part in SECRET_NAME_PARTS):
        return True
    if cls is None:
        return False
    if issubclass(cls, ServiceSettings) and lowered in cls.secret_fields():
        return True
    field = cls.model_fields.get(lowered)
    return field is not None and _holds_secret_type(field.annotation)


def mask_url_credentials(text: str) -> str:
    """`postgres://ng12:S3CRET@db/ng12` -> `postgres://ng12:***@db/ng12` (every URL in `text`)."""
    return _URL_PASSWORD.sub(r"\g<head>:***@", text)


def describe_validation_error(exc: ValidationError, cls: type[BaseSettings] | None = None) -> str:
    """One line per problem, naming the environment variable to fix. The offending value is
    shown to help, except a secret's (see is_secret_field), and a URL's password is masked."""
    lines = []
    for err in exc.errors():
        names = [str(p) for p in err.get("loc", ()) if p != "__root__"]
        loc = "_".join(names).upper()
        msg = mask_url_credentials(str(err.get("msg", "invalid value")))
        value = err.get("input")
        if isinstance(value, dict) or value is None:
            shown = ""
        elif names and is_secret_field(names[0], cls):
            shown = " (value not shown: a secret)"
        else:
            masked = mask_url_credentials(value) if isinstance(value, str) else value
            shown = f" (got {mask_url_credentials(repr(masked))})"
        lines.append(f"  {loc or '(settings)'}: {msg}{shown}")
    return "\n".join(lines)


def load_settings(cls: type[S], service: str) -> S:
    """Build the settings or stop the process with a message naming each bad variable."""
    try:
        return cls()
    except ValidationError as exc:
        sys.stderr.write(
            f"{service}: invalid configuration, fix these environment variables:\n"
            f"{describe_validation_error(exc, cls)}\n"
        )
        raise SystemExit(2) from None
