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
    force: bool = Field(
        default=False, description="Build even when the PDF's sha256 is the active version's own."
    )


class JobAccepted(BaseModel):
    job_id: str
    status: Literal["queued"] = "queued"


class IngestionUnchanged(BaseModel):
    """The uploaded PDF is the one the active version was built from: nothing was queued."""

    status: Literal["unchanged"] = "unchanged"
    version: str
    sha256: str


class JobStatus(BaseModel):
    job_id: str
    state: str  # Celery state: PENDING, STARTED, PROGRESS, SUCCESS, FAILURE, RETRY, REVOKED
    stage: str = ""
    progress: float | None = None  # 0..1 when the worker reports it
    result: Any = None  # when done: the job report (version, status, counts, warnings, criteria)
    error: str | None = None
    created_at: str = ""
    filename: str | None = None  # of an uploaded PDF


class JobList(BaseModel):
    jobs: list[JobStatus]


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
    stale_criteria: list[str] = Field(
        default_factory=list, description="curated criteria pinned to text that changed (not used)"
    )
    unused_criteria: list[str] = Field(
        default_factory=list, description="curated entries matching no recommendation of this guideline"
    )
    has_source_pdf: bool = False
    source_filename: str = ""


class IndexVersionList(BaseModel):
    active_version: str
    versions: list[IndexVersionOut]
