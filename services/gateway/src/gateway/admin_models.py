"""Request and response models of the admin API (ingestion jobs, index versions)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class IngestionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pdf_path: str | None = Field(
        default=None, min_length=1, max_length=1024, description="PDF on the worker; default: its NG12_PDF."
    )
    activate: bool = Field(default=True, description="Activate the new index when it is complete and valid.")


class JobAccepted(BaseModel):
    job_id: str
    status: Literal["queued"] = "queued"


class JobStatus(BaseModel):
    job_id: str
    state: str  # Celery state: PENDING, STARTED, PROGRESS, SUCCESS, FAILURE, RETRY, REVOKED
    stage: str = ""
    progress: float | None = None  # 0..1 when the worker reports it
    result: Any = None
    error: str | None = None


class GuidelineInfoOut(BaseModel):
    title: str = ""
    code: str = ""
    published: str = ""
    last_updated: str = ""
    page_count: int = 0
    source_sha256: str = ""


class IndexVersionOut(BaseModel):
    version: str
    status: str
    guideline: GuidelineInfoOut = Field(default_factory=GuidelineInfoOut)
    embedder_id: str = ""
    embedding_dim: int = 0
    chunk_counts: dict[str, int] = Field(default_factory=dict)
    expected_counts: dict[str, int] = Field(default_factory=dict)
    recommendation_count: int = 0
    created_at: str = ""
    activated_at: str = ""
    error: str = ""
    description: str = ""


class IndexVersionList(BaseModel):
    active_version: str
    versions: list[IndexVersionOut]
