"""Assessment service configuration, read from the environment (see deploy/stack_spec.py)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from ng12_common.settings import ServiceSettings


class AssessmentSettings(ServiceSettings):
    host: str = "127.0.0.1"
    port: int = Field(default=8001, ge=1, le=65535)
    retrieval_addr: str = Field(min_length=3, description="host:port of the retrieval gRPC service")
    patients_file: Path = Path("data/patients.json")
    retrieval_timeout_seconds: float = Field(default=3.0, gt=0, le=60)
