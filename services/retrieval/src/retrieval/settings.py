"""Retrieval service settings (environment variables, see deploy/stack_spec.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from ng12_common.settings import ServiceSettings


class RetrievalSettings(ServiceSettings):
    grpc_host: str = "127.0.0.1"
    grpc_port: int = Field(default=50051, ge=1, le=65535)
    metrics_port: int = Field(default=9101, ge=0, le=65535)  # 0 disables the metrics listener
    retrieval_service_token: str = Field(
        default="", max_length=512, description="required by index-changing RPCs when set"
    )
    chroma_dir: Path = Path(
        "var/chroma"
    )  # the index directory: registry.json, versions/ and (embedded Chroma) chroma/; shared by replicas
    index_role: Literal["writer", "replica"] = Field(
        default="writer",
        description="writer: builds, activates, prunes (exactly one); replica: serves, follows the writer",
    )
    chroma_host: str = Field(default="", description="a Chroma server (`chroma run`); empty: embedded Chroma")
    chroma_port: int = Field(default=8000, ge=1, le=65535)
    chroma_connect_timeout_seconds: float = Field(default=60.0, ge=0)
    redis_url: str = Field(
        default="",
        description="Redis for index announcements (pub/sub); empty: replicas only poll the registry",
    )
    registry_poll_seconds: float = Field(
        default=5.0, gt=0, le=300, description="a replica re-reads the registry at least this often"
    )
    embedder: Literal["local", "vertex"] = "local"  # vertex: Vertex AI text embeddings (needs VERTEX_PROJECT)
    embedding_threads: int = Field(
        default=1, ge=1, le=64, description="ONNX Runtime threads of the local MiniLM model (EMBEDDER=local)"
    )
    grpc_reflection: bool = False
    shutdown_grace_seconds: float = Field(default=5.0, ge=0)
    query_cache_size: int = Field(default=2048, ge=0)
    search_cache_size: int = Field(
        default=1024, ge=0, description="Search responses kept per index version (0: off)"
    )
    keep_versions: int = Field(
        default=3, ge=2, description="index versions kept on disk (active and previous always; then newest)"
    )
    build_idle_timeout_seconds: float = Field(
        default=600.0, ge=5, description="a build nobody uploads to for this long is failed and removed"
    )
    index_cleanup_retry_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="how often the writer retries removing index data a full disk kept it from removing",
    )
    vertex_project: str | None = None
    vertex_location: str = "europe-west2"
    vertex_embedding_model: str = "text-embedding-005"
    vertex_embedding_dimension: int = Field(default=768, ge=1, le=3072)
    vertex_timeout_seconds: float = Field(default=30.0, gt=0)

    @classmethod
    def secret_fields(cls) -> tuple[str, ...]:
        # production never runs with the index-changing RPCs open (or unable to call them)
        return ("retrieval_service_token",)
