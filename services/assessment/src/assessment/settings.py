"""Assessment service configuration, read from the environment (see deploy/stack_spec.py)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from ng12_common.settings import HttpServiceSettings


class AssessmentSettings(HttpServiceSettings):
    port: int = Field(default=8001, ge=1, le=65535)
    retrieval_addr: str = Field(
        min_length=3, description="host:port of retrieval (or of its replicas, comma-separated)"
    )
    patients_file: Path = Path("data/patients.json")
    retrieval_timeout_seconds: float = Field(default=3.0, gt=0, le=60)
    # Gemini on Vertex AI (google-genai). Off unless GEMINI_ENABLED and VERTEX_PROJECT are set;
    # it only writes the narrative and fetches the patient through a tool call, never decides.
    gemini_enabled: bool = False
    vertex_project: str = ""
    vertex_location: str = "europe-west2"
    gemini_model: str = "gemini-2.5-flash"
    llm_timeout_seconds: float = Field(default=8.0, gt=0, le=120)
