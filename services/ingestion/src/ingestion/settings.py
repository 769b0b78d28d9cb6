"""Ingestion worker settings (environment variables, see deploy/stack_spec.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from ng12_common.settings import ServiceSettings


class IngestionSettings(ServiceSettings):
    redis_url: str = "redis://127.0.0.1:6379/0"
    retrieval_addr: str = "127.0.0.1:50051"
    retrieval_service_token: str = Field(default="", max_length=512, description="for index-changing RPCs")
    metrics_port: int = Field(default=9102, ge=0, le=65535)
    ng12_pdf: Path = Path("data/ng12.pdf")
    kb_dir: Path = Path("var/kb")
    upload_dir: Path = Field(
        default=Path("var/uploads"), description="PDFs the gateway stored for a job (shared volume)"
    )
    ingestion_queue: str = Field(
        default="celery", pattern=r"^[A-Za-z0-9._:-]{1,64}$", description="Celery queue"
    )
    ingest_on_start: Literal["if_empty", "never"] = "if_empty"
    upload_batch_size: int = Field(default=64, ge=1, le=1000)
    retrieval_timeout_seconds: float = Field(default=600.0, gt=0)
    # Fault limits (docs/deploy.md, "Ingestion limits"): a job is tried at most 1 + max_retries
    # times (a retry after a transient retrieval error, or a redelivery after its worker died),
    # then FAILED with the reason.
    ingestion_max_retries: int = Field(default=3, ge=0, le=10)
    ingestion_retry_backoff_seconds: float = Field(default=30.0, ge=0, le=3600)
    ingestion_task_time_limit_seconds: float = Field(default=1800.0, gt=0, le=86400)
    # A job whose worker vanished is redelivered once it has been out this long past the time
    # limit (the broker's visibility timeout is the sum), so a running job is never handed out twice.
    ingestion_redelivery_margin_seconds: float = Field(default=600.0, ge=1, le=86400)
    ingestion_max_pdf_mb: float = Field(default=50.0, gt=0, le=1024)
    ingestion_max_pdf_pages: int = Field(default=400, ge=1, le=10000)
    ingestion_parse_timeout_seconds: float = Field(default=600.0, gt=0, le=86400)
    ingestion_parse_memory_mb: int = Field(default=1024, ge=64, le=65536)
    # Liveness: the worker rewrites this file every heartbeat_interval_seconds while its consumer
    # loop turns (and while a task within its time limit runs); the probe
    # `python -m ng12_common.healthcheck heartbeat FILE MAX_AGE` fails when it is older.
    heartbeat_file: Path = Path("var/ingestion/heartbeat")
    heartbeat_interval_seconds: float = Field(default=10.0, gt=0, le=300)

    @classmethod
    def secret_fields(cls) -> tuple[str, ...]:
        # production never runs with the index-changing RPCs open (or unable to call them)
        return ("retrieval_service_token",)
