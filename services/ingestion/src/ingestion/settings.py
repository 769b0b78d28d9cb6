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
