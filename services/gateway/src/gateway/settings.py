"""Gateway configuration, read from the environment (see deploy/stack_spec.py)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from ng12_common.settings import HttpServiceSettings


class GatewaySettings(HttpServiceSettings):
    port: int = Field(default=8000, ge=1, le=65535)
    assessment_url: str = Field(pattern=r"^https?://", description="base URL of the assessment service")
    chat_url: str = Field(pattern=r"^https?://", description="base URL of the chat service")
    retrieval_addr: str = Field(min_length=3, description="host:port of the retrieval gRPC service")
    redis_url: str = Field(pattern=r"^rediss?://", description="Celery broker and result backend")
    admin_api_key: str = Field(min_length=1, description="value expected in the X-Admin-Key header")
    frontend_dir: Path = Path("frontend")
    downstream_timeout_seconds: float = Field(default=10.0, gt=0, le=120)
    downstream_connect_timeout_seconds: float = Field(default=2.0, gt=0, le=30)
    retrieval_timeout_seconds: float = Field(default=3.0, gt=0, le=60)
    job_record_ttl_seconds: int = Field(default=7 * 86400, ge=3600)
    job_key_prefix: str = Field(default="ng12:jobs", pattern=r"^[A-Za-z0-9:_-]{1,64}$")
    ingestion_queue: str = Field(
        default="celery", pattern=r"^[A-Za-z0-9._:-]{1,64}$", description="Celery queue"
    )

    @classmethod
    def secret_fields(cls) -> tuple[str, ...]:
        return ("admin_api_key",)
